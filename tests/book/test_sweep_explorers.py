"""tfx.book.sweep_explorers: every seed of a recorded grid cell, read from the records (no training)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tfx.book import sweep_explorers as se
from tfx.nn.config import ModelConfig, TrainConfig
from tfx.runs.experiment import Experiment
from tfx.runs.results import Record
from tfx.runs.train import History

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
CHANCE = 3.2


def _record(point: dict, seed: int, status: str = "ok", steps: int = 40, end: float = 0.5, lr: float = 1e-3,
            diverged_at: int = 0) -> Record:
    """A made-up record: the loss falls from chance to ``end`` (a diverged one stops at
    ``diverged_at`` with a non-finite loss, as the trainer records it)."""
    n = diverged_at or steps
    step = list(range(1, n + 1))
    loss = list(np.linspace(CHANCE, end, steps)[:n] + 0.01 * seed)
    if diverged_at:
        loss[-1] = math.inf
    h = History(status=status, steps_done=n, step=step, loss=loss, grad_norm=[1.0 + seed] * n,
                update_norm=list(np.geomspace(1.0, 0.1, n)), eval_step=[s for s in step if s % 10 == 0],
                eval_loss=[loss[s - 1] + 0.05 for s in step if s % 10 == 0], chance_loss=CHANCE,
                diverged_step=diverged_at)
    return Record(label=" · ".join(point.values()), config=ModelConfig(), train_config=TrainConfig(steps=steps, lr=lr),
                  seed=seed, code_version="abc123", device="cpu", wall_time=1.0, status=status, history=h,
                  profile="book", point=dict(point), finished_at="2026-11-23T08:00:00")


@pytest.fixture
def depth():
    """depth.toml's book grid, recorded for every architecture but the last one it declares
    (as when a new row is added to the file and not yet run); Post-LN at 6 layers: one seed
    diverged, one stuck."""
    exp = Experiment.load(EXPERIMENTS / "depth")
    archs = [name for name, _ in exp.grid("book")["architecture"]]
    recs = []
    for a in archs[:-1]:
        for d in ("2 layers", "6 layers"):
            for seed in (0, 1):
                if (a, d) == ("Post-LN", "6 layers"):
                    recs.append(_record({"architecture": a, "depth": d}, seed,
                                        *(("diverged", 40, 0.5, 1e-3, 17) if seed == 0 else ("stuck", 40, 3.19))))
                else:
                    recs.append(_record({"architecture": a, "depth": d}, seed, end=0.2 + 0.1 * len(a) / 10))
    return exp, archs, recs


def test_controls_are_the_experiment_grid_and_an_unrecorded_variant_says_so(depth):
    exp, archs, recs = depth
    e = se.depth_explorer(recs, exp, "book", default={"depth": "6 layers"})
    assert e.controls == {"architecture": archs, "depth": ["2 layers", "6 layers"]}
    assert e.default == {"architecture": archs[0], "depth": "6 layers"}
    missing = e.panels(architecture=archs[-1], depth="2 layers")  # declared, never recorded
    assert "not recorded yet" in missing[0].note and archs[-1] in missing[0].note
    assert not any(True for p in missing for _ in p.series())
    spec = e.spec()  # every state, the unrecorded ones included, renders
    assert len(spec["params"]) == 3 and "profile book" in spec["title"]["subtitle"]
    assert "device cpu" in spec["title"]["subtitle"]


def test_one_line_per_seed_equal_to_the_recorded_history(depth):
    exp, archs, recs = depth
    e = se.depth_explorer(recs, exp, "book")
    loss, val = e.panels(architecture="Pre-LN", depth="2 layers")
    cell = [r for r in recs if r.point == {"architecture": "Pre-LN", "depth": "2 layers"}]
    assert sorted(k for k in loss.lines if k.startswith("seed")) == ["seed 0", "seed 1"]
    for r in cell:
        xs, ys = loss.lines[f"seed {r.seed}"]
        np.testing.assert_array_equal(xs, r.history.step)
        np.testing.assert_array_equal(ys, r.history.loss)
        xs, ys = val.lines[f"seed {r.seed}"]
        np.testing.assert_array_equal(xs, r.history.eval_step)
        np.testing.assert_array_equal(ys, r.history.eval_loss)
    assert loss.lines["chance"][1] == [CHANCE, CHANCE]
    # the level of the one outcome rule, on the held-out panel: a quarter of the way to the floor (0)
    assert val.lines["learned at or below"][1] == [0.75 * CHANCE] * 2 and "learned at or below" not in loss.lines
    assert loss.note.splitlines() == [f"seed {r.seed}: learned, held-out loss {r.history.eval_loss[-1]:.2f}"
                                      for r in cell]


def test_a_diverged_run_is_marked_and_its_curve_ends(depth):
    exp, archs, recs = depth
    e = se.depth_explorer(recs, exp, "book")
    loss, _ = e.panels(architecture="Post-LN", depth="6 layers")
    stuck = next(r for r in recs if r.point == {"architecture": "Post-LN", "depth": "6 layers"} and r.seed == 1)
    assert loss.note.splitlines() == ["seed 0: diverged at step 17",
                                      f"seed 1: did not learn, held-out loss {stuck.history.eval_loss[-1]:.2f}"]
    xs, ys = loss.lines["seed 0"]
    assert np.isfinite(ys).sum() == 16 and not np.isfinite(ys[-1])
    drawn = [r for r in e.spec()["datasets"]["tfx"]  # what the HTML draws: the finite points only
             if r["p"] == 0 and r["m"] == "l" and r["g"] == 0
             and r["s"] == e.states().index({"architecture": "Post-LN", "depth": "6 layers"})]
    assert max(r["x"] for r in drawn) == 16


def test_warmup_explorer_has_four_panels_per_seed_and_long_histories_are_thinned():
    exp = Experiment.load(EXPERIMENTS / "warmup")
    grid = se.grid_axes(exp, "book")
    recs = [_record({"optimizer": o, "train.warmup": w}, seed, steps=1000)
            for o in grid["optimizer"] for w in grid["train.warmup"] for seed in (0, 1, 2)]
    e = se.warmup_explorer(recs, exp, "book", default={"optimizer": grid["optimizer"][1], "train.warmup": "warmup=0"})
    assert list(e.controls) == ["optimizer", "train.warmup"]
    panels = e.panels(**e.default)
    assert [p.title for p in panels] == [se.CURVES[c][0] for c in ("loss", "eval_loss", "update_norm", "grad_norm")]
    for p in panels:
        assert [k for k in p.lines if k.startswith("seed")] == ["seed 0", "seed 1", "seed 2"]
        assert len(p.note.splitlines()) == 3
    xs, ys = panels[0].lines["seed 2"]
    assert len(xs) <= se.MAX_POINTS and xs[0] == 1 and xs[-1] == 1000
    assert ys[-1] == pytest.approx(recs[2].history.loss[-1])
    assert panels[2].note.splitlines()[0] == "seed 0: step 1: 1, last: 0.1"


def test_stability_explorer_names_failed_runs_and_leaves_diverged_ones_off_the_axis():
    exp = Experiment.load(EXPERIMENTS / "stability-map")
    grid = se.grid_axes(exp, "book")
    lrs = {"lr=0.001": 1e-3, "lr=0.003": 3e-3, "lr=0.01": 1e-2}
    recs = []
    for a in grid["architecture"]:
        for b in grid["beta2"]:
            for name, lr in lrs.items():
                for seed in (0, 1):
                    p = {"architecture": a, "beta2": b, "train.lr": name}
                    if (a, name, seed) == ("Post-LN", "lr=0.01", 1):
                        recs.append(_record(p, seed, "diverged", lr=lr, diverged_at=9))
                    else:
                        recs.append(_record(p, seed, lr=lr))
    e = se.stability_explorer(recs, exp, "book", default={"train.lr": "lr=0.01"})
    final, curves = e.panels(**e.default)
    assert final.points["seed 0"][0] == [1e-3, 3e-3, 1e-2] and final.points["seed 1"][0] == [1e-3, 3e-3]
    assert final.note.splitlines() == ["did not learn or diverged: 1 of 6 runs", "lr=0.01: 1 diverged"]
    assert curves.note.splitlines()[1] == "seed 1: diverged at step 9"
    assert final.lines["chosen lr"][0] == [1e-2, 1e-2]


def test_bad_arguments_name_the_field(depth):
    exp, _, recs = depth
    with pytest.raises(ValueError, match="axes: 'width'"):
        se.grid_axes(exp, "book", ("architecture", "width"))
    with pytest.raises(ValueError, match="curves: 'bleu'"):
        se.grid_explorer(recs, {"depth": ["2 layers"]}, ("loss", "bleu"))
    with pytest.raises(ValueError, match="records"):
        se.depth_explorer([], exp, "book")


def test_lr_sensitivity_explorer_shows_every_architecture_and_the_chosen_seeds():
    exp = Experiment.load(EXPERIMENTS / "lr-sensitivity")
    grid = se.grid_axes(exp, "book")
    lrs = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
    recs = []
    for a in grid["architecture"]:
        for w in grid["warmup"]:
            for d in grid["depth"]:
                for k, lr in enumerate(lrs):
                    for seed in (0, 1):
                        p = {"architecture": a, "warmup": w, "depth": d, "train.lr": f"lr={lr:g}"}
                        if (a, k, seed) == ("Post-LN", 5, 0):
                            recs.append(_record(p, seed, "diverged", lr=lr, diverged_at=9))
                        else:
                            recs.append(_record(p, seed, lr=lr, end=0.3 + 0.1 * k + (a == "Post-LN") * 0.05 * k))
    e = se.lr_sensitivity_explorer(recs, exp, "book")
    assert list(e.controls) == ["depth", "warmup", "architecture"]
    left, right = e.panels(depth=grid["depth"][0], warmup=grid["warmup"][0], architecture="Post-LN")
    assert set(grid["architecture"]) <= set(left.lines) and left.xlog
    xs, ys = left.points["seed 0"]
    assert xs == lrs and math.isnan(ys[-1]) and "lr=0.03: 1 diverged" in left.note
    other = e.panels(depth=grid["depth"][0], warmup=grid["warmup"][0], architecture="Pre-LN")[0]
    pre0 = sorted((r for r in recs if r.point["architecture"] == "Pre-LN" and r.seed == 0
                   and r.point["depth"] == grid["depth"][0] and r.point["warmup"] == grid["warmup"][0]),
                  key=lambda r: r.train_config.lr)
    assert other.points["seed 0"][1] == [r.history.eval_loss[-1] for r in pre0]  # the highlight moves
    assert len(right.lines) == len(lrs) and "LR sensitivity per seed" in left.note


def test_logits_explorer_draws_the_probes_of_the_chosen_cell():
    """The probe curves reduce each probe row over modules (and heads): the largest logit of
    any layer, the lowest entropy of any head; the cell's control picks the runs."""
    exp = Experiment.load(EXPERIMENTS / "logits")
    grid = se.grid_axes(exp, "book")
    recs = []
    for f in grid["fix"]:
        for lr in grid["lr"]:
            for seed in (0, 1):
                r = _record({"fix": f, "lr": lr}, seed)
                grow = 100.0 if (f, lr) == ("no fix", grid["lr"][-1]) else 1.0
                r.history.probe_step = [1, 20, 40]
                r.history.attn_logit_max = [[3.0, 5.0], [4.0, 9.0 * grow], [2.0, 7.0 * grow]]
                r.history.attn_entropy = [[[2.0, 1.5], [1.0, 2.5]], [[0.5, 2.0], [1.0, 1.0]], [[2.0, 2.0], [0.2, 2.0]]]
                r.history.log_z = [7.0 + seed] * len(r.history.step)
                recs.append(r)
    e = se.logits_explorer(recs, exp, "book")
    assert list(e.controls) == ["fix", "lr"]
    loss, logit, entropy, log_z = e.panels(fix="no fix", lr=grid["lr"][-1])
    xs, ys = logit.lines["seed 0"]
    assert list(xs) == [1, 20, 40] and list(ys) == [5.0, 900.0, 700.0]
    assert list(entropy.lines["seed 1"][1]) == [1.0, 0.5, 0.2]
    assert list(log_z.lines["seed 1"][1])[:2] == [8.0, 8.0]
    calm = e.panels(fix="QK-norm", lr=grid["lr"][-1])[1]
    assert list(calm.lines["seed 0"][1]) == [5.0, 9.0, 7.0]


