"""tfx.book.evidence: the comparisons that test each training claim, read from records."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from tfx.book import evidence
from tfx.book.evidence import Comparison


def _rec(seed, loss, rate, **point):
    h = SimpleNamespace(chance_loss=6.0, floor_loss=0.0, eval_loss=[5.0, loss], eval_step=[50, 100], bleu=[],
                        status="finished", reason="", diverged_step=0, steps_done=100, start_loss=6.0,
                        loss=[6.0], step=[1])
    return SimpleNamespace(seed=seed, point=point, history=h, train_config=SimpleNamespace(lr=rate, steps=100),
                           config=SimpleNamespace(d_model=64, n_enc=2, n_dec=2))


def _grid(best: dict, floor: dict, arch=("A", "B"), warm=("none", "warm"), seeds=5):
    """Loss = floor + |log10 lr − log10 best| per (arch, warmup), plus a little per seed."""
    out = []
    for a in arch:
        for w in warm:
            for lr in ("1e-4", "1e-3", "1e-2", "1e-1"):
                for s in range(seeds):
                    loss = floor[a, w] + abs(math.log10(float(lr)) - math.log10(best[a, w])) + 0.013 * s * (s % 2)
                    out.append(_rec(s, loss, float(lr), arch=a, warmup=w, lr=lr))
    return out


BEST = {("A", "none"): 1e-3, ("A", "warm"): 1e-2, ("B", "none"): 1e-2, ("B", "warm"): 1e-2}
FLOOR = {("A", "none"): 1.5, ("A", "warm"): 1.0, ("B", "none"): 1.0, ("B", "warm"): 1.0}


def _load(recs):
    return lambda experiment, profile: recs


def test_own_rate_reads_each_side_at_its_best_rate():
    recs = _grid(BEST, FLOOR)
    c = Comparison("WU-1", "A ends higher without warmup", "x", "warmup", "none", "warm", "higher", {"arch": "A"},
                   own_rate=True)
    e = c.effect(recs)
    assert (e.a, e.b) == ("none @ 1e-3", "warm @ 1e-2") and e.mean == pytest.approx(0.5)
    assert e.verdict == "reproduces"
    shared = Comparison("WU-1", "at one rate", "x", "warmup", "none", "warm", "higher", {"arch": "A", "lr": "1e-3"})
    assert shared.effect(recs).mean == pytest.approx(0.5 - 1.0)  # at 1e-3 the warm side is off its best


def test_at_rate_of_reads_both_sides_at_one_variants_best_rate():
    """A without warmup is best at 1e-3, with it at 1e-2: at 1e-3 warm is 1 nat off its own best."""
    recs = _grid(BEST, FLOOR)
    c = Comparison("SC-2", "-", "x", "warmup", "warm", "none", "lower", {"arch": "A"}, at_rate_of="none")
    e = c.effect(recs)
    assert (e.a, e.b) == ("warm @ 1e-3", "none @ 1e-3") and e.mean == pytest.approx(1.0 + 1.0 - 1.5)
    own = Comparison("SC-2", "-", "x", "warmup", "warm", "none", "lower", {"arch": "A"}, own_rate=True)
    assert own.effect(recs).mean == pytest.approx(1.0 - 1.5)  # the option changes what is read
    with pytest.raises(ValueError, match="at_rate_of"):
        Comparison("SC-2", "-", "x", "warmup", "warm", "none", "lower", at_rate_of="none", own_rate=True)


def test_a_contrast_is_a_difference_of_differences():
    """Warmup helps A by 0.5 at the best rates and B by 0: the contrast is 0.5 − 0."""
    recs = _grid(BEST, FLOOR)
    c = Comparison("WU-1", "warmup helps A more than B", "x", "warmup", "none", "warm", "higher", {"arch": "A"},
                   own_rate=True, contrast={"arch": "B"})
    e = c.effect(recs)
    assert e.mean == pytest.approx(0.5) and "minus at arch=B" in e.a
    plain = Comparison("WU-1", "-", "x", "warmup", "none", "warm", "higher", {"arch": "B"}, own_rate=True)
    assert plain.effect(recs).mean == pytest.approx(0.0)


def test_lr_sensitivity_reads_each_seeds_whole_curve():
    recs = _grid(BEST, FLOOR)
    c = Comparison("AD-3", "A is more sensitive", "x", "arch", "A", "B", "higher", {"warmup": "none"},
                   measure="LR sensitivity")
    e = c.effect(recs)
    # A's curve: 1.5 + (1, 0, 1, 2) (seed 0), capped at L₀ = 6: mean − min = 1; B's: 1 + (2, 1, 0, 1): 1
    assert e.diffs[0] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="own_rate"):
        Comparison("AD-3", "-", "x", "arch", "A", "B", "higher", measure="LR sensitivity", own_rate=True)


def test_bad_registrations_are_refused_by_name():
    with pytest.raises(ValueError, match="claim='XX-1'"):
        Comparison("XX-1", "-", "x", "a", "b", "c", "higher")
    with pytest.raises(ValueError, match="measure='accuracy'"):
        Comparison("WU-1", "-", "x", "a", "b", "c", "higher", measure="accuracy")
    with pytest.raises(ValueError, match="claim='LN-1' has no registered comparison"):
        evidence.evaluate("LN-1")
    with pytest.raises(ValueError, match="expected='fails'"):  # a verdict's word, or none
        Comparison("WU-1", "-", "x", "a", "b", "c", "higher", expected="fails")


def test_each_half_gets_its_own_status_and_the_cases_are_named_after_the_claim(monkeypatch):
    """evidence.part_statuses judges each half as evidence.parts writes it (a 'failure' whose runs
    still improve is *behind at this budget*); the registry tests' case ids spell the claim as the
    test functions do (test_AD_3_…), so ``pytest -k AD_3`` selects them."""
    from tfx.book import claims

    items = [("stability", "s1", "reproduces"), ("stability", "s2", "reversed"), ("quality", "q", "not resolved at this scale")]
    assert claims.part_statuses(items) == {"stability": "mixed", "quality": "not resolved at this scale"}
    assert claims.part_statuses([("", "a", "reproduces")]) == {"": "reproduces"}
    recs = _grid(BEST, FLOOR)
    comps = [Comparison("AD-3", "failure: A ends higher", "x", "warmup", "none", "warm", "higher", {"arch": "A"},
                        own_rate=True, part="failure"),
             Comparison("AD-3", "stability: B ends higher", "x", "warmup", "none", "warm", "higher", {"arch": "B"},
                        own_rate=True, part="stability")]
    monkeypatch.setitem(evidence.BY_CLAIM, "AD-3", comps)
    # every run here learned: A's side did not fail, so its 'failure' half is behind at this budget,
    # and the failure itself, shown by no comparison, is not resolved
    assert evidence.part_statuses("AD-3", load=_load(recs)) == {
        evidence.BEHIND: "reproduces", "stability": "not resolved at this scale",
        "failure": "not resolved at this scale"}
    assert evidence.case_id("AD-3") == "AD_3" and evidence.case_id("AD-3", 12) == "AD_3-c12"
    # a row is headed by what its runs show, never 'failure' on runs that learned
    assert comps[0].label(recs) == f"{evidence.BEHIND}: A ends higher"
    assert comps[1].label(recs) == "stability: B ends higher"


def test_status_and_the_claims_page_line_come_from_the_registered_comparisons(monkeypatch):
    recs = _grid(BEST, FLOOR)
    comps = [Comparison("WU-1", "A ends higher without warmup", "x", "warmup", "none", "warm", "higher",
                        {"arch": "A"}, own_rate=True),
             Comparison("WU-1", "B ends higher without warmup", "x", "warmup", "none", "warm", "higher",
                        {"arch": "B"}, own_rate=True)]
    monkeypatch.setitem(evidence.BY_CLAIM, "WU-1", comps)
    assert [e.verdict for _, e in evidence.evaluate("WU-1", load=_load(recs))] == \
        ["reproduces", "not resolved at this scale"]
    assert evidence.status("WU-1", load=_load(recs)) == "reproduces in part"
    line = evidence.describe("WU-1", load=_load(recs))
    assert "A ends higher without warmup: +0.50 nats (95 % CI" in line and "d 64, 2+2 layers, 100 steps, 5 seeds" in line


def test_every_registered_comparison_names_axes_and_variants_of_its_experiment():
    from tfx.runs.experiment import Experiment

    for c in evidence.COMPARISONS:
        grid = {a: [v for v, _ in vs] for a, vs in Experiment.load(c.experiment).grid("book").items()}
        assert c.axis in grid and {c.a, c.b} <= set(grid[c.axis]), c
        for k, v in {**c.point, **c.contrast}.items():
            assert k in grid and v in grid[k], (c, k, v)


def test_best_rate_table_reads_each_variant_at_its_own_best_rate():
    recs = _grid(BEST, FLOOR)
    t = evidence.best_rate_table(recs, "arch", warmup="none")
    rows = t.splitlines()
    assert rows[0].startswith("| arch | best rate") and len(rows) == 4
    assert rows[2].startswith("| A | 1e-3 |") and "learned 5/5" in rows[2]
    assert rows[3].startswith("| B | 1e-2 |") and "edge" not in t
    edge = evidence.best_rate_table(_grid({**BEST, ("A", "none"): 1e-4}, FLOOR), "arch", ["A"], warmup="none")
    assert "1e-4 (at the grid's edge)" in edge


def test_the_depth_growth_effect_can_give_every_verdict():
    """One scheme's depth exponent of the output change against another's, or against 0 within
    ±FLAT_EXPONENT (tfx.theory.change.depth_exponents, paired by seed)."""
    import numpy as np

    N = np.array([2.0, 4.0, 8.0, 16.0])
    jitter = np.array([1.0, 1.1, 0.9, 1.05, 0.95])
    res = {"depths": N, "flat": np.outer(np.ones_like(N), jitter) * N[:, None] ** 0.02 * 1e-3,
           "grows": np.outer(N ** 2.0, jitter)}
    assert evidence.depth_growth_effect(res, "flat", "grows").verdict == "reproduces"
    assert evidence.depth_growth_effect(res, "grows", "flat").verdict == "reversed"
    assert evidence.depth_growth_effect(res, "flat", expect="equal").verdict == "reproduces"
    assert evidence.depth_growth_effect(res, "grows", expect="equal").verdict == "reversed"


def test_a_converged_quality_comparison_on_runs_still_falling_is_not_testable(monkeypatch):
    """Issue 40: quality after a few hundred steps is not converged quality. A ``converged``
    comparison is judged only where every run it reads has stopped falling; on the same losses,
    runs on a plateau give the effect's verdict and runs still falling give 'not testable'."""
    falling = _grid(BEST, FLOOR)  # each run's held-out loss fell from 5.0 over its last evaluations
    flat = _grid(BEST, FLOOR)
    for r in flat:
        r.history.eval_loss = [r.history.eval_loss[-1]] * 2  # the same end, on a plateau
    c = Comparison("AD-3", "quality: A ends higher without warmup", "x", "warmup", "none", "warm", "higher",
                   {"arch": "A"}, own_rate=True, part="quality", converged=True)
    assert c.still_falling(falling) == (10, 10) and c.still_falling(flat) == (0, 10)
    assert c.verdict(falling) == "not testable at this scale"
    assert c.verdict(flat) == c.effect(flat).verdict == "reproduces"
    # the same comparison without the flag is judged on the end loss, falling or not
    plain = Comparison("AD-3", "quality: A ends higher", "x", "warmup", "none", "warm", "higher", {"arch": "A"},
                       own_rate=True, part="quality")
    assert plain.verdict(falling) == "reproduces"
    monkeypatch.setitem(evidence.BY_CLAIM, "AD-3", [c])
    monkeypatch.delitem(evidence.NOT_TESTABLE, "AD-3", raising=False)
    assert evidence.status("AD-3", load=_load(falling)) == "not testable at this scale"
    assert evidence.status("AD-3", load=_load(flat)) == "reproduces"
    assert "not testable at this scale (10 of its 10 runs still falling at the end)" in \
        evidence.describe("AD-3", load=_load(falling))
    assert evidence.parts("AD-3", load=_load(flat)) == "quality: reproduces (1 of 1 reproduce)"


