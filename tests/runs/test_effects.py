"""tfx.runs.effects: paired effects with 95 % intervals, verdicts from the interval, each scheme
at its own best learning rate, and grids that bracket it."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from tfx.runs import effects


def _rec(seed, loss, rate=1e-3, diverged=False, start=6.0, **point):
    h = SimpleNamespace(chance_loss=6.0, floor_loss=0.0, eval_loss=[5.0, loss], eval_step=[50, 100], bleu=[],
                        status="diverged" if diverged else "finished", reason="", diverged_step=5, steps_done=100,
                        start_loss=start, loss=[start], step=[1])
    return SimpleNamespace(seed=seed, point=point, history=h, train_config=SimpleNamespace(lr=rate))


def test_the_interval_is_students_t_on_the_paired_differences():
    """d = 1…5: mean 3, s = √2.5, t(0.975, 4) = 2.7764 from the tables: 3 ± 2.7764·√2.5/√5."""
    e = effects.paired({s: 10.0 + s + 1 for s in range(5)}, {s: 10.0 for s in range(5)}, "higher")
    half = 2.776445 * math.sqrt(2.5) / math.sqrt(5)
    assert e.mean == pytest.approx(3.0) and e.n == 5 and e.enough_seeds
    assert (e.low, e.high) == (pytest.approx(3 - half, rel=1e-5), pytest.approx(3 + half, rel=1e-5))
    assert e.diffs == pytest.approx({0: 1, 1: 2, 2: 3, 3: 4, 4: 5}) and 0 < e.p < 0.05


@pytest.mark.parametrize("diffs, expect, verdict", [
    ([1, 2, 3, 4, 5], "higher", "reproduces"),
    ([1, 2, 3, 4, 5], "lower", "reversed"),
    ([-1, -2, -3, -4, -5], "lower", "reproduces"),
    ([-1, 2, -3, 4, 0.5], "higher", "not resolved at this scale"),
    ([-1, 2, -3, 4, 0.5], "lower", "not resolved at this scale"),
])
def test_the_verdict_follows_from_the_interval_and_the_predicted_side(diffs, expect, verdict):
    e = effects.paired(dict(enumerate(diffs)), dict.fromkeys(range(5), 0.0), expect)
    assert e.verdict == verdict
    assert e.agreeing == sum((d < 0) if expect == "lower" else (d > 0) for d in diffs)


@pytest.mark.parametrize("diffs, verdict", [
    ([0.01, -0.02, 0.0, 0.015, -0.005], "reproduces"),  # the interval inside ±0.05
    ([0.2, 0.3, 0.25, 0.22, 0.28], "reversed"),  # all of it above +0.05: they differ
    ([0.01, 0.2, -0.1, 0.05, 0.0], "not resolved at this scale"),
])
def test_equal_is_an_equivalence_test_inside_a_stated_margin(diffs, verdict):
    e = effects.paired(dict(enumerate(diffs)), dict.fromkeys(range(5), 0.0), "equal", margin=0.05)
    assert e.verdict == verdict and "within ±0.05" in e.describe()
    assert effects.paired(dict(enumerate(diffs)), dict.fromkeys(range(5), 0.0), "equal", margin=1.0).verdict \
        == "reproduces"  # the margin is what decides
    with pytest.raises(ValueError, match="margin="):
        effects.paired({0: 1.0}, {0: 0.0}, "equal")
    with pytest.raises(ValueError, match="margin="):
        effects.paired({0: 1.0}, {0: 0.0}, "higher", margin=0.1)


def test_few_seeds_are_said_and_one_seed_has_no_interval():
    e = effects.paired({0: 1.0, 1: 1.2, 2: 1.1}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")
    assert not e.enough_seeds and "fewer than 5 seeds" in e.describe()
    one = effects.paired({0: 1.0}, {0: 0.0}, "higher")
    assert math.isnan(one.low) and one.verdict == "not resolved at this scale"
    assert "no interval" in one.describe()


def test_only_seeds_on_both_sides_pair_and_bad_input_is_named():
    e = effects.paired({0: 2.0, 1: 3.0, 7: 9.0}, {0: 1.0, 1: 1.0, 2: 1.0}, "higher")
    assert sorted(e.diffs) == [0, 1]
    with pytest.raises(ValueError, match="expect='up' must be one of"):
        effects.paired({0: 1.0}, {0: 0.0}, "up")
    with pytest.raises(ValueError, match="no seed is on both sides"):
        effects.paired({0: 1.0}, {1: 0.0}, "higher")
    with pytest.raises(ValueError, match="not finite"):
        effects.paired({0: math.nan}, {0: 0.0}, "higher")


def test_a_diverged_run_counts_as_the_loss_it_started_from():
    recs = [_rec(s, 2.0, arch="A") for s in range(5)] + [_rec(s, 1.0, arch="B", diverged=s == 0) for s in range(5)]
    assert effects.end_loss(recs[5]) == 6.0  # diverged: L₀, not its last loss
    e = effects.effect(recs, "arch", "B", "A", "lower")
    assert e.diffs[0] == pytest.approx(4.0) and e.diffs[1] == pytest.approx(-1.0)


def test_effect_reads_records_and_names_what_is_missing():
    recs = [_rec(s, 2.0 + 0.1 * s, arch="A", lr="1e-3") for s in range(5)]
    recs += [_rec(s, 1.0 + 0.05 * s, arch="B", lr="1e-3") for s in range(5)]
    e = effects.effect(recs, "arch", "A", "B", "higher", lr="1e-3")
    assert e.verdict == "reproduces" and e.a == "A" and e.b == "B"
    # value= and unit= change what is compared and how it is said
    acc = effects.effect(recs, "arch", "A", "B", "higher", value=lambda r: -r.history.eval_loss[-1], unit="%")
    assert acc.mean == pytest.approx(-e.mean) and acc.describe().split(" (")[0].endswith("%")
    with pytest.raises(ValueError, match="no records with arch='C'"):
        effects.effect(recs, "arch", "A", "C", "higher")
    with pytest.raises(ValueError, match="also fixed"):
        effects.effect(recs, "arch", "A", "B", "higher", arch="A")
    with pytest.raises(ValueError, match="recorded twice"):
        effects.effect(recs + recs[:1], "arch", "A", "B", "higher")


def _grid(best_a, best_b, rates=("1e-4", "1e-3", "1e-2", "1e-1")):
    """Two schemes over a rate grid; each ends lowest at its own best rate (A better there)."""
    out = []
    for arch, best, floor in (("A", best_a, 1.0), ("B", best_b, 1.5)):
        for name in rates:
            for s in range(5):
                loss = floor + abs(math.log10(float(name)) - math.log10(float(best))) + 0.01 * s
                out.append(_rec(s, loss, rate=float(name), arch=arch, lr=name))
    return out


def test_each_scheme_is_compared_at_its_own_best_rate():
    recs = _grid("1e-3", "1e-2")
    a, b = effects.best_rate(recs, arch="A"), effects.best_rate(recs, arch="B")
    assert (a.variant, b.variant) == ("1e-3", "1e-2") and a.bracketed and b.bracketed
    assert a.rates == (1e-4, 1e-3, 1e-2, 1e-1)
    e = effects.at_best_rate(recs, "arch", "A", "B", "lower")
    assert (e.a, e.b) == ("A @ 1e-3", "B @ 1e-2") and e.mean == pytest.approx(-0.5)
    # at one shared rate the comparison says something else: the reason for own best rates
    shared = effects.effect(recs, "arch", "A", "B", "lower", lr="1e-2")
    assert shared.mean == pytest.approx(0.5) and shared.verdict == "reversed"
    assert effects.lr_axis(recs) == "lr"
    assert effects.at_best_rate(recs, "arch", "A", "B", "lower", lr="lr").mean == e.mean  # the axis named


def test_a_best_rate_at_the_grid_edge_is_named():
    recs = _grid("1e-4", "1e-2")
    assert not effects.best_rate(recs, arch="A").bracketed
    assert effects.unbracketed(recs) == [{"arch": "A", "lr": "1e-4"}]
    assert effects.unbracketed(_grid("1e-3", "1e-2")) == []
    with pytest.raises(ValueError, match="cannot tell the learning-rate axis"):
        effects.lr_axis([_rec(0, 1.0, arch="A")])


def test_runs_at_best_rate_are_the_group_at_its_best_rate(tmp_path):
    from tfx.runs import sweep

    recs = sweep.load_or_run("op-transfer", "quick", results_dir=tmp_path)
    best, runs = effects.runs_at_best_rate(recs, parameterization="standard", width="d 32")
    assert best == effects.best_rate(recs, parameterization="standard", width="d 32")
    assert runs and {r.point["lr"] for r in runs} == {best.variant}
    assert {(r.point["parameterization"], r.point["width"]) for r in runs} == {("standard", "d 32")}


# ---------------------------------------------------------------- Adam's first steps (WU-3)
def test_wu3_effects_pair_the_log_falls_seed_by_seed():
    """WU-3's effects are the log10 falls of the medians (step 1 over the lowest) without warmup
    minus with it, paired by seed."""
    import numpy as np

    from tfx.theory.adam import first_steps_falls

    def run(g, u):  # medians over the window: step 1's value, then the lowest
        return SimpleNamespace(grad_median=np.array([1.0, 1.0 / g]), update_median=np.array([1.0, 1.0 / u]))

    first = {}
    for s in range(3):
        first[0, s] = run(100.0 * (s + 1), 10.0)
        first[40, s] = run(2.0, 5.0)
    e = effects.wu3_effects(first, 0, 40)
    assert e["gradient"].diffs == pytest.approx({s: math.log10(50.0 * (s + 1)) for s in range(3)})
    assert e["update"].diffs == pytest.approx({s: math.log10(2.0) for s in range(3)})
    assert e["gradient"].verdict == "reproduces" and e["gradient"].unit == "decades"
    assert first_steps_falls(first, 40)[1] == pytest.approx((math.log10(2.0), math.log10(5.0)))


def test_wu3_contrast_pairs_post_lns_extra_fall_against_pre_lns_seed_by_seed():
    paired = effects.paired
    post = {"gradient": paired({0: 2.0, 1: 1.8, 2: 2.2}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher"),
            "update": paired({0: 0.5, 1: 0.4, 2: 0.6}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")}
    same = effects.wu3_contrast(post, post)
    assert all(e.mean == 0 and e.verdict != "reproduces" for e in same.values())
    pre = {"gradient": paired({0: 0.5, 1: 0.6, 2: 0.7}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher"),
           "update": post["update"]}
    ctl = effects.wu3_contrast(post, pre)
    assert ctl["gradient"].diffs == pytest.approx({0: 1.5, 1: 1.2, 2: 1.5})
    assert ctl["gradient"].verdict == "reproduces"
    assert ctl["gradient"].unit == "decades" and ctl["update"].mean == 0
