"""Learning-rate sensitivity: the book's stability instrument (Wortsman et al. 2023).

    curves(records)            # {seed: (lrs, held-out losses)} of one recipe, a curve per seed
    lr_sensitivity(lrs, losses, start)
    summarize(records)         # per seed: sensitivity, best lr, best loss; median and range
    centred_sensitivity(records, steps)   # the same, over a window centred on the recipe's optimum

Small models at high learning rates show the instabilities of large ones, so a recipe is
read by its final loss against a log grid of learning rates η: a flat, low curve is a
stable recipe; a curve that rises steeply beside a narrow optimum is a fragile one. One
number sums a curve up (Wortsman et al., "Small-scale proxies for large-scale Transformer
training instabilities", arXiv 2309.14322, §3.1):

    LR sensitivity = mean over η of min(L(η), L₀)  −  min over η of L(η)

with L(η) the final (held-out) loss at η and L₀ the loss at initialisation: a run that ends
worse than it started, or diverges, counts as L₀ (never as infinity). 0 means every learning
rate of the grid ends as well as the best one.
"""
from __future__ import annotations

import math
import statistics

import numpy as np

from .effects import best_rate, end_loss
from .outcome import judge, learned
from .results import final_eval_loss, select, start_loss


def curve_loss(rec) -> float:
    """What a curve shows for one run: the held-out loss it ends at
    (:func:`tfx.runs.results.final_eval_loss`), nan for a run that diverged (by
    :func:`tfx.runs.outcome.judge`). Not ``Record.final_loss``, the *training* loss over the
    last 10 % of steps."""
    return math.nan if judge(rec).verdict == "diverged" else final_eval_loss(rec)


def best_eval_loss(rec) -> float:
    """The lowest held-out loss over the run's evaluations (nan for a diverged run)."""
    if judge(rec).verdict == "diverged":
        return math.nan
    vals = [v for v in rec.history.eval_loss if math.isfinite(v)]
    return min(vals) if vals else math.nan


def lr_sensitivity(lrs, losses, start: float) -> float:
    """Wortsman et al.'s LR sensitivity of one curve: mean of min(L(η), L₀) − its minimum.
    A nan loss (a diverged run) counts as L₀. ``lrs`` only fixes which points belong to the
    curve (they must be distinct)."""
    lrs, losses = list(lrs), list(losses)
    if len(lrs) != len(losses) or len(set(lrs)) != len(lrs) or not lrs:
        raise ValueError(f"lrs={lrs!r} must be distinct learning rates, one per loss ({len(losses)} losses)")
    if not math.isfinite(start):
        raise ValueError(f"start={start!r} must be the finite loss at initialisation")
    capped = [min(v, start) if math.isfinite(v) else start for v in losses]
    return sum(capped) / len(capped) - min(capped)


def curves(records, value=curve_loss) -> dict:
    """``{seed: (lrs ascending, values)}`` for the records of one recipe (one setting of every
    axis but the learning rate); ``value``: :func:`curve_loss` or :func:`best_eval_loss`."""
    out: dict = {}
    for r in sorted(records, key=lambda r: (r.seed, r.train_config.lr)):
        lrs, vals = out.setdefault(r.seed, ([], []))
        lrs.append(r.train_config.lr)
        vals.append(value(r))
    return out


def median_curve(records, value=curve_loss) -> tuple[list, list]:
    """(lrs, median over seeds at each lr) of one recipe; nan where every seed diverged."""
    seeds = curves(records, value)
    if not seeds:
        return [], []
    lrs = next(iter(seeds.values()))[0]
    cols = [[vals[i] for _, vals in seeds.values()] for i in range(len(lrs))]
    return lrs, [statistics.median(v for v in col if math.isfinite(v))
                 if any(math.isfinite(v) for v in col) else math.nan for col in cols]


def windows(records) -> dict:
    """``{seed: number of learning rates the run learned at}``: each seed's window."""
    return {seed: len(v["learned_lrs"]) for seed, v in summarize(records)["per_seed"].items()}


