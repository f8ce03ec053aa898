"""Paired effects with 95 % intervals: the instrument every training verdict of the book uses.

    e = effect(records, "placement", "Post-LN", "Pre-LN", expect="higher", warmup="none", lr="1e-2")
    e.verdict            # 'reproduces', 'reversed' or 'not resolved at this scale'
    e.describe()         # '+0.41 nats (95 % CI +0.22 to +0.60; 5 of 5 seeds higher)'
    at_best_rate(records, "placement", "Post-LN", "Pre-LN", expect="higher", warmup="none")
    unbracketed(records) # the groups whose best learning rate sits at the grid's edge

**Pairs.** A seed fixes both the initial weights and the order of the data, so seed *s* under
settings *a* and *b* is a matched pair, and d_s = value(a, s) − value(b, s) is the effect of the
setting with the luck of the draw held fixed. The value is the held-out loss at the end of
the run (:func:`end_loss`); a run that diverged counts as the loss it started from, L₀ (it
ended no better than an untrained model), never as infinity, as in Wortsman et al.'s LR
sensitivity (:mod:`tfx.runs.sensitivity`).

**Interval.** The effect is the mean of the n differences and its 95 % interval Student's t
on them (``scipy.stats.ttest_1samp(d).confidence_interval(0.95)``). Not a distribution-free
interval: with 5 pairs the exact signed-rank (or sign) test's smallest two-sided p is
2/2⁵ = 0.0625, so no 95 % interval from ranks can exclude 0 however large the effect. The t
interval assumes the differences scatter roughly normally; every figure of a comparison
shows each seed's difference, so a reader sees when one seed drives it.

**Verdict** (:data:`VERDICTS`), from the interval and the direction the claim predicts
(``expect="lower"``: *a* ends lower than *b*; ``"higher"``: higher):

    reproduces                   the interval excludes 0 on the predicted side
    reversed                     it excludes 0 on the other side
    not resolved at this scale   it contains 0

A claim that two settings end alike (``expect="equal"``, with a ``margin`` that counts as
alike, stated with the comparison) reproduces when the whole interval lies inside ±margin
(an equivalence test), is reversed when the whole interval lies outside it on one side, and
is not resolved otherwise.

**Each scheme at its own best rate.** Schemes whose weights differ in scale take different
steps at one learning rate (with Adam the relative step is lr / weight scale), so a fair
comparison puts each at the rate where it does best: :func:`best_rate` picks, per group of a
learning-rate grid, the rate with the lowest mean end loss over the seeds, and says whether
it is *bracketed* (a rate on each side of it was tried). A best rate at the grid's edge means
the grid must be extended (:func:`unbracketed` names the groups). Picking the best of the
grid by the same seeds favours every scheme alike (the winner's curse), so the comparison of
two schemes at their own best rates is fair; their absolute losses are a little optimistic.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from .outcome import judge
from .results import final_eval_loss, select, start_loss

VERDICTS = ("reproduces", "reversed", "not resolved at this scale")
EXPECT = ("lower", "higher", "equal")
CONFIDENCE = 0.95
MIN_SEEDS = 5  # the book's floor for a verdict (book/method.md, "Evidence that can fail")


def end_loss(rec) -> float:
    """What an effect compares: the held-out loss at the end of the run; the loss it started
    from (L₀, measured before the first update) if it diverged."""
    if judge(rec).verdict == "diverged":
        return start_loss(rec)
    return final_eval_loss(rec)


@dataclass(frozen=True)
class Effect:
    """A paired comparison of two settings over seeds (module docstring)."""

    a: str
    b: str
    expect: str  # 'lower' or 'higher': the side of b the claim predicts a on
    diffs: dict = field(repr=False)  # {seed: value(a) − value(b)}
    mean: float
    low: float  # the 95 % interval of the mean difference
    high: float
    p: float  # two-sided p of the one-sample t test (mean difference 0)
    unit: str = "nats"
    margin: float = 0.0  # expect='equal': how far apart still counts as alike

    @property
    def n(self) -> int:
        return len(self.diffs)

    @property
    def verdict(self) -> str:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return VERDICTS[2]
        if self.expect == "equal":
            if -self.margin <= self.low and self.high <= self.margin:
                return VERDICTS[0]
            if self.low > self.margin or self.high < -self.margin:
                return VERDICTS[1]
            return VERDICTS[2]
        sign = -1 if self.expect == "lower" else 1
        if sign * self.low > 0 and sign * self.high > 0:
            return VERDICTS[0]
        if sign * self.low < 0 and sign * self.high < 0:
            return VERDICTS[1]
        return VERDICTS[2]

    @property
    def enough_seeds(self) -> bool:
        return self.n >= MIN_SEEDS

    @property
    def agreeing(self) -> int:
        """How many seeds' differences lie on the predicted side of 0 (inside ±margin for 'equal')."""
        if self.expect == "equal":
            return sum(abs(d) <= self.margin for d in self.diffs.values())
        sign = -1 if self.expect == "lower" else 1
        return sum(sign * d > 0 for d in self.diffs.values())

    def describe(self, fmt: str = "{:+.2f}") -> str:
        """'+0.41 nats (95 % CI +0.22 to +0.60; 5 of 5 seeds higher)'."""
        unit = f" {self.unit}" if self.unit else ""
        ci = (f"95 % CI {fmt.format(self.low)} to {fmt.format(self.high)}" if math.isfinite(self.low)
              else "no interval from one seed")
        side = f"within ±{self.margin:g}" if self.expect == "equal" else self.expect
        few = "" if self.enough_seeds else f"; fewer than {MIN_SEEDS} seeds"
        return f"{fmt.format(self.mean)}{unit} ({ci}; {self.agreeing} of {self.n} seeds {side}{few})"