def test_the_papers_separate_statements_are_registered_as_halves():
    halves = {c.claim: set() for c in evidence.COMPARISONS}
    for c in evidence.COMPARISONS:
        halves[c.claim].add(c.part)
    assert halves["AD-3"] == {"stability", "failure", "quality"}
    assert halves["RZ-1"] == {"trains", "cost"}
    assert all(c.converged for c in evidence.COMPARISONS if c.part in ("quality", "cost"))


def test_a_failure_rests_on_failed_runs_else_it_is_behind_at_this_budget():
    """Issue 40: "fails" means diverged or plateaued. A 'failure' comparison whose failing side
    (a) has a run still learning shows that side behind at this budget, and its half says so."""
    def recs(a_losses, a_curve):
        out = []
        for s in range(5):
            out.append(_rec(s, 1.0, 1e-3, arch="B", lr="1e-3"))  # B learned (loss 1.0, gap closed)
            r = _rec(s, a_losses[s], 1e-3, arch="A", lr="1e-3")
            r.history.eval_loss = a_curve(a_losses[s])
            out.append(r)
        return out

    c = Comparison("AD-3", "failure: A ends higher than B", "x", "arch", "A", "B", "higher", {"lr": "1e-3"},
                   part="failure")
    stuck = recs([5.5] * 5, lambda x: [x, x])                  # flat near chance: did not learn, every seed
    slow = recs([5.5] * 4 + [4.8], lambda x: [x, x])           # one seed ends at 4.8 ...
    slow[-1].history.eval_loss = [5.6, 4.8]                    # ... and is still falling: slow, not failed
    assert c.failed(stuck) == (5, 5) and c.half(stuck) == "failure"
    assert c.failed(slow) == (4, 5) and c.half(slow) == "behind at this budget"
    assert c.effect(stuck).verdict == c.effect(slow).verdict == "reproduces"  # the effect alone cannot tell
    other = Comparison("AD-3", "stability: A", "x", "arch", "A", "B", "higher", {"lr": "1e-3"}, part="stability")
    assert other.half(slow) == "stability"


