"""The practice page's gallery of failures: which committed runs show each shape, and their
curves (``book/26-failure-gallery.ipynb``).

    picks = failure_gallery()            # {"diverged": Pick, "did not learn": …, …}
    fig, axes = gallery_figure(P, picks["spiking"])

Each shape is read by the book's own rules, never by a threshold of this module: the outcome
of a run is :func:`tfx.runs.outcome.judge`'s, and a loss spike is chapter 18's
(:func:`tfx.theory.optimiser.loss_spikes`, through :func:`tfx.runs.spikes.spike_example`).
What this module chooses is only *which* run of each kind to show:

  diverged        the diverged run that lasted longest before it diverged, among the runs
                  whose loss at step 0 passed the first check (:func:`passes_start_check`):
                  a run that starts far above ln V shows a bug of scale, not a divergence
  did not learn   the failed run (a plateau) that ended closest to the chance loss
  still learning  the run short of the learned line whose held-out loss fell the most over
                  its last fifth
  spiking         the run (not diverged) with the most loss spikes after its warmup
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter

from ..runs import outcome, results
from ..runs.spikes import spike_example
from ..theory import optimiser as O
from .plot import GREYS, OUTCOME_COLORS, figure, level

# Where each shape is looked for: the committed sweep whose runs show it.
SOURCES = {
    "diverged": "t-fixup",  # chapter 8: schemes without LayerNorm, up to a high learning rate
    "did not learn": "long-runs",  # chapter 12: 6+6 Post-LN and Pre-LN, 1,200 steps
    "still learning": "long-runs",
    "spiking": "op-warmup-decay",  # chapters 18 and 20: the language model's recipes
}
KINDS = tuple(SOURCES)
# The first check: a freshly initialised model predicts nearly uniformly, so its loss at step 0
# is near ln V. Random logits of moderate size put it somewhat above; a loss above twice ln V
# means logits far too large at initialisation (a scale bug), which this rule flags.
START_FAR = 2.0


def vocab(record) -> int:
    """V: the number of tokens the output layer predicts over."""
    return int(record.config.tgt_vocab)


def uniform_loss(v: int) -> float:
    """The loss of a uniform prediction over ``v`` tokens: ln V nats per token."""
    return math.log(v)


def start_ratio(record) -> float:
    """The loss measured before the first update, over ln V."""
    return float(record.history.start_loss) / uniform_loss(vocab(record))


def passes_start_check(record) -> bool:
    """Whether the run's step-0 loss is within ``START_FAR`` × ln V (the first check)."""
    r = start_ratio(record)
    return math.isfinite(r) and r <= START_FAR


def spikes(record) -> list:
    """The steps at which the training loss spikes after the warmup (chapter 18's rule)."""
    h = record.history
    return [h.step[i] for i in O.loss_spikes(h.loss, after=record.train_config.warmup)]


def _verdict(record) -> str:
    return outcome.judge(record).verdict


def pick_diverged(records):
    """The diverged run (step-0 check passed) that lasted longest; ties: the lowest seed."""
    runs = [r for r in records if _verdict(r) == "diverged" and passes_start_check(r)]
    if not runs:
        raise ValueError("no diverged run that passed the step-0 check")
    return max(runs, key=lambda r: (outcome.judge(r).step, -r.seed))


def pick_stuck(records):
    """The run that did not learn and ended closest to the chance loss."""
    runs = [r for r in records if _verdict(r) == "did not learn"]
    if not runs:
        raise ValueError("no run that did not learn")
    return min(runs, key=lambda r: (abs(outcome.judge(r).gap_closed), r.seed))


def pick_slow(records):
    """The run still learning whose held-out loss fell the most over its last fifth."""
    runs = [r for r in records if _verdict(r) == "still learning"]
    if not runs:
        raise ValueError("no run still learning")
    return max(runs, key=lambda r: (outcome.still_falling(r) or 0.0, -r.seed))


def pick_spiking(records):
    """Chapter 18's example: the run (not diverged) with the most loss spikes."""
    run = spike_example(records)
    if not spikes(run):
        raise ValueError("no run with a loss spike")
    return run


PICKERS = {"diverged": pick_diverged, "did not learn": pick_stuck,
           "still learning": pick_slow, "spiking": pick_spiking}


@dataclass(frozen=True)
class Pick:
    kind: str  # one of KINDS
    experiment: str
    record: object  # a tfx.runs.results.Record

    @property
    def label(self) -> str:
        return self.record.label

    @property
    def seed(self) -> int:
        return self.record.seed

    @property
    def verdict(self) -> str:
        return _verdict(self.record)


def failure_gallery(load=results.load, profile: str = "book") -> dict:
    """{kind: Pick} for each of KINDS, from the committed records of ``SOURCES``
    (``load(experiment, profile)``, e.g. :func:`tfx.runs.results.load`)."""
    cache: dict = {}
    out = {}
    for kind, name in SOURCES.items():
        if name not in cache:
            cache[name] = load(name, profile)
        out[kind] = Pick(kind, name, PICKERS[kind](cache[name]))
    return out


