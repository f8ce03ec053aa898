"""Spikes measured against the same run left alone (SZ-1..3; ``experiments/spike-zoo.toml``).

A spike-zoo run and its control share the seed, so the same initial weights and the same
batches up to the injection: the difference of their training losses step by step,

    excess(t) = L_run(t) − L_control(t),

is what the injection (and the guard) did, with the batch-to-batch noise of the loss largely
cancelled. The loss logged at step s is the loss of step s's batch *before* step s's update:
it shows what that batch was (a repeated-n-gram batch, a reset stream's first batch), not what
the step did to the model. What an injection at step s did shows from step s + 1, so every
window starts there:

    height    max excess(t) over t ∈ [s + 1, s + HEIGHT_WINDOW]        how high the spike rose
    cost      mean excess(t) over t ∈ [s + 1, s + COST_WINDOW]         the loss it cost, on average
    recovery  the first t > s at which the mean of excess over [t, t + SMOOTH) ≤ RECOVERED,
              as steps after s + 1 (0 for a run the injection did not hurt); a run that never gets there is **censored** at its last step
              (it counts as recovering then, so a recovery time is a lower bound where
              the second value of :func:`recovery` says it did not)

A run that diverged counts as its start loss L₀ at every step it did not reach (it ended no
better than an untrained model), as :func:`tfx.runs.effects.end_loss` counts it. The windows
and the threshold are set here, before the spike zoo's records exist.

The control of a run is the run of the same seed and learning rate with no injection and no
guard: the grid point ``cause = NO_CAUSE``, ``guard = NO_GUARD`` of the experiment.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..theory import optimiser as O
from .outcome import judge

HEIGHT_WINDOW = 20
COST_WINDOW = 100
SMOOTH = 10
RECOVERED = 0.05  # nats

CAUSE, NO_CAUSE = "cause", "none"  # the spike zoo's grid: what was injected, and the run left alone
GUARD, NO_GUARD = "guard", "no guard"


def _losses(h) -> dict:
    return dict(zip(h.step, h.loss))


def _start_loss(h) -> float:
    return h.start_loss if math.isfinite(h.start_loss) else h.loss[0]


def excess(h, control, start: int, length: int) -> list[float]:
    """L_h(t) − L_control(t) for each step t in [start, start + length) both logged (module
    docstring); a step ``h`` never reached counts at its start loss L₀."""
    mine, theirs = _losses(h), _losses(control)
    last = max(h.step, default=0)
    out = []
    for t in range(start, start + length):
        if t not in theirs:
            continue
        if t in mine:
            out.append(mine[t] - theirs[t])
        elif t > last and h.status == "diverged":
            out.append(_start_loss(h) - theirs[t])
    if not out:
        raise ValueError(f"no step of [{start}, {start + length}) is logged in both runs: log every step "
                         "(log_every = 1) in a spike zoo")
    return out


def height(h, control, at: int) -> float:
    """How high the spike rose above the control (nats): the largest excess in HEIGHT_WINDOW steps."""
    return max(excess(h, control, at + 1, HEIGHT_WINDOW))


def cost(h, control, at: int) -> float:
    """What the spike cost (nats): the mean excess over the COST_WINDOW steps from the injection."""
    return statistics.fmean(excess(h, control, at + 1, COST_WINDOW))


def recovery(h, control, at: int) -> tuple[int, bool]:
    """(steps after ``at`` + 1, the first step an injection at ``at`` can show on, until the
    excess's SMOOTH-step mean is ≤ RECOVERED; whether it got there); censored at the run's last
    step when it did not."""
    steps = sorted(set(h.step) & set(control.step))
    first, last = at + 1, max(control.step)
    for t in (s for s in steps if s >= first):
        window = excess(h, control, t, SMOOTH)
        if len(window) == SMOOTH and statistics.fmean(window) <= RECOVERED:
            return t - first, True
    return last - first, False


def injection_step(records) -> int:
    """The step every injected run of ``records`` was injected at (one per spike zoo)."""
    steps = {r.train_config.inject_step for r in records if r.train_config.inject_step}
    if len(steps) != 1:
        raise ValueError(f"the injected runs were injected at steps {sorted(steps)}: a spike zoo injects at one step")
    return steps.pop()


def control_of(records, rec):
    """The run ``rec`` is measured against: same seed and grid point, no injection, no guard."""
    from .results import select

    point = {**rec.point, CAUSE: NO_CAUSE, GUARD: NO_GUARD}
    found = [r for r in select(records, **point) if r.seed == rec.seed]
    if len(found) != 1:
        raise ValueError(f"{len(found)} control runs for {rec.label} seed {rec.seed} at {point}: need exactly one")
    return found[0]


def summary(records, **point) -> dict:
    """What the runs of ``records`` at grid ``point`` (one cause, guard and rate; every seed)
    show against their controls: the median ``height`` and ``cost``, how many ``recovered`` of
    ``n`` runs (:func:`recovery`), and what the guard did,
    summed over the seeds: steps ``clipped`` and ``skipped`` out of ``steps_done``, and
    ``rollbacks``."""
    from .results import select

    runs = select(records, **point)
    if not runs:
        raise ValueError(f"no runs at {point}: the points of a spike zoo name a cause, a guard and a rate")
    at = injection_step(records)
    pairs = [(r.history, control_of(records, r).history) for r in runs]
    rec = [recovery(h, c, at) for h, c in pairs]
    return {"n": len(runs),
            "height": statistics.median(height(h, c, at) for h, c in pairs),
            "cost": statistics.median(cost(h, c, at) for h, c in pairs),
            "recovered": sum(ok for _, ok in rec),
            "clipped": sum(h.steps_clipped for h, _ in pairs),
            "skipped": sum(h.steps_skipped for h, _ in pairs),
            "steps_done": sum(h.steps_done for h, _ in pairs),
            "rollbacks": sum(e["what"] == "rollback" for h, _ in pairs for e in h.interventions)}


# ---------------------------------------------------------------- loss spikes in the LM runs (OP-1)
def _readable(r) -> bool:
    """A run whose spikes can be read: it did not diverge and logged an update norm every step."""
    return judge(r).verdict != "diverged" and len(r.history.update_norm) == len(r.history.loss)


def spike_precursors(records) -> tuple[dict, dict, dict]:
    """Per seed, pooled over its runs that did not diverge (:func:`tfx.theory.optimiser.
    update_before_spikes`, each run from the end of its warmup): ({seed: mean relative update
    norm in the steps before a loss spike}, {seed: its mean over every step}, {seed: number of
    spikes}). A seed with no spike is left out of the first."""
    before, overall, count = {}, {}, {}
    for seed in sorted({r.seed for r in records}):
        b_sum, n_spikes, all_vals = 0.0, 0, []
        for r in records:
            if r.seed != seed or not _readable(r):
                continue
            h = r.history
            b, a, n = O.update_before_spikes(h.loss, h.update_norm, after=r.train_config.warmup)
            if n:
                b_sum, n_spikes = b_sum + b * n, n_spikes + n
            if math.isfinite(a):
                all_vals.append(a)
        count[seed] = n_spikes
        overall[seed] = float(np.mean(all_vals)) if all_vals else math.nan
        if n_spikes:
            before[seed] = b_sum / n_spikes
    return before, overall, count


@dataclass(frozen=True)
class SharedSpikes:
    """OP-1's bad-batch control (:func:`shared_spikes`): ``shared`` of ``total`` loss spikes fall
    on a step where a run of another recipe with the same seed (the same batch) also spikes;
    ``chance`` is the share expected if spikes fell independently of the batch, and ``low`` to
    ``high`` the exact (Clopper-Pearson) 95 % interval of the observed share."""

    shared: int
    total: int
    chance: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        """'reproduces' (spikes come with the batch) when the whole interval lies above chance,
        'reversed' when below, else 'not resolved at this scale'."""
        if self.total and self.low > self.chance:
            return "reproduces"
        if self.total and self.high < self.chance:
            return "reversed"
        return "not resolved at this scale"


def shared_spikes(records) -> SharedSpikes:
    """OP-1's bad-batch control over the runs that did not diverge, each from the end of its
    warmup. Spikes shared across recipes come with the data, not with one optimiser's state.

    By chance, a spike of run r at step t is shared with probability
    p = 1 − Π_o (1 − n_o/E_o) over the runs o of the same seed and another recipe (n_o loss
    spikes among its E_o steps that can hold one); ``chance`` is the mean p over the spikes,
    set against the observed share's interval (``scipy.stats.binomtest``)."""
    runs = {}
    for r in records:
        if _readable(r):
            after = r.train_config.warmup
            onsets = O.loss_spikes(r.history.loss, after=after)
            eligible = len(r.history.loss) - max(after, O.SPIKE_WINDOW + 1)
            runs[id(r)] = (r, {r.history.step[i] for i in onsets}, len(onsets) / max(eligible, 1))
    shared = total = 0
    chance = []
    for r, steps, _ in runs.values():
        others = [o for o in runs.values() if o[0].seed == r.seed and o[0].point["recipe"] != r.point["recipe"]]
        for step in steps:
            total += 1
            shared += any(step in o[1] for o in others)
            chance.append(1 - math.prod(1 - o[2] for o in others))
    if not total:
        return SharedSpikes(0, 0, math.nan, math.nan, math.nan)
    ci = stats.binomtest(shared, total).proportion_ci(0.95)
    return SharedSpikes(shared, total, float(np.mean(chance)), float(ci.low), float(ci.high))


def spike_example(records):
    """The run (not diverged) with the most loss spikes after its warmup: the page's example."""
    def n_spikes(r):
        return len(O.loss_spikes(r.history.loss, after=r.train_config.warmup)) if _readable(r) else -1

    return max(records, key=n_spikes)


def largest_rise(history) -> float:
    """The largest rise of a run's training loss above its own running minimum (nats): the
    size of its worst loss spike, with no control run to compare against."""
    import numpy as np

    loss = np.asarray(history.loss, dtype=float)
    return float(np.max(loss - np.minimum.accumulate(loss)))


def largest_rises(records) -> dict:
    """:func:`largest_rise` over runs ``records``: its ``min`` and ``max`` and the ``seed`` of
    the largest."""
    rises = {r.seed: largest_rise(r.history) for r in records}
    return {"max": max(rises.values()), "min": min(rises.values()), "seed": max(rises, key=rises.get)}
