"""tfx.runs.curves: what a run's held-out loss curve shows (moved from the book's training pages)."""
from __future__ import annotations

import math
from types import SimpleNamespace

from tfx.runs import curves


def _rec(seed, loss, **point):
    h = SimpleNamespace(chance_loss=6.0, floor_loss=0.0, eval_loss=[5.0, loss], eval_step=[50, 100],
                        loss=[6.0, loss], step=[1, 100])
    return SimpleNamespace(seed=seed, point=point, history=h, train_config=SimpleNamespace(lr=1e-3))


def test_median_first_last_counts_the_runs_that_fell():
    first, last, fell = curves.median_first_last([_rec(0, 4.0), _rec(1, 6.0), _rec(2, 3.0)])
    assert (first, last, fell) == (5.0, 4.0, 2)


def test_dip_and_jump_split_the_evaluations_at_the_warmup():
    r = _rec(0, 2.0)
    r.history.eval_step, r.history.eval_loss = [10, 20, 30, 40], [4.0, 3.0, 3.5, 2.0]
    dip, jump, end = curves.dip_and_jump([r], warmup_steps=25)
    assert (dip, jump, end) == ([3.0], [3.5], [2.0])
    dip, jump, _ = curves.dip_and_jump([r], warmup_steps=100)  # no evaluation after the warmup
    assert dip == [2.0] and math.isnan(jump[0])


def test_steps_to_target_gives_none_for_a_run_that_never_gets_there():
    a, b = _rec(0, 0.5), _rec(1, 4.5)
    assert curves.steps_to_target([a, b], target=1.0) == {0: 100, 1: None}


def test_loss_at_step_reads_the_evaluation_at_or_before_the_step():
    """The held-out loss at the last evaluation at or before the step (not after it)."""
    runs = [_rec(0, 2.0), _rec(1, 1.0)]
    for r, losses in zip(runs, ([5.0, 4.0, 3.5, 2.0], [5.0, 3.0, 2.9, 1.0])):
        r.history.eval_step, r.history.eval_loss = [100, 400, 500, 1200], losses
    assert curves.loss_at_step(runs, 450) == [4.0, 3.0]
    assert curves.loss_at_step(runs, 1200) == [2.0, 1.0]


def test_identical_reruns_match_by_architecture_seed_and_rate_and_compare_every_logged_loss():
    def run(seed, lr, losses, arch="Post-LN"):
        r = _rec(seed, losses[-1], architecture=arch)
        r.train_config = SimpleNamespace(lr=lr)
        r.history.loss, r.history.eval_loss = losses, losses[-1:]
        return r

    earlier = [run(0, 1e-3, [3.0, 2.0]), run(1, 1e-3, [3.0, 2.5]), run(0, 3e-3, [3.0, 1.0])]
    again = [run(0, 1e-3, [3.0, 2.0]), run(1, 1e-3, [3.0, 2.4]), run(0, 1e-3, [3.0, 2.0], "Pre-LN")]
    assert curves.identical_reruns(again, earlier) == (1, 2)  # Pre-LN has no earlier run
    assert curves.identical_reruns(again, []) == (0, 0)