def test_lr_curves_reads_any_axis():
    """``axis`` picks which grid axis the curves are drawn per (a fix, not an architecture)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tfx.book.plot import FIX_COLORS, lr_curves

    recs = [_record({"fix": f, "lr": f"{lr:g}"}, seed, lr=lr, end=0.3 + k * (f == "no fix"))
            for f in ("no fix", "QK-norm") for k, lr in enumerate((1e-3, 1e-2, 1e-1)) for seed in (0, 1)]
    fig, ax = plt.subplots()
    lr_curves(ax, recs, ["no fix", "QK-norm"], axis="fix", colors=FIX_COLORS)
    medians = {line.get_label(): line for line in ax.get_lines() if line.get_label() in ("no fix", "QK-norm")}
    assert set(medians) == {"no fix", "QK-norm"}
    assert medians["no fix"].get_color() == FIX_COLORS["no fix"]
    assert medians["no fix"].get_ydata()[-1] > medians["QK-norm"].get_ydata()[-1]
    fig2, ax2 = plt.subplots()
    lr_curves(ax2, recs, ["no fix", "QK-norm"])  # by architecture: these records have none
    assert not [line for line in ax2.get_lines() if line.get_label() in ("no fix", "QK-norm")]
    plt.close("all")


def test_zoo_explorer_draws_each_seed_against_its_own_control_from_the_injection():
    """The spike zoo's explorer (chapter 21): a cell's left panel is each seed's loss minus the
    loss of the same seed left alone, from ``before`` steps ahead of the injection; its note
    reads what the guard did. A cause that does nothing draws zeros; one that adds 1 nat from
    the step after the injection draws 1 there, and its cost is 1."""
    exp = Experiment.load(EXPERIMENTS / "spike-zoo")
    at, steps = 20, 40
    recs = []
    for cause in ("none", "rate bump"):
        for guard in ("no guard", "clip 1.0"):
            for seed in (0, 1):
                r = _record({"cause": cause, "guard": guard, "lr": "1e-2"}, seed, steps=steps)
                r.train_config = TrainConfig(steps=steps, lr=1e-2, **(
                    {"inject": "lr-bump", "inject_step": at} if cause != "none" else {}))
                if cause != "none" and guard == "no guard":
                    r.history.loss = [v + (1.0 if t > at else 0.0) for t, v in zip(r.history.step, r.history.loss)]
                if guard == "clip 1.0":
                    r.history.steps_clipped = 3
                recs.append(r)
    e = se.zoo_explorer(recs, exp, "book", before=5, every=1)
    assert list(e.controls) == ["cause", "guard", "lr"]
    excess, norm = e.panels(cause="rate bump", guard="no guard", lr="1e-2")
    xs, ys = excess.lines["seed 1"]
    assert xs[0] == at - 5 and list(ys[:6]) == [0.0] * 6 and ys[6:] == pytest.approx([1.0] * (steps - at))
    assert "median cost +1.000" in excess.note and "recovered: 0 of 2" in excess.note
    assert list(norm.lines["seed 0"][1])[:2] == [1.0, 1.0]
    calm, _ = e.panels(cause="rate bump", guard="clip 1.0", lr="1e-2")
    assert set(calm.lines["seed 0"][1]) == {0.0} and "clipped 6 of" in calm.note
    missing = e.panels(cause="fresh moments", guard="no guard", lr="1e-2")[0]
    assert "not recorded yet" in missing.note


def test_schedule_explorer_draws_lr_at_and_each_control_changes_it():
    """Chapter 21's schedules explorer: each curve is tfx.nn.optim.lr_at's rate over the run;
    the warmup moves every schedule's start, the cooldown only WSD's, the run length the
    steps; the spent rate is the running sum of the drawn rate."""
    from tfx.nn.config import TrainConfig
    from tfx.nn.optim import lr_at

    e = se.schedule_explorer(None, steps=(100, 200), warmups=(0, 10), cooldowns=(0.1, 0.5))
    share, spent = e.panels(steps=100, warmup=10, cooldown=0.5)
    xs, ys = share.lines["WSD, linear cooldown"]
    tc = TrainConfig(lr=1.0, steps=100, warmup=10, schedule="wsd-linear", cooldown_fraction=0.5)
    assert list(ys) == [lr_at(int(t), tc) for t in xs] and xs[-1] == 100
    assert spent.lines["constant"][1][-1] == pytest.approx(sum(lr_at(t, TrainConfig(lr=1.0, steps=100, warmup=10))
                                                               for t in range(1, 101)))
    other_cooldown = e.panels(steps=100, warmup=10, cooldown=0.1)[0].lines
    assert list(other_cooldown["WSD, linear cooldown"][1]) != list(ys)
    assert list(other_cooldown["cosine to 10 %"][1]) == list(share.lines["cosine to 10 %"][1])
    no_warmup = e.panels(steps=100, warmup=0, cooldown=0.5)[0].lines
    assert no_warmup["constant"][1][0] == 1.0 and share.lines["constant"][1][0] == pytest.approx(0.1)
    assert e.panels(steps=200, warmup=10, cooldown=0.5)[0].lines["constant"][0][-1] == 200


def test_every_schedule_has_one_colour_on_every_figure():
    """A schedule looks the same on the explorer and the recorded sweep's figure: its colour
    comes from the one registry (tfx.book.plot.COLORS, under the trainer's schedule name)."""
    from tfx.book import optimiser_pages as pages
    from tfx.book.plot import COLORS
    from tfx.nn.config import SCHEDULES

    assert set(pages.SCHEDULE_NAMES.values()) <= set(SCHEDULES)
    assert pages.SCHEDULE_COLORS == {n: COLORS[k] for n, k in pages.SCHEDULE_NAMES.items()}
    assert len(set(pages.SCHEDULE_COLORS.values())) == len(pages.SCHEDULE_NAMES)
    e = se.schedule_explorer(None, steps=(100,), warmups=(10,), cooldowns=(0.2,))
    assert all(p.colors == pages.SCHEDULE_COLORS for p in e.panels(steps=100, warmup=10, cooldown=0.2))


def test_sweep_explorer_covers_the_grid_and_thins_the_training_loss():
    from tfx.runs import results

    recs = results.load("t-fixup", "book")
    if not recs:
        pytest.skip("no recorded t-fixup sweep in the book profile")
    exp = Experiment.load("t-fixup")
    e = se.sweep_explorer(recs, exp, "book", "scheme", default={"scheme": "T-Fixup", "lr": "1e-3"})
    assert list(e.controls) == ["scheme", "lr"]
    assert len(e.states()) == len(e.controls["scheme"]) * len(e.controls["lr"])
    loss, held_out = e.panels(scheme="T-Fixup", lr="1e-3")
    seeds = [k for k in loss.lines if k.startswith("seed")]
    assert len(seeds) == 5
    for k in seeds:
        xs, ys = loss.lines[k]
        assert len(xs) <= se.EXPLORER_POINTS and xs[-1] == 400  # the last step is kept
    assert len(se.sweep_explorer(recs, exp, "book", "scheme", points=400)
               .panels(scheme="T-Fixup", lr="1e-3")[0].lines["seed 0"][0]) > se.EXPLORER_POINTS
    assert held_out.lines["seed 0"][0][-1] == 400


def test_the_explorers_draw_the_levels_as_the_figures_do(depth):
    """Chance dotted and the learned level dash-dotted in the outcome's green (plot.LEVELS) on
    a recorded cell's panels; before, the explorers drew chance dashed where the figures dot it."""
    from tfx.book.plot import LEVELS

    exp, archs, recs = depth
    loss, val = se.depth_explorer(recs, exp, "book").panels(architecture="Pre-LN", depth="2 layers")
    assert (loss.styles["chance"], loss.colors["chance"]) == ("dotted", LEVELS["chance"]["color"])
    learned = LEVELS["learned"]["label"]
    assert (val.styles[learned], val.colors[learned]) == ("dashdot", LEVELS["learned"]["color"])
