"""What did a run's probes show over training? Reading ``tfx.runs.probes``' records back.

    steps, logits = traces.trace(record.history, "attn_logit_max")   # largest logit of any layer
    traces.separation_step(failed, learned, "attn_entropy_min")       # when the groups part (EC-1)

Kept apart from the probes themselves: reading records back is not part of the code that
trains a run (outside the trainer's imports, :mod:`tfx.runs.codeversion`), so changing it
leaves recorded runs current.
"""
from __future__ import annotations

import torch


TRACES = {  # name: (History field of x, History field of y, reduction over modules (and heads))
    "attn_logit_max": ("probe_step", "attn_logit_max", "max"),  # the largest logit of any layer
    "attn_entropy_min": ("probe_step", "attn_entropy", "min"),  # the lowest entropy of any head
    "log_z": ("step", "log_z", None),  # the output's mean log Z
    "eval_loss": ("eval_step", "eval_loss", None),  # held-out loss
    "loss": ("step", "loss", None),  # training loss
}


def trace(history, name: str) -> tuple[list, list]:
    """(steps, values) of one recorded probe of a History, reduced over its modules (and heads)
    as ``TRACES`` says: the curve a chapter plots. A probe that was not recorded gives ([], [])."""
    if name not in TRACES:
        raise ValueError(f"name={name!r}: choose one of {', '.join(TRACES)}")
    xf, yf, how = TRACES[name]
    xs, rows = list(getattr(history, xf)), list(getattr(history, yf))
    n = min(len(xs), len(rows))
    if how is None:
        return xs[:n], [float(v) for v in rows[:n]]
    reduce = {"max": max, "min": min}[how]
    flat = lambda r: [float(v) for v in torch.as_tensor(r, dtype=torch.float64).flatten()]  # noqa: E731
    return xs[:n], [reduce(flat(r)) if len(flat(r)) else float("nan") for r in rows[:n]]


def stream_profile(history, row: int = -1) -> tuple[list, list]:
    """(sub-layer names, variances) of the stream entering each residual sub-layer, bottom to
    top, at logged step number ``row`` (default: the last) of a run recorded with probes:
    ``stream_var`` without the stacks' outputs (``tfx.runs.probes``)."""
    keep = [k for k, n in enumerate(history.stream_names) if not n.endswith("output")]
    return ([history.stream_names[k] for k in keep],
            [float(history.stream_var[row][k]) for k in keep])


def separation_step(below, above, name: str):
    """The first recorded step at which every run of ``below`` has a lower value of probe
    ``name`` (:func:`trace`) than every run of ``above``, and stays so at every later step
    both record; None if that never holds (or either group is empty). Compares runs with runs:
    no threshold on a value. EC-1 asks whether failed runs' lowest head entropy separates from
    learned runs' before their held-out losses do."""
    if not below or not above:
        return None
    tb = [dict(zip(*trace(r.history if hasattr(r, "history") else r, name))) for r in below]
    ta = [dict(zip(*trace(r.history if hasattr(r, "history") else r, name))) for r in above]
    steps = sorted(set.intersection(*(set(t) for t in tb + ta)))
    apart = [max(t[s] for t in tb) < min(t[s] for t in ta) for s in steps]
    for k, s in enumerate(steps):
        if all(apart[k:]):
            return s
    return None


HELD_SHARE = 0.5  # a fix holds a probe near 0 when it removes at least half its distance from 0


def pull_to_zero(fixed, unfixed, name: str = "log_z") -> list:
    """Per pair of runs (same seed and learning rate, one with a fix, one without): the share of
    the distance from 0 that the fix removed from probe ``name`` at the end,
    1 − |v_fix| / |v_none| (1: held at 0; 0: no effect; negative: pushed away). ZL-1 asks this
    of the z-loss and the output's log Z; :data:`HELD_SHARE` is where "held near 0" begins."""
    def key(r):
        return (r.seed, r.train_config.lr)
    none = {key(r): r for r in unfixed}
    out = []
    for r in fixed:
        if key(r) in none:
            v_fix = trace(r.history, name)[1][-1]
            v_none = trace(none[key(r)].history, name)[1][-1]
            out.append(1 - abs(v_fix) / abs(v_none) if v_none else float("nan"))
    return out


def log_z_ends(records, recipes, axis: str = "recipe") -> dict:
    """Per recipe, at its own best rate: the median over seeds of log Z at the first and the
    last logged step, and that rate's name."""
    import numpy as np

    from . import effects

    out = {}
    for name in recipes:
        best, runs = effects.runs_at_best_rate(records, **{axis: name})
        z = [trace(r.history, "log_z")[1] for r in runs]
        out[name] = {"start": float(np.median([v[0] for v in z])), "end": float(np.median([v[-1] for v in z])),
                     "rate": best.variant}
    return out
