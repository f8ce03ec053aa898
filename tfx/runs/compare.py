"""Two settings of a sweep, compared seed by seed.

    per_seed(records, placement="Post-LN", warmup="none", lr="1e-2")   # {seed: held-out loss}
    paired(records, "warmup", "none", "warmup", placement="Post-LN", lr="1e-2")
    warmup_need(records, placement="Post-LN", lr="1e-2")

A seed fixes both the initial weights and the order of the data, so the same seed under two
settings is a matched pair: their difference is the effect of the setting, with the luck of
the draw held fixed. A verdict "B ends lower than A" is then "in every seed", which three
seeds can contradict; a difference of medians cannot be contradicted so plainly. Verdicts
about whether a run trained come from the one outcome rule, :mod:`tfx.runs.outcome`.
"""
from __future__ import annotations

import math

from . import outcome
from .results import final_eval_loss, select


def per_seed(records, value=final_eval_loss, **point) -> dict:
    """``{seed: value(record)}`` for the records at ``point`` (``axis=variant`` pairs); a
    diverged run's value is NaN, whatever it recorded."""
    return {r.seed: (math.nan if outcome.judge(r).verdict == "diverged" else float(value(r)))
            for r in select(records, **point)}


def paired(records, axis: str, a: str, b: str, value=final_eval_loss, **point) -> dict:
    """``{seed: value(a) − value(b)}`` over the seeds run under both variants ``a`` and ``b``
    of ``axis`` (positive: ``a`` ended higher). A seed where either run diverged gives NaN."""
    if axis in point:
        raise ValueError(f"axis={axis!r} is also fixed in point={point}: compare along a free axis")
    va = per_seed(records, value, **{axis: a}, **point)
    vb = per_seed(records, value, **{axis: b}, **point)
    if not va or not vb:
        missing = a if not va else b
        raise ValueError(f"no records with {axis}={missing!r} at {point}")
    return {s: va[s] - vb[s] for s in sorted(va) if s in vb}


def warmup_need(records, none: str = "none", warm: str = "warmup", axis: str = "warmup", **point) -> dict:
    """Does the setting at ``point`` need warmup? (Xiong et al. 2020's claim, WU-1.)

    Returns ``learned_without`` / ``learned_with`` (seeds that learned by the outcome rule),
    ``n`` (seeds), ``gain`` (``{seed: loss without − loss with}``, positive: warmup ended
    lower; a diverged run counts as +inf against a finished one) and two verdicts:

    * ``worse_without``: every seed ended higher without warmup than with it;
    * ``fails_without``: no seed learned without warmup while at least one learned with it.
    """
    def learned(variant):
        return sum(outcome.learned(r) for r in select(records, **{axis: variant}, **point))

    without = per_seed(records, **{axis: none}, **point)
    with_ = per_seed(records, **{axis: warm}, **point)
    if not without or not with_:
        raise ValueError(f"no records with {axis}={none if not without else warm!r} at {point}")
    gain = {}
    for s in sorted(without):
        if s in with_:
            x, y = without[s], with_[s]
            gain[s] = (math.inf if math.isnan(x) and not math.isnan(y)
                       else -math.inf if math.isnan(y) and not math.isnan(x) else x - y)
    lw, lv = learned(none), learned(warm)
    return {"learned_without": lw, "learned_with": lv, "n": len(gain), "gain": gain,
            "worse_without": bool(gain) and all(g > 0 for g in gain.values()),
            "fails_without": lw == 0 < lv}
