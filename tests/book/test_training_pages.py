"""tfx.book.training_pages: the tables, sentences and figures of the training chapters."""
from __future__ import annotations

import math
from types import SimpleNamespace

import matplotlib
import pytest

matplotlib.use("Agg")

from tfx.book import evidence, notebook  # noqa: E402
from tfx.book import training_pages as pages  # noqa: E402
from tfx.runs.effects import paired  # noqa: E402
from tfx.runs.profiles import get_profile  # noqa: E402

P = get_profile("quick")
UP = paired({0: 1.0, 1: 2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # reproduces
MIXED = paired({0: 1.0, 1: -2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # unresolved
DOWN = paired({0: -1.0, 1: -2.0, 2: -1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # reversed


def _rec(seed, loss, **point):
    h = SimpleNamespace(chance_loss=6.0, floor_loss=0.0, eval_loss=[5.0, loss], eval_step=[50, 100],
                        bleu=[], status="finished", reason="", diverged_step=0, steps_done=100,
                        start_loss=6.0, loss=[6.0, loss], step=[1, 100])
    return SimpleNamespace(seed=seed, point=point, history=h, status="finished",
                           train_config=SimpleNamespace(lr=1e-3, steps=100),
                           config=SimpleNamespace(d_model=64, n_enc=2, n_dec=2))


def test_effects_sentence_reads_each_effect_and_can_drop_the_interval():
    s = pages.effects_sentence("Warmup:", [("it rose", UP), ("it fell", DOWN)])
    assert s.startswith("Warmup: it rose by +1.50 nats (95 % CI ")
    assert "as the paper predicts" in s and "the opposite of the paper" in s and s.endswith(".")
    short = pages.effects_sentence("Warmup:", [("it rose", UP)], interval=False)
    assert short == "Warmup: it rose by +1.50 nats (as the paper predicts)."
    with pytest.raises(ValueError, match="items"):
        pages.effects_sentence("x", [])


def test_glue_figure_closes_the_figure(monkeypatch):
    import matplotlib.pyplot as plt

    from tfx.book.plot import effects_figure

    fig = effects_figure(P, [("a", UP), ("b", DOWN)], title="t")
    glued = {}
    monkeypatch.setattr("tfx.book.notebook.glue",
                        lambda name, value, display=False: glued.setdefault(name, display))
    assert pages.glue_figure("fig-x", fig) == "fig-x" and glued == {"fig-x": False}
    assert not plt.fignum_exists(fig.number)


def test_first_steps_figure_shares_one_colour_scale():
    import numpy as np

    def fs(scale):
        h = np.zeros((4, 6))
        h[:, 1:4] = scale
        return SimpleNamespace(grad_hist=h, update_hist=h * 2, pooled_update_hist=h * 3,
                               steps=[1, 2, 3, 4], bins=np.linspace(-6, 0, 7))

    first = {("none", 0): fs(10.0), ("long", 0): fs(1.0)}
    fig = pages.first_steps_figure(P, first, ("none", "long"), 0)
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert len(images) == 6 and len({im.norm.vmax for im in images}) == 1
    assert len(fig.axes) == 7  # six maps and one colour bar


def test_long_runs_table_reads_the_evaluation_at_or_before_the_budget():
    """Chapter 12's slow-or-failed table: the held-out loss at the last evaluation at or before
    the budget (:func:`tfx.runs.curves.loss_at_step`), the median at the end, and the outcomes."""
    def run(seed, losses):
        r = _rec(seed, losses[-1], lr="3e-4")
        r.history.eval_step, r.history.eval_loss = [100, 400, 500, 1200], losses
        return r

    runs = [run(0, [5.0, 4.0, 3.5, 2.0]), run(1, [5.0, 3.0, 2.9, 1.0])]
    table = pages.long_runs_table({("Post-LN", "warmup"): runs}, 450).splitlines()
    assert "loss at step 450" in table[0]
    assert table[2].startswith("| Post-LN | warmup | 3e-4 | 3.50 | 1.50 |")


# ------------------------------------------------------------------ the "At GPU scale" verdicts
def _gpu_grid(best: dict, floor: dict, depths=("6",), seeds=5):
    """Loss = floor + |log10 lr − log10 best| per architecture on a 3-rate grid, a little per seed."""
    out = []
    for d in depths:
        for a in best:
            for lr in ("1e-4", "1e-3", "1e-2"):
                for s in range(seeds):
                    loss = floor[a] + abs(math.log10(float(lr)) - math.log10(best[a])) + 0.01 * s * (s % 2)
                    r = _rec(s, loss, arch=a, depth=d, lr=lr)
                    r.train_config = SimpleNamespace(lr=float(lr), steps=100)
                    out.append(r)
    return out


def _comparisons(monkeypatch):
    from tfx.book import evidence

    own = evidence.Comparison("AD-3", "A at its best rate ends higher than B at its own", "gpu", "arch",
                              "A", "B", "higher", {"depth": "6"}, own_rate=True)
    deep = evidence.Comparison("AD-3", "A ends higher than B at depth 12", "gpu", "arch", "A", "B",
                               "higher", {"depth": "12", "lr": "1e-3"})
    monkeypatch.setitem(evidence.BY_CLAIM, "AD-3", [own, deep])
    return own, deep


def test_translation_tables_bold_each_rows_best_rate_and_count_its_failed_seeds():
    from tfx.runs import effects, results

    trecs = results.load("translation", "book")
    lrs = sorted({r.point["lr"] for r in trecs}, key=float)
    loss, bleu = pages.translation_tables(trecs, lrs).split("\n\n**Greedy BLEU")
    for table in (loss, bleu):
        rows = [line for line in table.splitlines() if line.startswith("| ") and "architecture" not in line]
        assert len(rows) == 6  # three architectures × two warmups
        for line in rows:
            a, w, *cells = [c.strip() for c in line.strip("|").split("|")]
            best = effects.best_rate(trecs, architecture=a, warmup=w).variant
            assert [c.startswith("**") for c in cells] == [lr == best for lr in lrs], line
            for lr, c in zip(lrs, cells):
                rs = results.select(trecs, architecture=a, warmup=w, lr=lr)
                failed = sum(r.outcome.verdict in ("did not learn", "diverged") for r in rs)
                assert (f"({failed} of {len(rs)} failed)" in c) == bool(failed), c
    mean = sum(effects.end_loss(r) for r in results.select(trecs, architecture="Pre-LN", warmup="none", lr=lrs[0])) / 5
    assert f"| Pre-LN | none | {mean:.2f}" in loss or f"| Pre-LN | none | **{mean:.2f}**" in loss


def test_failed_rates_counts_only_the_outcome_rules_failures_highest_rate_first():
    """'Fails' needs runs that did not learn or diverged: a rate whose runs are only still
    learning is not named; the top rates are named by rank, others by name, highest first."""
    def run(lr, verdict):
        return SimpleNamespace(point={"arch": "A", "lr": lr}, seed=0, outcome=SimpleNamespace(verdict=verdict))

    runs = [run("1e-3", "learned"), run("4e-3", "did not learn"), run("4e-3", "still learning"),
            run("1e-2", "did not learn"), run("1e-2", "diverged"), run("3e-4", "still learning")]
    assert pages.failed_rates(runs, arch="A") == "fails at the two highest rates of the grid"
    assert pages.failed_rates(runs[:1] + runs[-1:], arch="A") == "fails at no rate of the grid"
    assert pages.failed_rates(runs[1:5], arch="A") == "fails at every rate of the grid"
    assert pages.failed_rates(runs[3:], arch="A") == "fails at the highest rate of the grid"
    low = [run("1e-2", "learned"), run("3e-3", "diverged"), run("1e-3", "learned"), run("3e-4", "did not learn")]
    assert pages.failed_rates(low, arch="A") == "fails at 3e-3 and 3e-4"
    assert pages.failed_rates(low[:3], arch="A") == "fails at 3e-3"  # one rate, not the highest


def test_failed_cells_compared_says_about_as_many_only_within_one_cell():
    assert pages.failed_cells_compared({"Post-LN": 4, "Pre-LN": 4, "Admin": 3}) == \
        "about as many cells for each architecture"
    assert pages.failed_cells_compared({"Post-LN": 6, "Pre-LN": 4, "Admin": 2}) == \
        "the most cells for Post-LN (6) and the fewest for Admin (2)"


def test_bracket_sentence_names_each_group_whose_best_rate_is_at_the_grid_edge():
    inside = _gpu_grid({"A": 1e-3, "B": 1e-3}, {"A": 2.0, "B": 1.0})
    assert pages.bracket_sentence(inside) == "every group's best rate lies inside it"
    one = _gpu_grid({"A": 1e-4, "B": 1e-3}, {"A": 2.0, "B": 1.0})
    assert pages.bracket_sentence(one) == ("the best of A · 6 (1e-4, the lowest) sits at its edge, so there "
                                           "the optimum is not located")
    two = _gpu_grid({"A": 1e-4, "B": 1e-1}, {"A": 2.0, "B": 1.0})
    assert pages.bracket_sentence(two).startswith("the best of A · 6 (1e-4, the lowest) and B · 6 (1e-2, "
                                                  "the highest) sit at its edge")


def test_the_first_steps_effective_depth_and_windows_tables_render_exactly():
    import numpy as np

    def fs(g, u):
        return SimpleNamespace(grad_median=np.array([1.0, g]), update_median=np.array([1.0, u]))

    first = {("none", 0): fs(0.01, 0.5), ("long", 0): fs(0.5, 0.8)}
    assert pages.first_steps_table(first, ("none", "long"), [0], {"none": {0: 2.3}, "long": {0: 1.5}}) == (
        "| warmup | seed | median \\|g\\| falls × | median \\|Δθ\\|/η falls × | recorded final loss (nats) |\n"
        "|---|---|---|---|---|\n| none | 0 | 100 | 2 | 2.30 |\n| long | 0 | 2 | 1.25 | 1.50 |")
    ed = {("Post-LN", 0): ({"encoder": 1.0, "decoder": 2.0}, {"encoder": 3.0, "decoder": 4.0}),
          ("Post-LN", 1): ({"encoder": 2.0, "decoder": 2.0}, {"encoder": 4.0, "decoder": 5.0})}
    assert pages.effective_depth_table(ed) == (
        "| architecture | encoder: at init → trained | decoder: at init → trained |\n|---|---|---|\n"
        "| Post-LN | 1.50 → 3.50 | 2.00 → 4.50 |")
    recs = _gpu_grid({"A": 1e-3, "B": 1e-2}, {"A": 2.0, "B": 1.0}, seeds=2)
    assert pages.windows_table(recs, rows="arch", cols="depth") == (
        "| arch | 6 |\n|---|---|\n| A | 3, 3 (LRS 0.67; 0.67–0.67) |\n| B | 3, 3 (LRS 1.00; 1.00–1.00) |")


def test_deep_figure_draws_every_architecture_at_every_rate_and_at_its_best_rate():
    """Chapter 12's figure at the paper's failing depth, from the recorded quick sweep: left, a
    median curve per architecture over the grid's rates; right, every seed's held-out curve at
    that architecture's own best rate, labelled with the rate."""
    import matplotlib.pyplot as plt

    from tfx.book import evidence
    from tfx.runs import effects, outcome

    recs = evidence.records("ad3-deep", "quick")
    archs = ["Post-LN", "Pre-LN", "Admin"]
    h = recs[0].history
    fig = pages.deep_figure(get_profile("quick", check_task=False), recs, archs,
                            outcome.learned_level(h.chance_loss, h.floor_loss))
    left, right = fig.axes
    rates = {r.point["lr"] for r in recs}
    named = {ln.get_label(): ln for ln in left.get_lines() if not ln.get_label().startswith("_")}
    assert all(len(named[a].get_xdata()) == len(rates) for a in archs)
    labels = [ln.get_label() for ln in right.get_lines() if not ln.get_label().startswith("_")]
    for a in archs:
        best = effects.best_rate(recs, architecture=a).variant
        assert f"{a} (lr {best})" in labels
    plt.close(fig)


@pytest.mark.parametrize("figure_of", [
    lambda recs: pages.lr_panels_figure(P, recs, ["Post-LN", "Pre-LN"], "depth",
                                        sorted({r.point["depth"] for r in recs})),
    lambda recs: pages.depth_figure(P, recs, ["Post-LN", "Pre-LN"],
                                    sorted({r.point["depth"] for r in recs}), 1.5),
], ids=["lr_panels_figure", "depth_figure"])
def test_a_sweep_figure_is_stamped_with_its_records_task_not_the_profiles(figure_of):
    """depth-rates trains on the noisy reverse task while the quick profile's task is the plain
    reverse task: the stamp says what the records trained on (it used to say the profile's)."""
    from tfx.runs import results

    recs = results.load("depth-rates", "quick")
    if not recs:
        pytest.skip("no recorded depth-rates sweep in the quick profile")
    assert recs[0].task != P.task
    texts = [t.get_text() for t in figure_of(recs).texts]
    assert any(f"task: {recs[0].task}" in t for t in texts), texts
    assert not any(t.endswith(f"task: {P.task}") for t in texts), texts


def test_glue_sizes_and_glue_described_glue_each_name_once(monkeypatch):
    glued = {}

    def glue(name, value, display=False):
        assert name not in glued, name
        glued[name] = value

    for module in (pages, notebook):  # glue_sizes glues through tfx.book.notebook
        monkeypatch.setattr(module, "glue", glue)
    recs = [_rec(s, 1.0, lr=lr) for s in (0, 1) for lr in ("1e-3", "3e-3")]
    recs[2].train_config = SimpleNamespace(lr=3e-3, steps=100)
    pages.glue_sizes("x", recs, "seeds", "runs", "rates", "steps", "layers", "d:width")
    pages.glue_sizes("y", recs, "deep", sep="_")
    assert glued == {"x-seeds": 2, "x-runs": 4, "x-rates": 2, "x-steps": 100, "x-layers": "2+2",
                     "x-d": 64, "y_deep": 2}
    glued.clear()
    pages.glue_described("e", UP)
    pages.glue_described("f", UP, "not testable at this scale", "{:+.0f}")
    assert glued["e"] == UP.describe() and glued["e-mean"] == UP.mean
    assert glued["e-verdict"] == "reproduces" and glued["f"] == UP.describe("{:+.0f}")
    assert glued["f-verdict"] == "not testable at this scale"


def test_lr_panels_figure_draws_a_row_of_panels_per_variant_of_rows():
    """With ``rows`` (chapter 12's warmup × depth grid) each panel holds the runs of its row's
    and column's variants, titled by both."""
    from tfx.runs import results

    recs = results.load("lr-sensitivity", "quick")
    if not recs:
        pytest.skip("no recorded lr-sensitivity sweep in the quick profile")
    depths = list(dict.fromkeys(r.point["depth"] for r in recs))
    warms = list(dict.fromkeys(r.point["warmup"] for r in recs))
    fig = pages.lr_panels_figure(P, recs, ["Post-LN"], "depth", depths,
                                 lambda d, w: f"{d}, {w}", ("warmup", warms))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [f"{d}, {w}" for w in warms for d in depths]