def test_a_claim_whose_failures_are_all_behind_does_not_read_reproduces(monkeypatch):
    """"Fails" means failed, in the status too: the same effect reproduces either way, but where
    every failure comparison is behind at this budget the claim's failure is not shown, its status
    is *reproduces in part* and its parts say why; where the runs failed it is *reproduces*."""
    from tfx.book import claims

    def recs(stuck):
        out = []
        for s in range(5):
            out.append(_rec(s, 1.0, 1e-3, arch="B", lr="1e-3"))
            r = _rec(s, 5.5 if stuck or s < 4 else 4.8, 1e-3, arch="A", lr="1e-3")
            r.history.eval_loss = [5.5, 5.5] if stuck or s < 4 else [5.6, 4.8]
            out.append(r)
        return out

    c = Comparison("GV-2", "failure: A ends higher than B", "x", "arch", "A", "B", "higher", {"lr": "1e-3"},
                   part="failure")
    monkeypatch.setitem(evidence.BY_CLAIM, "GV-2", [c])
    assert evidence.status("GV-2", load=_load(recs(stuck=True))) == "reproduces"
    assert evidence.parts("GV-2", load=_load(recs(stuck=True))) == "failure: reproduces (1 of 1 reproduce)"
    slow = _load(recs(stuck=False))
    assert evidence.status("GV-2", load=slow) == "reproduces in part"
    assert evidence.parts("GV-2", load=slow) == (f"{evidence.BEHIND}: reproduces (1 of 1 reproduce) · failure: "
                                                 f"not resolved at this scale ({claims.UNSHOWN_FAILURE})")


