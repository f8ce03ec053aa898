"""Learning-rate sensitivity (tfx.runs.sensitivity), Wortsman et al. 2023."""
import copy
import math
from types import SimpleNamespace

import pytest

from tfx.runs import effects, sensitivity, sweep
from tfx.runs.results import select


def test_a_flat_curve_has_no_sensitivity_and_a_fragile_one_does():
    assert sensitivity.lr_sensitivity([1, 2, 3], [1.0, 1.0, 1.0], start=3.0) == 0.0
    # mean(1, 2, 3) − 1 = 1: the second and third rates end 1 and 2 nats worse
    assert sensitivity.lr_sensitivity([1, 2, 3], [1.0, 2.0, 3.0], start=3.5) == pytest.approx(1.0)


def test_a_diverged_or_worse_than_start_run_counts_as_the_start():
    """min(L, L₀): a nan (diverged) and a loss above L₀ both count as L₀ = 3."""
    assert sensitivity.lr_sensitivity([1, 2, 3], [1.0, math.nan, 9.0], start=3.0) == pytest.approx((1 + 3 + 3) / 3 - 1)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="lrs="):
        sensitivity.lr_sensitivity([1, 1], [1.0, 2.0], start=3.0)
    with pytest.raises(ValueError, match="lrs="):
        sensitivity.lr_sensitivity([1, 2], [1.0], start=3.0)
    with pytest.raises(ValueError, match="start="):
        sensitivity.lr_sensitivity([1, 2], [1.0, 2.0], start=math.nan)


def test_summarize_reads_recorded_runs_per_seed(tmp_path):
    recs = sweep.load_or_run("lr-sensitivity", "quick", results_dir=tmp_path)
    one = select(recs, architecture="Pre-LN", warmup="no warmup", depth="1 layer")
    s = sensitivity.summarize(one)
    assert s["lrs"] == [1e-3, 1e-2] and set(s["per_seed"]) == {0}
    seed = s["per_seed"][0]
    finals = [sensitivity.curve_loss(r) for r in one]
    assert seed["best"] == min(finals) and seed["start"] == one[0].history.loss[0]
    assert seed["sensitivity"] == pytest.approx(sensitivity.lr_sensitivity([1e-3, 1e-2], finals, seed["start"]))
    assert all(sensitivity.best_eval_loss(r) <= sensitivity.curve_loss(r) for r in one)
    # held-out, not Record.final_loss (the training loss): one name each, never both 'final_loss'
    assert finals == [r.history.eval_loss[-1] for r in one] != [r.final_loss for r in one]
    assert not hasattr(sensitivity, "final_loss")
    assert seed["learned_lrs"] == sorted(r.train_config.lr for r in one if r.status == "learned")
    assert sensitivity.windows(one) == {0: len(seed["learned_lrs"])}
    assert sensitivity.median_curve(one) == ([1e-3, 1e-2], finals)  # one seed: its own curve
    other = copy.copy(one[1])
    other.seed = 1  # seed 0 ran lr 1e-3 only, seed 1 lr 1e-2 only: no common grid
    with pytest.raises(ValueError, match="different learning rates"):
        sensitivity.summarize([one[0], other])


def test_median_curve_is_the_median_over_seeds_and_skips_diverged_runs():
    class R:  # the fields curves() reads
        def __init__(self, seed, lr, v):
            self.seed, self.train_config, self.v = seed, type("T", (), {"lr": lr})(), v

    recs = [R(0, 1, 1.0), R(1, 1, 3.0), R(2, 1, 2.0), R(0, 2, math.nan), R(1, 2, 5.0), R(2, 2, math.nan),
            R(0, 3, math.nan), R(1, 3, math.nan), R(2, 3, math.nan)]
    lrs, med = sensitivity.median_curve(recs, value=lambda r: r.v)
    assert lrs == [1, 2, 3] and med[:2] == [2.0, 5.0] and math.isnan(med[2])