def summarize(records, value=curve_loss) -> dict:
    """One recipe's LR sensitivity: per seed ``sensitivity``, ``best_lr`` and ``best`` loss
    (``value`` of each run), ``start`` (L₀) and ``learned_lrs``, the learning rates at which
    the run learned (:func:`tfx.runs.outcome.learned`): the recipe's window. Over the seeds
    the ``median``, ``low`` and ``high`` sensitivity. Every seed must have run the same
    learning rates.

    Read the sensitivity with the window and the best loss beside it: a recipe that learns
    at no rate of the grid has a flat curve, hence a small sensitivity, and is no stable
    recipe."""
    per_seed = {}
    grids = set()
    for seed, (lrs, vals) in curves(records, value).items():
        grids.add(tuple(lrs))
        start = statistics.median(start_loss(r) for r in records if r.seed == seed)
        capped = [v if math.isfinite(v) else math.inf for v in vals]
        i = min(range(len(vals)), key=capped.__getitem__)
        window = sorted(r.train_config.lr for r in records if r.seed == seed and learned(r))
        per_seed[seed] = {"sensitivity": lr_sensitivity(lrs, vals, start), "best_lr": lrs[i],
                          "best": vals[i], "start": start, "learned_lrs": window}
    if len(grids) > 1:
        raise ValueError(f"records: the seeds ran different learning rates {sorted(grids)}; "
                         "a sensitivity compares curves over the same grid")
    sens = [s["sensitivity"] for s in per_seed.values()]
    return {"per_seed": per_seed, "median": statistics.median(sens) if sens else math.nan,
            "low": min(sens, default=math.nan), "high": max(sens, default=math.nan),
            "lrs": list(next(iter(grids), ()))}


def best_index(records) -> tuple[list, int]:
    """(the recipe's learning rates ascending, the index of its best one), by the book's one rule
    for a best rate, :func:`tfx.runs.effects.best_rate` (the lowest mean end loss over seeds, a
    diverged run counting as L₀): a window is centred where the verdicts read the recipe."""
    if not records:
        raise ValueError("records: no runs to read a best learning rate from")
    best = best_rate(records, end_loss)
    return list(best.rates), best.rates.index(best.lr)


def widest_centred_steps(recipes) -> int:
    """The most grid steps k such that the window of k rates either side of every recipe's best
    rate (:func:`best_index`) lies on its grid: the widest window :func:`centred_sensitivity` can
    use for all of them alike. 0 when some recipe's best rate sits at its grid's edge."""
    ks = []
    for recs in recipes:
        lrs, i = best_index(recs)
        ks.append(min(i, len(lrs) - 1 - i))
    if not ks:
        raise ValueError("recipes: none given")
    return min(ks)


def centred_sensitivity(records, steps: int, value=curve_loss, clip: bool = False) -> dict:
    """``{seed: LR sensitivity}`` of one recipe over the ``2·steps + 1`` rates of its grid centred
    on its best rate (:func:`best_index`, the same window for every seed). Over a fixed grid the
    sensitivity also measures where the optimum sits: the same curve shifted half a decade left
    loses a rate on one side and gains one on the other. Centred on each recipe's optimum, two
    recipes are compared over the same span of rates around their own best. A window that leaves
    the grid is an error (extend the grid, or narrow the window: :func:`widest_centred_steps`),
    unless ``clip``: then it is cut at the grid's edge, one-sided, as over a fixed grid (for a
    smoke test's two-rate grid, whose optimum is always at an edge; never for a book verdict,
    whose grids bracket every optimum)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps={steps!r} must be a whole number of grid steps ≥ 1")
    lrs, i = best_index(records)
    if not clip and (i - steps < 0 or i + steps >= len(lrs)):
        raise ValueError(f"records: the best rate {lrs[i]:g} has fewer than {steps} grid rate(s) on one side "
                         f"(grid {', '.join(f'{v:g}' for v in lrs)}): extend the grid or narrow the window")
    lo, hi = max(0, i - steps), min(len(lrs), i + steps + 1)
    out = {}
    for seed, (_, vals) in curves(records, value).items():
        start = statistics.median(start_loss(r) for r in records if r.seed == seed)
        out[seed] = lr_sensitivity(lrs[lo:hi], vals[lo:hi], start)
    return out


def best_log10_lr(lrs, losses, start: float) -> float:
    """log10 of one curve's best learning rate, read between the grid's points (Yang et al.
    2022 mark each width's optimum on such curves, yang2022tp5 Fig. 1): the vertex of the
    parabola through the lowest point (x₁, L₁) and its two neighbours in x = log10 η,

        x* = x₁ − ½ · [(x₁−x₀)²(L₁−L₂) − (x₁−x₂)²(L₁−L₀)] / [(x₁−x₀)(L₁−L₂) − (x₁−x₂)(L₁−L₀)]

    which lies between the neighbours' midpoints with x₁ because L₁ is the lowest. A loss is
    capped at L₀ (``start``) and a diverged run counts as L₀, as in :func:`lr_sensitivity`. A
    best point at the grid's edge gives that edge (the grid does not bracket it: extend it)."""
    lrs, losses = list(lrs), list(losses)
    if len(lrs) != len(losses) or len(lrs) < 3 or sorted(set(lrs)) != lrs:
        raise ValueError(f"lrs={lrs!r} must be ≥ 3 distinct ascending learning rates, one per loss")
    capped = [min(v, start) if math.isfinite(v) else start for v in losses]
    i = min(range(len(lrs)), key=capped.__getitem__)
    if i in (0, len(lrs) - 1):
        return math.log10(lrs[i])
    (x0, x1, x2), (f0, f1, f2) = (math.log10(v) for v in lrs[i - 1:i + 2]), capped[i - 1:i + 2]
    den = (x1 - x0) * (f1 - f2) - (x1 - x2) * (f1 - f0)
    if den == 0:  # three equal losses: no curvature to read
        return x1
    return x1 - 0.5 * ((x1 - x0) ** 2 * (f1 - f2) - (x1 - x2) ** 2 * (f1 - f0)) / den


def best_rates(records, value=curve_loss) -> dict:
    """``{seed: log10 of its best learning rate}`` (:func:`best_log10_lr`) for one recipe."""
    out = {}
    for seed, (lrs, vals) in curves(records, value).items():
        start = statistics.median(start_loss(r) for r in records if r.seed == seed)
        out[seed] = best_log10_lr(lrs, vals, start)
    return out


def best_rate_interval(records) -> tuple[float, float, float, int]:
    """One recipe's best learning rate over its seeds: (10^mean, 10^low, 10^high, n) of the
    seeds' log10 best rates (:func:`best_rates`), the interval Student's t at 95 %
    (scipy.stats), as every effect of the book."""
    import numpy as np
    from scipy import stats

    x = list(best_rates(records).values())
    m = float(np.mean(x))
    if len(x) < 2:
        return 10 ** m, math.nan, math.nan, len(x)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=m, scale=stats.sem(x)) if np.std(x) > 0 else (m, m)
    return 10 ** m, 10 ** lo, 10 ** hi, len(x)


