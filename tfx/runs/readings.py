"""What did a sweep's runs read, seed by seed? The readings the language-model chapters
(14-17) set side by side: a probe at a recorded step, the stream at the top, the best loss
over the rates, DyT's saturation, and the groups of runs EC-1 and ZL-1 compare. Read from
records (:mod:`tfx.runs.results`); nothing here lays anything out.

    effects.per_seed(recs, readings.probe("log_z"), fix="z-loss", lr="1e-2")  # {seed: log Z}
"""
from __future__ import annotations

import numpy as np

from . import effects, outcome, results, sensitivity, traces

def median(values) -> float:
    return float(np.median(list(values)))


def probe(name: str, at: int = -1):
    """A record's probe ``name`` (:func:`tfx.runs.traces.trace`) at recorded step ``at``."""
    return lambda r: traces.trace(r.history, name)[1][at]


def top_stream(r) -> float:
    """The variance of the stream entering the top sub-layer at the end."""
    return traces.stream_profile(r.history)[1][-1]


def stream_growth(r) -> tuple:
    """(top ÷ bottom variance of the stream at the end, (the largest growth across one
    sub-layer, the sub-layer it enters))."""
    names, v = traces.stream_profile(r.history)
    return v[-1] / v[0], max((v[k + 1] / v[k], names[k]) for k in range(len(v) - 1))


def saturated(row: int):
    """A record's % of units saturated in its most saturated DyT at probe ``row``."""
    return lambda r: 100 * max(r.history.dyt_saturated[row])


def best_losses(recs, **point) -> dict:
    """Per seed: the held-out loss at the best learning rate (``sensitivity.summarize``)."""
    per = sensitivity.summarize(results.select(recs, **point))["per_seed"]
    return {s: v["best"] for s, v in per.items()}


def best_and_high_rate(lrecs, lr_names) -> tuple:
    """(the no-fix runs' best rate (``effects.best_rate``), the lowest rate above it at which
    no seed without a fix learned by the outcome rule, else the top rate)."""
    best_k = lr_names.index(effects.best_rate(lrecs, fix="no fix").variant)
    above = [lr for lr in lr_names[best_k + 1:] if not any(
        outcome.learned(r) for r in results.select(lrecs, fix="no fix", lr=lr))]
    return lr_names[best_k], (above[0] if above else lr_names[-1])


def log_z_pull(lrecs, best_lr: str, high_lr: str) -> dict:
    """ZL-1's readings: the share of log Z's distance from 0 the z-loss removed, per pair
    (``traces.pull_to_zero``); per seed the z-loss's cost in best loss and log Z at the end
    (at ``best_lr`` and ``high_lr``) and at the first probe."""
    z, none = best_losses(lrecs, fix="z-loss"), best_losses(lrecs, fix="no fix")
    log_z = {"start (first probe)": effects.per_seed(lrecs, probe("log_z", 0), fix="no fix", lr=best_lr)}
    for lr in (best_lr, high_lr):
        for f in ("no fix", "z-loss"):
            log_z[f"{f}, lr {lr}"] = effects.per_seed(lrecs, probe("log_z"), fix=f, lr=lr)
    return {"pulled": traces.pull_to_zero(results.select(lrecs, fix="z-loss"),
                                          results.select(lrecs, fix="no fix")),
            "cost": {s: z[s] - none[s] for s in z if s in none}, "log_z": log_z}


def entropy_collapse(lrecs, lr_names, best_lr: str) -> dict:
    """EC-1's groups among the no-fix runs, by outcome (:func:`tfx.runs.outcome.judge`):
    ``failed``, ``learned``, ``slow`` (still learning above ``best_lr``); the steps at which
    the slow runs' lowest head entropy and held-out loss part from the learned runs'
    (``traces.separation_step``, no threshold), the probes' spacing, and the slow runs' rates
    over the learned ones' (lowest, highest)."""
    nofix = results.select(lrecs, fix="no fix")
    verdict = {id(r): outcome.judge(r).verdict for r in nofix}
    learned = [r for r in nofix if verdict[id(r)] == "learned"]
    slow = [r for r in nofix if verdict[id(r)] == "still learning"
            and lr_names.index(r.point["lr"]) > lr_names.index(best_lr)]
    lr_slow, lr_learned = [r.train_config.lr for r in slow], [r.train_config.lr for r in learned]
    ent_every, eval_every = (s[1] - s[0] if len(s) > 1 else None for s in (
        traces.trace(nofix[0].history, "attn_entropy_min")[0], nofix[0].history.eval_step))
    return {"nofix": nofix, "verdict": verdict, "learned": learned, "slow": slow,
            "failed": [r for r in nofix if verdict[id(r)] in outcome.FAILED],
            "ent_step": traces.separation_step(slow, learned, "attn_entropy_min"),
            "loss_step": traces.separation_step(learned, slow, "eval_loss"),
            "ent_every": ent_every, "eval_every": eval_every,
            "rate_ratio": (min(lr_slow) / max(lr_learned), max(lr_slow) / min(lr_learned))
            if slow and learned else None}


def top_streams(precs, names, lrs) -> dict:
    """The placements sweep's top stream per seed: ``top[(scheme, lr)]``, ``growth[scheme]``
    (at the highest rate ÷ the lowest), ``ratio[(scheme, lr)]`` (÷ Pre-LN's), ``best_loss``
    per scheme (:func:`best_losses`) and ``best_rate`` (``effects.best_rate``: lowest mean)."""
    top = {(n, lr): effects.per_seed(precs, top_stream, placement=n, lr=lr) for n in names for lr in lrs}
    return {"top": top, "growth": {n: {s: top[n, lrs[-1]][s] / lo for s, lo in
                                       top[n, lrs[0]].items() if s in top[n, lrs[-1]]}
                                   for n in names},
            "ratio": {(n, lr): {s: v / top["Pre-LN", lr][s] for s, v in top[n, lr].items()
                                if s in top["Pre-LN", lr]} for n in names[1:] for lr in lrs},
            "best_loss": {n: best_losses(precs, placement=n) for n in names},
            "best_rate": {n: effects.best_rate(precs, placement=n) for n in names}}


def norm_sweep(nrecs, names) -> dict:
    """Per norm: its LR sensitivity (``sensitivity.summarize``), best loss per seed, best rate
    (``effects.best_rate``) and % saturated in the most saturated DyT at the end of each
    seed's run at that rate (DyT variants only)."""
    summ = {f: sensitivity.summarize(results.select(nrecs, norm=f)) for f in names}
    best_rate = {f: effects.best_rate(nrecs, norm=f).variant for f in names}
    return {"summary": summ, "best_rate": best_rate,
            "best": {f: [v["best"] for v in summ[f]["per_seed"].values()] for f in names},
            "saturated": {f: effects.per_seed(nrecs, saturated(-1), norm=f, lr=best_rate[f])
                          for f in names if f == "DyT" or f.startswith("DyT, α")}}