def test_best_rate_is_read_between_grid_points_by_the_parabola_through_the_lowest_three():
    """The vertex of a parabola in log10 η is recovered exactly from a grid that brackets it,
    wherever it sits between two points (OP-3 reads each width's best rate this way)."""
    xs = [-4.0, -3.5, -3.0, -2.5, -2.0, -1.5]
    for true in (-3.3, -3.0, -2.55, -2.21):
        losses = [4.0 + 0.7 * (x - true) ** 2 for x in xs]
        got = sensitivity.best_log10_lr([10 ** x for x in xs], losses, start=99.0)
        assert got == pytest.approx(true, abs=1e-9)
    # a best point at the grid's edge gives the edge (the grid does not bracket it)
    assert sensitivity.best_log10_lr([1e-3, 1e-2, 1e-1], [1.0, 2.0, 3.0], 9.0) == pytest.approx(-3.0)
    # a diverged neighbour (nan) counts as the starting loss: the vertex leans away from it
    lean = sensitivity.best_log10_lr([1e-3, 1e-2, 1e-1], [3.0, 1.0, math.nan], start=3.0)
    assert lean == pytest.approx(-2.0)  # both neighbours at L0 = 3: symmetric
    away = sensitivity.best_log10_lr([1e-3, 1e-2, 1e-1], [2.0, 1.0, math.nan], start=3.0)
    assert -2.5 < away < -2.0


def test_best_rate_refuses_a_grid_it_cannot_read():
    with pytest.raises(ValueError, match="ascending"):
        sensitivity.best_log10_lr([1e-2, 1e-3, 1e-1], [1.0, 2.0, 3.0], 9.0)
    with pytest.raises(ValueError, match="≥ 3"):
        sensitivity.best_log10_lr([1e-3, 1e-2], [1.0, 2.0], 9.0)


def test_best_rates_gives_each_seed_its_own_best_rate(tmp_path):
    recs = sweep.load_or_run("op-transfer", "quick", results_dir=tmp_path)
    one = select(recs, parameterization="standard", width="d 32")
    best = sensitivity.best_rates(one)
    lrs, losses = sensitivity.curves(one)[0]
    assert set(best) == {0}
    assert best[0] == pytest.approx(sensitivity.best_log10_lr(lrs, losses, sensitivity.start_loss(one[0])))
    assert math.log10(lrs[0]) <= best[0] <= math.log10(lrs[-1])


def _curve(losses_by_seed, lrs=(1e-3, 3e-3, 1e-2, 3e-2, 1e-1), start=5.0):
    """Records of one recipe: each seed's held-out losses over ``lrs`` (the fields curves(),
    effects.best_rate and the outcome rule read)."""
    def rec(seed, lr, v):
        h = SimpleNamespace(chance_loss=6.0, floor_loss=0.0, eval_loss=[start, v], eval_step=[50, 100], bleu=[],
                            status="finished", reason="", diverged_step=0, steps_done=100,
                            start_loss=start, loss=[start], step=[1])
        return SimpleNamespace(seed=seed, point={"lr": f"{lr:g}"}, history=h, train_config=SimpleNamespace(lr=lr))

    return [rec(s, lr, v) for s, vals in losses_by_seed.items() for lr, v in zip(lrs, vals)]


def test_the_centred_sensitivity_reads_the_same_span_around_each_optimum():
    """Two recipes with the same curve shape, one shifted a grid step to the right: over the
    fixed grid their sensitivities differ (the shifted one loses a high rate and gains a low
    one); centred on each optimum they are equal. The window is the recipe's, the same for
    every seed, and a window off the grid is refused."""
    left = _curve({0: [2.0, 1.0, 2.0, 4.0, 5.0], 1: [2.2, 1.1, 2.1, 4.5, 5.0]})
    right = _curve({0: [3.0, 2.0, 1.0, 2.0, 4.0], 1: [3.0, 2.2, 1.1, 2.1, 4.5]})
    fixed = [sensitivity.lr_sensitivity(*sensitivity.curves(r)[0], start=5.0) for r in (left, right)]
    assert fixed[0] != pytest.approx(fixed[1])
    assert sensitivity.best_index(left) == ([1e-3, 3e-3, 1e-2, 3e-2, 1e-1], 1)
    assert sensitivity.best_index(right)[1] == 2
    assert sensitivity.widest_centred_steps([left, right]) == 1
    assert sensitivity.widest_centred_steps([right]) == 2
    a, b = (sensitivity.centred_sensitivity(r, 1) for r in (left, right))
    assert a[0] == pytest.approx(b[0]) == pytest.approx((2 + 1 + 2) / 3 - 1)
    assert a[1] == pytest.approx((2.2 + 1.1 + 2.1) / 3 - 1.1) == pytest.approx(b[1])
    with pytest.raises(ValueError, match="fewer than 2 grid rate"):
        sensitivity.centred_sensitivity(left, 2)
    with pytest.raises(ValueError, match="steps="):
        sensitivity.centred_sensitivity(left, 0)
    edge = _curve({0: [1.0, 2.0, 3.0, 4.0, 5.0]})
    assert sensitivity.widest_centred_steps([edge, right]) == 0
    with pytest.raises(ValueError, match="fewer than 1 grid rate"):
        sensitivity.centred_sensitivity(edge, 1)
    # clipped at the edge (a smoke test's grid): the window is the optimum and its one neighbour
    assert sensitivity.centred_sensitivity(edge, 1, clip=True)[0] == pytest.approx((1 + 2) / 2 - 1)


