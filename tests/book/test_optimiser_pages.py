"""tfx.book.optimiser_pages: the agreement rule, the grid's counts, the slope criterion."""
import numpy as np
import pytest

from tfx.book import optimiser_pages as pages
from tfx.theory.optimiser import CoordinateCheck


def test_onset_agreement_rule():
    assert pages.onset_agrees(None, None, 100)
    assert not pages.onset_agrees(500, None, 100) and not pages.onset_agrees(None, 480, 100)
    assert pages.onset_agrees(500, 488, 100)  # 12 ≤ 0.03·400 + 1 = 13
    assert not pages.onset_agrees(500, 486, 100)


def test_grid_finds_a_spike_and_a_capped_run():
    rows = pages.quadratic_grid([0.95], [1e-8, 1e-3], steps=600)
    assert [r["onset"] is not None for r in rows] == [True, False]
    assert all(r["agree"] for r in rows)
    s = pages.grid_summary(rows)
    assert (s["runs"], s["spiked"], s["predicted"], s["agree"]) == (2, 1, 1, 2)
    assert "| 0.95 | 1e-03 |" in pages.grid_table(rows)


def test_noise_grid_counts_crossings_and_marks_the_noise_that_rules_them_out():
    rows = pages.noise_grid([0.0, 1e-3], seeds=[0, 1], betas=(0.9, 0.95), steps=600)
    assert [(r["crossed"], r["ruled_out"]) for r in rows] == [(2, False), (0, True)]
    assert rows[0]["step"] is not None and rows[1]["step"] is None
    assert "| 1e-03 | 0 of 2 | none |" in pages.noise_table(rows, 38.0)


def check(slopes):
    slopes = np.array(slopes, dtype=float)
    return CoordinateCheck([32, 64], ["a", "logits"], np.ones((len(slopes), 2, 2)), slopes)


def test_flat_and_growing_follow_the_intervals():
    flat = check([[0.05, -0.1], [0.0, -0.05], [0.1, -0.12]])
    assert pages.is_flat(flat) and not pages.grows(flat)
    steep = check([[1.0, 0.6], [1.1, 0.5], [0.9, 0.55]])
    assert pages.grows(steep) and not pages.is_flat(steep)
    tilted = check([[0.05, -0.35], [0.0, -0.35], [0.1, -0.32]])  # one mean outside ±0.3
    assert not pages.is_flat(tilted) and not pages.grows(tilted)
    assert "+1.00" in pages.slope_table({"standard": steep, "μP": flat})
    name, mean, lo, hi = pages.slope_intervals(steep)[0]
    assert mean == pytest.approx(1.0) and lo < 1.0 < hi


def test_shared_spikes_count_spikes_another_recipe_has_on_the_same_batch():
    """OP-1's bad-batch control on constructed runs: a loss spike at step 30 in two recipes of
    seed 0 (the same batch) is shared; one at step 50 in one recipe only is not."""
    from types import SimpleNamespace

    def run(recipe, seed, spike_at):
        loss = [1.0] * 80
        for s in spike_at:
            loss[s] = 5.0
        h = SimpleNamespace(loss=loss, step=list(range(80)), update_norm=[1.0] * 80, eval_loss=[1.0],
                            eval_step=[80], chance_loss=6.0, floor_loss=0.0, status="finished", reason="",
                            diverged_step=0, steps_done=80, start_loss=6.0, bleu=[])
        return SimpleNamespace(seed=seed, point={"recipe": recipe}, history=h,
                               train_config=SimpleNamespace(warmup=0, steps=80))

    recs = [run("a", 0, [30, 50]), run("b", 0, [30]), run("a", 1, [30])]
    got = pages.shared_spikes(recs)
    assert (got.shared, got.total) == (2, 4)
    # by chance: 59 steps can hold a spike (80 less the 21 of the running median's window);
    # a's two spikes meet b's one with p = 1/59, b's meets a's two with 2/59, seed 1's none
    assert got.chance == pytest.approx((1 + 1 + 2 + 0) / 59 / 4)
    assert got.low < 0.5 < got.high and got.verdict == "reproduces"  # 7 % to 93 %, against 1.7 %
    assert pages.shared_spikes(recs[2:]).verdict == "not resolved at this scale"  # no spike to pair
    # every spike of twelve seeds shared by both recipes: far above chance
    many = [run(r, seed, [30, 60]) for seed in range(12) for r in "ab"]
    assert pages.shared_spikes(many).verdict == "reproduces"
    # many spikes, none on the same batch: below what chance puts there
    apart = [run("a", seed, list(range(25, 80, 10))) for seed in range(12)] + [
        run("b", seed, list(range(30, 80, 10))) for seed in range(12)]
    assert pages.shared_spikes(apart).shared == 0 and pages.shared_spikes(apart).verdict == "reversed"


def test_schedules_figure_draws_each_schedule_at_each_length_from_the_records():
    """SC-1's figure, from the recorded quick sweep: one panel per run length, one median
    curve per schedule over the peak rates, in the schedule's colour."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from tfx.book import evidence
    from tfx.runs.profiles import get_profile

    recs = evidence.records("schedules", "quick")
    fig = pages.schedules_figure(get_profile("quick", check_task=False), recs)
    axes = fig.axes
    assert [a.get_title() for a in axes] == ["400 steps", "1,200 steps"]
    for ax in axes:
        medians = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
        for name, c in pages.SCHEDULE_COLORS.items():
            assert to_hex(medians[name].get_color()) == c
            assert len(medians[name].get_xdata()) == len({r.point["lr"] for r in recs})
    plt.close(fig)


def test_the_grid_and_slope_tables_render_exactly():
    rows = [dict(beta2=0.95, eps=1e-8, t0=120, predicted=480, onset=488, agree=True),
            dict(beta2=0.999, eps=1e-3, t0=None, predicted=None, onset=None, agree=True)]
    assert pages.grid_table(rows) == (
        "| β₂ | ε | decay starts | predicted | onset seen | agree |\n|---|---|---|---|---|---|\n"
        "| 0.95 | 1e-08 | 120 | 480 | 488 | yes |\n| 0.999 | 1e-03 | none | none | none | yes |")
    steep = check([[1.0, 0.6], [1.1, 0.5], [0.9, 0.55]])
    assert pages.slope_table({"standard": steep}) == (
        "| quantity | standard |\n|---|---|\n| a | +1.00 [+0.75, +1.25] |\n| logits | +0.55 [+0.43, +0.67] |")


def test_centred_window_words_say_the_window_each_sweep_allows():
    """The centred LR sensitivity's window in words: one grid step of half a decade either side
    in the transfer and depth sweeps (an optimum one step from an edge), two in the warmup and
    decay sweep (every optimum in the middle); sweeps that agree are said once."""
    from tfx.book import evidence

    transfer, depth = evidence.records("op-transfer"), evidence.records("op-depth")
    one = "1 grid step (0.5 decades) either side of each optimum"
    assert pages.centred_window_words(transfer, depth) == one
    both = pages.centred_window_words(transfer, evidence.records("op-warmup-decay"))
    assert both == one + "; 2 grid steps (1.0 decades) either side of each optimum"
