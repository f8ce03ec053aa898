"""How a training run ended: the book's one outcome rule.

    judge(record_or_history)   # Outcome(verdict='learned', loss=1.31, floor=1.07, chance=3.20, …)
    summarize(records)         # per seed, median, range and counts of a group of runs

Every chapter, explorer, claim test and the claims page call this; none defines its own
threshold. The rule reads the **held-out** loss L at the end of the run (the validation
loss at the last evaluation), against two levels of the task:

  chance C  the best loss of a prediction that ignores the input (``task.chance_loss``)
  floor  F  the best loss any model can reach (``task.floor_loss``: above 0 on a task
            with label noise; 0 where it is not known)

and says one of

  diverged       the loss became non-finite, or the trainer stopped the run because the
                 loss rose far beyond where it started (``TrainConfig.diverge_loss``); the
                 loss measured before the first update is the start, never a divergence
  learned        L closed at least LEARNED_SHARE of the gap from chance to the floor:
                 (C − L) / (C − F) ≥ 1/4, and, on a translation task (BLEU measured), its
                 greedy translations of held-out sentences score BLEU ≥ MIN_BLEU
  still learning the run has not reached that line (on translation: by loss or by BLEU), but
                 its held-out loss is still falling:
                 the last evaluation is more than STILL_FALLING (1 %) below the last one at
                 least a fifth of the run earlier (:func:`still_falling`). Slow, not failed:
                 the run was stopped, not stuck
  did not learn  anything else: the run finished short of the line (or translated nothing of
                 its source) with its held-out loss flat or rising over the last fifth (a
                 plateau). Only this and ``diverged`` are failures

The continuous numbers stay beside the verdict: ``loss``, ``excess = L − F`` (the quality:
how far above the best achievable) and ``gap_closed = (C − L)/(C − F)``.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

OUTCOMES = ("learned", "still learning", "did not learn", "diverged")
FAILED = ("did not learn", "diverged")  # the outcomes that may be called a failure
# The share of the chance→floor gap a run must close, held out, to have learned. A quarter,
# not a half: on real text the floor (the text's own entropy) is unknown, so F = 0 stands in
# for it, and a model that translates (BLEU 16 at 4.1 nats against a unigram chance of 6.3)
# has closed only 35 % of that gap. A target-side language model that ignores its source
# closes 17 % after 150 steps and more with longer training, so on translation the rule also
# asks for BLEU: such a model scores < 1. On the synthetic tasks a run that learned ends far
# past the share.
LEARNED_SHARE = 0.25
MIN_BLEU = 1.0  # translation: held-out BLEU below this means the output ignores the source
# Slow or stuck? A run short of the line is still learning while its held-out loss fell by more
# than STILL_FALLING (relative) over the last LAST_SHARE of its steps: 1 % is above the jitter of
# a run on a plateau (the held-out batches are the same at every evaluation, so only the weights
# move the number), and a fifth of the run spans at least one earlier evaluation in every book
# profile (eval_every ≤ steps / 5).
STILL_FALLING = 0.01
LAST_SHARE = 0.2


@dataclass(frozen=True)
class Outcome:
    verdict: str  # one of OUTCOMES
    loss: float  # held-out loss at the end (nan for a run that diverged before it)
    chance: float
    floor: float
    reason: str = ""
    step: int = 0  # where a diverged run diverged (0 otherwise)

    @property
    def excess(self) -> float:
        """Held-out loss above the floor: the run's quality (lower is better)."""
        return self.loss - self.floor

    @property
    def gap_closed(self) -> float:
        """(C − L) / (C − F): 0 at chance, 1 at the floor."""
        return (self.chance - self.loss) / (self.chance - self.floor)


def _history(run):
    return getattr(run, "history", run)  # a Record, or a History itself