def test_the_centred_window_sits_at_the_best_rate_the_verdicts_use():
    """One rule decides a recipe's best rate (effects.best_rate: the lowest *mean* end loss).
    Here the median over seeds would pick 3e-3 (two seeds' 1.0), the mean picks 1e-2 (one seed's
    9.0 at 3e-3): the window follows the mean."""
    recs = _curve({0: [2.0, 1.0, 2.0, 3.0, 4.0], 1: [2.0, 1.0, 2.0, 3.0, 4.0], 2: [2.0, 9.0, 1.5, 3.0, 4.0]})
    best = effects.best_rate(recs)
    assert best.lr == 1e-2
    assert sensitivity.best_index(recs) == ([1e-3, 3e-3, 1e-2, 3e-2, 1e-1], 2)


def test_centred_window_is_the_window_each_sweep_allows():
    """The centred LR sensitivity's window: one grid step of half a decade either side in the
    transfer and depth sweeps (an optimum one step from an edge), two in the warmup and decay
    sweep (every optimum in the middle); sweeps whose windows differ are refused."""
    from tfx.book import evidence

    transfer, depth = evidence.records("op-transfer"), evidence.records("op-depth")
    assert sensitivity.centred_window(transfer, depth) == {"steps": 1, "decades": 0.5}
    assert sensitivity.centred_window(evidence.records("op-warmup-decay")) == {"steps": 2, "decades": 1.0}
    with pytest.raises(ValueError):
        sensitivity.centred_window(transfer, evidence.records("op-warmup-decay"))


def test_lowest_rate_above_is_the_first_rate_where_every_seed_ends_above_the_level():
    recs = _curve({0: [1.0, 7.0, 5.5, 7.0, 7.0], 1: [1.0, 2.0, 6.5, 7.0, 7.0]})
    assert sensitivity.lowest_rate_above(recs, 5.0) == "0.01"  # at 0.003 seed 1 ends below
    assert sensitivity.lowest_rate_above(recs, 8.0) is None


def test_stability_map_marks_a_cell_by_its_worst_seed_and_caps_at_chance():
    """Chapter 12's map: the mean final loss per (lr, β₂) cell, a diverged run counted at chance;
    D where a seed diverged, N where one did not learn (tfx.runs.outcome), the failed cells counted."""
    def rec(seed, lr, b2, loss, status="finished"):
        h = SimpleNamespace(chance_loss=6.0, floor_loss=0.0, eval_loss=[6.0, loss], eval_step=[1, 100],
                            status=status, reason="", diverged_step=50, steps_done=100, start_loss=6.0,
                            loss=[6.0, loss], step=[1, 100])
        return SimpleNamespace(seed=seed, status=status, history=h, train_config=SimpleNamespace(lr=float(lr)),
                               point={"architecture": "A", "beta2": b2, "train.lr": lr})

    recs = [rec(0, "1e-3", "0.95", 1.0), rec(1, "1e-3", "0.95", 1.2),
            rec(0, "1e-2", "0.95", 1.0), rec(1, "1e-2", "0.95", float("nan"), "diverged"),
            rec(0, "1e-3", "0.999", 2.0), rec(1, "1e-3", "0.999", 2.0),
            rec(0, "1e-2", "0.999", 9.0), rec(1, "1e-2", "0.999", 1.0)]
    grid, marks, failed = sensitivity.stability_map(recs, ["A"], ["0.95", "0.999"], ["1e-3", "1e-2"])["A"]
    assert grid[0, 0] == pytest.approx(1.1) and grid[1, 0] == pytest.approx(3.5)  # diverged: at chance
    assert grid[1, 1] == pytest.approx(3.5)  # above chance: capped
    assert marks == [["", ""], ["D", "N"]] and failed == 2  # 9 nats: worse than at the start
    assert sensitivity.final_losses_capped(recs[2:4], 6.0) == [1.0, 6.0]