def test_steps_to_the_learned_line_are_censored_at_the_budget_and_the_share_is_reported():
    """Time to target (issue 40): the first evaluation at or below the learned line
    (chance 6, floor 0: 1.5 + 0 = 4.5); a run that never gets there counts at its budget."""
    fast = _rec(0, 1.0, 1e-3)
    fast.history.eval_loss, fast.history.eval_step = [5.0, 4.0, 1.0], [50, 100, 150]
    slow = _rec(0, 5.0, 1e-3)
    slow.history.eval_loss, slow.history.eval_step = [5.9, 5.5, 5.0], [50, 100, 150]
    slow.train_config = SimpleNamespace(lr=1e-3, steps=200)
    assert evidence._steps_to_learned(fast) == 100.0
    assert evidence._steps_to_learned(slow) == 200.0  # never reached: censored at its budget
    assert evidence.reached([fast, slow]) == (1, 2)
    assert evidence.UNITS["steps to the learned line"] == "steps"


def test_seed_cells_give_each_seeds_end_loss_and_the_outcomes():
    assert evidence.seed_cells(_grid(BEST, FLOOR, seeds=3)[:3]) == ("2.50 / 2.51 / 2.50", "learned 3/3")


def test_a_control_moves_along_the_axes_it_is_given():
    """evidence.control(..., depth=…): the registered control at another point of the same sweep
    (a smaller profile's deepest depth); without a point, the registered one itself."""
    c = evidence.control("GV-2", "depth")
    assert c is evidence.CONTROLS[[k.experiment for k in evidence.CONTROLS].index("depth")]
    moved = evidence.control("GV-2", "depth", depth="2 layers")
    assert moved.point == {**c.point, "depth": "2 layers"} and moved.point != c.point
    with pytest.raises(ValueError, match="no single control"):
        evidence.control("GV-2", "nope")