def paired(a_values: dict, b_values: dict, expect: str, a: str = "a", b: str = "b", unit: str = "nats",
           margin: float = 0.0) -> Effect:
    """The effect of ``a`` against ``b`` from ``{seed: value}`` on each side, over the seeds both
    have. ``expect``: 'lower' if the claim predicts a below b, 'higher' if above, 'equal' if
    within ±``margin``."""
    from scipy import stats

    if expect not in EXPECT:
        raise ValueError(f"expect={expect!r} must be one of {EXPECT}")
    if (expect == "equal") != (margin > 0):
        raise ValueError(f"margin={margin!r}: give a margin > 0 with expect='equal' and only then")
    seeds = sorted(set(a_values) & set(b_values))
    if not seeds:
        raise ValueError(f"no seed is on both sides: {a} has {sorted(a_values)}, {b} has {sorted(b_values)}")
    diffs = {s: float(a_values[s]) - float(b_values[s]) for s in seeds}
    bad = {s: d for s, d in diffs.items() if not math.isfinite(d)}
    if bad:
        raise ValueError(f"differences {bad} are not finite: give every run a finite value (end_loss does)")
    d = list(diffs.values())
    mean = statistics.fmean(d)
    if len(d) < 2:
        low = high = p = math.nan
    elif statistics.pstdev(d) <= 1e-12 * max(1.0, abs(mean)):  # no scatter: the interval is the point
        low = high = mean
        p = 0.0 if mean else 1.0
    else:
        res = stats.ttest_1samp(d, 0.0)
        ci = res.confidence_interval(CONFIDENCE)
        low, high, p = float(ci.low), float(ci.high), float(res.pvalue)
    return Effect(a, b, expect, diffs, mean, low, high, p, unit, margin)


def per_seed(records, value=end_loss, **point) -> dict:
    """``{seed: value(record)}`` for the records at ``point`` (``axis=variant`` pairs); a seed
    recorded twice is an error."""
    out = {}
    for r in select(records, **point):
        if r.seed in out:
            raise ValueError(f"seed {r.seed} is recorded twice at {point}: name every axis that varies")
        out[r.seed] = float(value(r))
    return out


def effect(records, axis: str, a: str, b: str, expect: str, value=end_loss, unit: str = "nats", **point) -> Effect:
    """The effect of variant ``a`` of ``axis`` against variant ``b``, at ``point``."""
    if axis in point:
        raise ValueError(f"axis={axis!r} is also fixed in point={point}: compare along a free axis")
    va, vb = per_seed(records, value, **{axis: a}, **point), per_seed(records, value, **{axis: b}, **point)
    for name, v in ((a, va), (b, vb)):
        if not v:
            raise ValueError(f"no records with {axis}={name!r} at {point}")
    return paired(va, vb, expect, a, b, unit)


# ---------------------------------------------------------------- learning-rate grids
def lr_axis(records) -> str:
    """The axis of ``records``' points that sets the learning rate ('lr' or 'train.lr')."""
    axes = {k for r in records for k in r.point}
    found = [k for k in ("lr", "train.lr") if k in axes]
    if len(found) != 1:
        raise ValueError(f"cannot tell the learning-rate axis among {sorted(axes)}: name it (axis=…)")
    return found[0]


