"""What a run's held-out loss curve shows: read from recorded runs, nothing drawn.

    loss_at_step(runs, 400)          # each run's held-out loss at its last evaluation ≤ step 400
    steps_to_target(runs, 0.71)      # {seed: first evaluation step at or below 0.71}
    dip_and_jump(runs, 300)          # lowest loss while a warmup rises, highest after, last
    median_first_last(runs)          # median first and last held-out loss, how many fell
    identical_reruns(runs, earlier)  # how many reruns logged the same losses as their record
"""
from __future__ import annotations

import math

import numpy as np

from .sweep import first_step_below


def _evaluations(r) -> list:
    """``[(step, held-out loss)]`` of run ``r``'s evaluations."""
    return list(zip(r.history.eval_step, r.history.eval_loss))


def loss_at_step(runs, step: int) -> list:
    """Each run's held-out loss at its last evaluation at or before ``step``."""
    return [max((s, v) for s, v in _evaluations(r) if s <= step)[1] for r in runs]


def steps_to_target(runs, target) -> dict:
    """{seed: the first evaluation step at which the validation loss is at or below
    ``target``} (None for a run that never gets there)."""
    return {r.seed: first_step_below(r.history.eval_step, r.history.eval_loss, target) for r in runs}


def dip_and_jump(runs, warmup_steps):
    """Per run: the lowest validation loss while the rate still rises (before
    ``warmup_steps``), the highest once the peak rate is reached, and the last (NaN where a
    profile evaluates only at the end)."""
    dip = [min((v for s, v in _evaluations(r) if s < warmup_steps), default=math.nan) for r in runs]
    jump = [max((v for s, v in _evaluations(r) if s >= warmup_steps), default=math.nan) for r in runs]
    return dip, jump, [r.history.eval_loss[-1] for r in runs]


def median_first_last(runs):
    """Median validation loss at the first and the last evaluation of ``runs``, and in how
    many of them the last is the lower."""
    firsts = [r.history.eval_loss[0] for r in runs]
    lasts = [r.history.eval_loss[-1] for r in runs]
    fell = sum(last < first for first, last in zip(firsts, lasts))
    return float(np.median(firsts)), float(np.median(lasts)), fell


def identical_reruns(runs, earlier) -> tuple[int, int]:
    """(how many, of how many) of ``runs`` with a run in ``earlier`` of the same architecture,
    seed and rate log the same training and held-out losses at every step as it."""
    key = lambda r: (r.point.get("architecture"), r.seed, r.train_config.lr)  # noqa: E731
    before = {key(r): r for r in earlier}
    pairs = [(r, before[key(r)]) for r in runs if key(r) in before]
    same = sum(a.history.loss == b.history.loss and a.history.eval_loss == b.history.eval_loss
               for a, b in pairs)
    return same, len(pairs)