def grad_norm_rise(record) -> float:
    """Decades between the run's first gradient norm and its largest finite one."""
    g = np.asarray(record.history.grad_norm, dtype=float)
    g = g[np.isfinite(g) & (g > 0)]
    return float(np.log10(g.max() / g[0])) if g.size else math.nan


def gallery_figure(P, pick):
    """Left: the run's training loss (line), held-out loss (dots), the chance loss and the
    learned line; right: its gradient norm (before clipping) on a log scale. A diverged run
    ends in ×; loss spikes are marked by dashed lines on both panels."""
    r, h = pick.record, pick.record.history
    o = outcome.judge(r)
    fig, (ax_l, ax_g) = figure(P, ncols=2, height=3.0, task=r.task)
    c = OUTCOME_COLORS.get(pick.kind, GREYS["ink"])
    n = min(len(h.step), len(h.loss))
    steps, loss = np.asarray(h.step[:n]), np.asarray(h.loss[:n], dtype=float)
    ax_l.plot(steps, loss, color=c, lw=1.0, label="training loss")
    if h.eval_loss:
        ax_l.plot(h.eval_step, h.eval_loss, "o", color=GREYS["ink"], ms=3, label="held-out loss")
    level(ax_l, "chance", o.chance)
    level(ax_l, "learned", outcome.learned_level(o.chance, o.floor), "learned line")
    g = np.asarray(h.grad_norm[:n], dtype=float)
    ax_g.plot(steps[: len(g)], g, color=c, lw=1.0)
    ax_g.set_yscale("log")
    if pick.kind == "diverged" and n:
        ax_l.plot(steps[-1], loss[-1], "x", color=c, ms=9, mew=2)
        ax_l.set_yscale("log")
        ax_l.yaxis.set_major_formatter(ScalarFormatter())
        ax_l.yaxis.set_minor_formatter(NullFormatter())
    for t in spikes(r) if pick.kind == "spiking" else ():
        for ax in (ax_l, ax_g):
            ax.axvline(t, ls="--", color=GREYS["guide"], lw=0.8)
    if pick.kind == "spiking":  # the spikes sit above a falling curve: show them, not step 0
        after = steps >= r.train_config.warmup
        lo, hi = np.nanmin(loss[after]), np.nanmax(loss[after])
        ax_l.set_ylim(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo))
    ax_l.set(xlabel="step", ylabel="loss (nats/token)", title=f"{pick.label}, seed {pick.seed}")
    ax_g.set(xlabel="step", ylabel="gradient norm", title=f"ended: {o.verdict}")
    ax_l.legend(fontsize=7, loc="best")
    return fig, (ax_l, ax_g)


# ---------------------------------------------------------------- a run broken on purpose
ZOO = "spike-zoo"  # chapter 21: causes injected halfway into a healthy language-model run


def broken_pick(records, cause: str = "rate bump", guard: str = "no guard", lr: str | None = None):
    """(run, its control) of the spike zoo (:mod:`tfx.runs.spikes`) showing ``cause`` under
    ``guard`` at ``lr`` (default: the zoo's highest rate): the seed whose spike cost is the
    median of the cell's (the lower middle one for an even count), so the figure shows a
    typical run, not the worst."""
    from ..runs import spikes

    lr = lr or max({r.point["lr"] for r in records}, key=float)
    runs = results.select(records, cause=cause, guard=guard, lr=lr)
    if not runs:
        raise ValueError(f"no spike-zoo runs at cause={cause!r}, guard={guard!r}, lr={lr!r}")
    at = spikes.injection_step(records)
    ranked = sorted(runs, key=lambda r: (spikes.cost(r.history, spikes.control_of(records, r).history, at), r.seed))
    run = ranked[(len(ranked) - 1) // 2]
    return run, spikes.control_of(records, run)


def broken_figure(P, run, control, at: int):
    """Left: the training loss of ``run`` and of its ``control`` (the same seed left alone,
    grey) from step 1; right: their gradient norms (before clipping), log scale; the injection
    step ``at`` dashed on both."""
    fig, (ax_l, ax_g) = figure(P, ncols=2, height=3.0, task=run.task)
    for rec, color, label in ((control, GREYS["guide"], "the same seed, left alone"),
                              (run, OUTCOME_COLORS["spiking"], run.point.get("cause", run.label))):
        h = rec.history
        n = min(len(h.step), len(h.loss), len(h.grad_norm))
        ax_l.plot(h.step[:n], h.loss[:n], color=color, lw=0.9, label=label)
        ax_g.plot(h.step[:n], h.grad_norm[:n], color=color, lw=0.9)
    for ax in (ax_l, ax_g):
        ax.axvline(at, ls="--", color=GREYS["reference"], lw=0.8)
    lo = min(min(control.history.loss), min(run.history.loss))
    hi = max(v for v in run.history.loss[at - 1:] if math.isfinite(v))
    ax_l.set_ylim(lo - 0.2, max(hi, lo + 3.0) + 0.3)  # the fall after the first steps, and the whole spike
    ax_g.set_yscale("log")
    ax_l.set(xlabel="step", ylabel="loss (nats/token)", title=f"η = {run.point.get('lr')}, seed {run.seed}")
    ax_g.set(xlabel="step", ylabel="gradient norm")
    ax_l.legend(fontsize=7, loc="upper right")
    return fig, (ax_l, ax_g)