def test_reading_gives_a_chapters_records_for_their_sweep_and_the_book_records_for_another():
    class Rec:
        experiment = "depth"

    mine = [Rec()]
    load = evidence.reading(mine)
    assert load("depth", "quick") is mine
    assert load("depth-rates", "quick") == evidence.records("depth-rates")


def test_gpu_effects_judge_only_the_comparisons_the_gpu_records_can_read(monkeypatch):
    from test_training_pages import _comparisons, _gpu_grid

    own, deep = _comparisons(monkeypatch)
    gpu = {"gpu": _gpu_grid({"A": 1e-3, "B": 1e-3}, {"A": 2.0, "B": 1.0})}
    items = evidence.gpu_effects(gpu, claims=("AD-3",))
    assert [c for c, _ in items] == [own]  # no depth 12 in these records: left out, not failed
    assert items[0][1].verdict == "reproduces" and items[0][1].mean == pytest.approx(1.0)
    assert evidence.gpu_effects({"gpu": []}, claims=("AD-3",)) == []
    assert evidence.gpu_effects(gpu | {"gpu": _gpu_grid({"A": 1e-3}, {"A": 1.0}, depths=("6", "12"))},
                                claims=("AD-3",)) == []  # B missing: no comparison reads


def test_registered_is_every_comparison_in_the_book_profile_and_what_a_smaller_grid_holds():
    every = evidence.BY_CLAIM["LG-1"]
    assert evidence.registered("LG-1") == every  # the registry's own grid: all, read or not
    assert evidence.registered("LG-1", "quick", load=lambda *_: []) == []
    assert evidence.evaluate("LG-1", "quick", load=lambda *_: []) == []
    with pytest.raises(ValueError, match="no registered comparison"):
        evidence.registered("NOPE-1")