def judge(run) -> Outcome:
    """The outcome of one run (a :class:`tfx.runs.results.Record` or a
    :class:`tfx.runs.train.History`), by the rule in this module's docstring."""
    h = _history(run)
    chance = float(h.chance_loss)
    floor = float(getattr(h, "floor_loss", 0.0) or 0.0)
    if not chance > floor:
        raise ValueError(f"chance_loss={chance!r} must exceed floor_loss={floor!r} to judge a run")
    loss = float(h.eval_loss[-1]) if h.eval_loss else math.nan
    if h.status == "diverged":
        return Outcome("diverged", loss, chance, floor, h.reason, h.diverged_step)
    if not math.isfinite(loss):
        why = "no held-out loss was measured" if not h.eval_loss else f"held-out loss {loss} is not finite"
        return Outcome("diverged", loss, chance, floor, why, h.steps_done)
    out = Outcome("learned", loss, chance, floor)
    bleu = list(getattr(h, "bleu", []) or [])
    ignores_source = bool(bleu) and not bleu[-1] >= MIN_BLEU
    if out.gap_closed >= LEARNED_SHARE and not ignores_source:
        return out
    short = (f"BLEU {bleu[-1]:.2f} < {MIN_BLEU:g} on held-out sentences: the translations ignore the source "
             f"(held-out loss {loss:.4g}, chance {chance:.4g})" if ignores_source else
             f"held-out loss {loss:.4g} closed {out.gap_closed:.0%} of the gap from chance {chance:.4g} to "
             f"the floor {floor:.4g} (learned: ≥ {LEARNED_SHARE:.0%})")
    # short of the line either way: slow if the held-out loss still falls, failed if it does not
    fall = still_falling(h)
    if fall is not None:
        return Outcome("still learning", loss, chance, floor,
                       f"{short}, and still falling: {fall:.1%} lower than at step {_ref_step(h)}")
    return Outcome("did not learn", loss, chance, floor, short)


def _ref_step(h):
    """The last evaluation at least LAST_SHARE of the run before the final one (None if none)."""
    steps = list(getattr(h, "eval_step", []) or [])
    if len(steps) < 2:
        return None
    end = steps[-1]
    earlier = [s for s in steps[:-1] if s <= end - LAST_SHARE * end]
    return earlier[-1] if earlier else None


def still_falling(run) -> float | None:
    """How much the held-out loss fell over the last fifth of the run, as a share of where it
    was, (L_ref − L_end) / L_ref, if that is more than STILL_FALLING; else None (flat, rising,
    or too few evaluations to tell). L_ref is the last evaluation at or before step
    (1 − LAST_SHARE)·end."""
    h = _history(run)
    ref = _ref_step(h)
    if ref is None:
        return None
    end, start = float(h.eval_loss[-1]), float(h.eval_loss[list(h.eval_step).index(ref)])
    if not (math.isfinite(end) and math.isfinite(start)) or start <= 0:
        return None
    fall = (start - end) / start
    return fall if fall > STILL_FALLING else None


def learned_level(chance: float, floor: float = 0.0) -> float:
    """The held-out loss a run must end at or below to have learned (for drawing the line)."""
    return floor + (1 - LEARNED_SHARE) * (chance - floor)


def rejudge(history) -> None:
    """Set a finished run's ``status`` and ``reason`` by this rule, in place (records made
    under an older rule read alike); a diverged or unfinished run is left as it is."""
    if history.status in ("diverged", "running"):
        return
    out = judge(history)
    history.status, history.reason = out.verdict, out.reason


def learned(run) -> bool:
    return judge(run).verdict == "learned"


def summarize(runs) -> dict:
    """A group of runs (the seeds of one setting): ``verdicts`` and ``losses`` per run (in
    the order given), ``counts`` per outcome, ``n``, and over the runs that did not diverge
    the ``median``, ``low`` and ``high`` held-out loss and ``median_excess`` (nan if none)."""
    outs = [judge(r) for r in runs]
    ok = [o.loss for o in outs if o.verdict != "diverged"]
    return {
        "verdicts": [o.verdict for o in outs],
        "losses": [o.loss for o in outs],
        "counts": {v: sum(o.verdict == v for o in outs) for v in OUTCOMES},
        "n": len(outs),
        "median": statistics.median(ok) if ok else math.nan,
        "low": min(ok) if ok else math.nan,
        "high": max(ok) if ok else math.nan,
        "median_excess": statistics.median(o.excess for o in outs if o.verdict != "diverged") if ok else math.nan,
    }


def describe(runs) -> str:
    """'learned 3/3 · held-out loss 1.21 (1.19–1.25)': the verdict counts and the numbers."""
    s = summarize(runs)
    counts = ", ".join(f"{v} {k}/{s['n']}" for v, k in s["counts"].items() if k)
    if math.isnan(s["median"]):
        return counts
    return f"{counts} · held-out loss {s['median']:.3f} ({s['low']:.3f}–{s['high']:.3f})"