def centred_window(*sweeps) -> dict:
    """The centred LR sensitivity's window (:func:`widest_centred_steps`) over the recipes of
    each sweep: ``steps`` grid steps either side of each optimum (at least one: 0 means the
    window is cut at the grid's edge) and the ``decades`` of learning rate they span, to a tenth
    (a half-decade grid steps 0.48 or 0.52). Sweeps whose windows differ raise ValueError (a
    page says one window)."""
    from . import effects, results

    windows = set()
    for recs in sweeps:
        lr = effects.lr_axis(recs)
        k = widest_centred_steps([results.select(recs, **g) for g in effects.groups(recs, lr)])
        lrs = sorted({r.train_config.lr for r in recs})
        windows.add((max(k, 1), round(max(k, 1) * math.log10(lrs[1] / lrs[0]), 1)))
    if len(windows) != 1:
        raise ValueError(f"the sweeps' centred windows differ: {sorted(windows)}")
    steps, decades = windows.pop()
    return {"steps": steps, "decades": decades}


def lowest_rate_above(records, level: float):
    """The name of the lowest learning rate of ``records`` at which every seed ends above
    ``level`` (:func:`tfx.runs.effects.end_loss`; e.g. the chance loss), or None."""
    from .results import select

    rates = [name for _, name in sorted({r.train_config.lr: r.point["lr"] for r in records}.items())]
    return next((lr for lr in rates if all(end_loss(r) > level for r in select(records, lr=lr))), None)


def final_losses_capped(records, top: float) -> list:
    """Each run's held-out loss at the end (:func:`curve_loss`), capped at ``top``; a diverged
    run at ``top``: what a figure of final losses draws."""
    return [top if r.status == "diverged" else min(curve_loss(r), top) for r in records]


def stability_map(records, archs, b2s, lrs) -> dict:
    """{architecture: (mean final loss grid [lr × β₂], marks grid, failed cells)}: the final
    loss capped at chance (:func:`final_losses_capped`); a cell is marked D if a seed diverged,
    N if a seed did not learn (:func:`tfx.runs.outcome.judge`)."""
    chance = records[0].history.chance_loss
    out = {}
    for a in archs:
        grid = np.full((len(lrs), len(b2s)), np.nan)
        marks = [["" for _ in b2s] for _ in lrs]
        for i, lr in enumerate(lrs):
            for j, b2 in enumerate(b2s):
                rs = select(records, architecture=a, beta2=b2, **{"train.lr": lr})
                grid[i, j] = np.mean(final_losses_capped(rs, chance))
                verdicts = [judge(r).verdict for r in rs]
                marks[i][j] = "D" if "diverged" in verdicts else "N" if "did not learn" in verdicts else ""
        out[a] = (grid, marks, sum(bool(m) for row in marks for m in row))
    return out