@dataclass(frozen=True)
class BestRate:
    variant: str  # the lr axis's variant name at the best rate
    lr: float
    mean: float  # its mean end loss over the seeds
    bracketed: bool  # a lower and a higher rate were tried
    rates: tuple  # every rate of the group, ascending


def best_rate(records, value=end_loss, axis: str | None = None, **point) -> BestRate:
    """The rate of the learning-rate grid at ``point`` with the lowest mean ``value`` over seeds."""
    axis = axis or lr_axis(records)
    group = select(records, **point)
    if not group:
        raise ValueError(f"no records at {point}")
    by_variant: dict = {}
    for r in group:
        by_variant.setdefault(r.point[axis], []).append(r)
    rates = sorted((rs[0].train_config.lr, name) for name, rs in by_variant.items())
    means = {name: statistics.fmean(value(r) for r in by_variant[name]) for _, name in rates}
    i = min(range(len(rates)), key=lambda k: means[rates[k][1]])
    lr, name = rates[i]
    return BestRate(name, lr, means[name], 0 < i < len(rates) - 1, tuple(x for x, _ in rates))


def runs_at_best_rate(records, value=end_loss, **point) -> tuple[BestRate, list]:
    """(:func:`best_rate` of the group at ``point``, the group's runs at that rate)."""
    best = best_rate(records, value, **point)
    return best, select(records, **point, **{lr_axis(records): best.variant})


def groups(records, axis: str | None = None) -> list[dict]:
    """The points of ``records`` with the learning rate left free: one per curve."""
    axis = axis or lr_axis(records)
    seen = []
    for r in records:
        g = {k: v for k, v in r.point.items() if k != axis}
        if g not in seen:
            seen.append(g)
    return seen


def unbracketed(records, value=end_loss, axis: str | None = None) -> list[dict]:
    """The groups whose best rate sits at the edge of their grid (each with its best rate)."""
    axis = axis or lr_axis(records)
    out = []
    for g in groups(records, axis):
        b = best_rate(records, value, axis, **g)
        if not b.bracketed:
            out.append(g | {axis: b.variant})
    return out


def at_best_rate(records, axis: str, a: str, b: str, expect: str, value=end_loss, lr: str | None = None,
                 unit: str = "nats", **point) -> Effect:
    """The effect of ``a`` against ``b``, each at its own best rate (:func:`best_rate`). The
    returned Effect's ``a`` and ``b`` name the rates: 'Post-LN @ 1e-3'."""
    lr = lr or lr_axis(records)
    sides = []
    for name in (a, b):
        best = best_rate(records, value, lr, **{axis: name}, **point)
        sides.append((f"{name} @ {best.variant}", per_seed(records, value, **{axis: name, lr: best.variant}, **point)))
    (na, va), (nb, vb) = sides
    return paired(va, vb, expect, na, nb, unit)


def best_rate_edge(records, **point) -> tuple | None:
    """(where, best variant, 'lowest' or 'highest') for the group at ``point`` when its best
    learning rate (:func:`best_rate`) sits at the edge of its grid, else None; ``where`` names
    the group by its point's other axes ('Post-LN · warmup')."""
    b = best_rate(records, **point)
    if b.bracketed:
        return None
    axis = lr_axis(records)
    where = " · ".join(str(v) for k, v in select(records, **point)[0].point.items() if k != axis)
    return where, b.variant, "lowest" if b.lr == min(b.rates) else "highest"


# ---------------------------------------------------------------- Adam's first steps (WU-3)
def wu3_effects(first, none, warm) -> dict:
    """WU-3's paired effects ``{"gradient": Effect, "update": Effect}``, seed by seed: how many
    more decades the medians of :func:`tfx.theory.adam.first_steps_falls` fall without warmup
    (``none``) than with it (``warm``); the claim predicts 'higher'."""
    from ..theory.adam import first_steps_falls

    falls = {w: first_steps_falls(first, w) for w in (none, warm)}
    return {what: paired({s: v[k] for s, v in falls[none].items()},
                         {s: v[k] for s, v in falls[warm].items()}, "higher",
                         a="no warmup", b="warmup", unit="decades")
            for k, what in enumerate(("gradient", "update"))}


def wu3_contrast(post: dict, pre: dict) -> dict:
    """Is WU-3's collapse Post-LN's? Per measure ("gradient", "update"), Post-LN's extra fall
    without warmup (:func:`wu3_effects`) minus Pre-LN's, paired by seed; 'higher' when the
    collapse is Post-LN's more than any Transformer's under Adam."""
    return {k: paired(post[k].diffs, pre[k].diffs, "higher", a="Post-LN", b="Pre-LN", unit="decades")
            for k in post}
