"""The tables every part of the book shares, built on one Markdown renderer
(:func:`tfx.book.notebook.md_table`).

    effects_table       paired effects (tfx.runs.effects), one row each: mean, 95 % interval,
                        seeds on the predicted side, verdict
    outcome_counts      'learned 4, still learning 1 of 5' (tfx.runs.outcome)
    outcome_table       those counts for every cell of a sweep's two axes
    seed_table          one value per seed, a row per setting
    sensitivity_table   the LR sensitivity (Wortsman et al. 2023, §3.1) of each variant
    gpu_records         a chapter's GPU records: provenance and tables, or one sentence
    effect_text         '-2.58 nats (95 % interval -2.61 to -2.55)': an effect in words
    label_table         recorded runs per label: outcomes, best held-out loss, BLEU

A chapter's own one-off table stays beside its figure in its part's pages module; a table two
parts show lives here, so that an effect looks the same on every page. Nothing here judges:
verdicts come from :mod:`tfx.runs.effects`, outcomes from :mod:`tfx.runs.outcome`.
"""
from __future__ import annotations

import math

import numpy as np

from ..runs import outcome, results, sensitivity
from .notebook import md_table


def cell(text) -> str:
    """Text made safe for a cell of a GFM table: a ``|`` (as in |g|) would end the cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


class Signed:
    """The book's number format for an effect: two decimals ('+1.23'), or two significant digits
    where two decimals would print a nonzero value as ±0.00 ('-0.0012')."""

    @staticmethod
    def format(x: float) -> str:
        if math.isfinite(x) and x != 0 and abs(x) < 0.005:
            return f"{x:+.2g}"
        return f"{x:+.2f}"


NO_INTERVAL = "— (one seed)"


def interval_text(e, fmt=Signed, none: str = NO_INTERVAL) -> str:
    """'-0.71 to -0.40': an effect's 95 % interval, or ``none`` where one seed gives none."""
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return none
    return f"{fmt.format(e.low)} to {fmt.format(e.high)}"


def effects_table(items, head: str = "comparison", fmt=Signed) -> str:
    """A Markdown table of paired effects: one row per ``(label, Effect)`` (a label may be a
    registered :class:`tfx.book.evidence.Comparison`, shown by what it ``says``) with the mean
    difference and its unit, the 95 % interval, how many seeds fall on the side the claim
    predicts, and the verdict (:data:`tfx.runs.effects.VERDICTS`). ``fmt``: anything with a
    ``format`` method (default :class:`Signed`)."""
    items = list(items)
    if not items:
        raise ValueError("items must hold at least one (label, Effect) pair")
    rows = []
    for label, e in items:
        unit = f" {e.unit}" if e.unit else ""
        side = f"within ±{e.margin:g}" if e.expect == "equal" else e.expect
        rows.append([cell(getattr(label, "says", label)), f"{fmt.format(e.mean)}{unit}",
                     interval_text(e, fmt), f"{e.agreeing} of {e.n} ({side})", e.verdict])
    return md_table([head, "mean difference", "95 % interval", "seeds on the predicted side",
                     "verdict"], rows)


def outcome_counts(rs) -> str:
    """'still learning 2, did not learn 3 of 5': the outcome counts of runs ``rs``."""
    s = outcome.summarize(rs)
    return ", ".join(f"{k} {v}" for k, v in s["counts"].items() if v) + f" of {s['n']}"


def outcome_table(records, rows: str, cols: str, col_names=None) -> str:
    """A Markdown table of :func:`outcome_counts` for every variant of ``rows`` × ``cols``."""
    order = lambda axis: list(dict.fromkeys(r.point.get(axis) for r in records))  # noqa: E731
    row_names, cols_ = order(rows), order(cols)
    heads = [cell((col_names or {}).get(c, c)) for c in cols_]
    return md_table([rows, *heads], [
        [cell(rn), *(outcome_counts(results.select(records, **{rows: rn, cols: cn})) or "—"
                     for cn in cols_)] for rn in row_names])


def seed_table(rows: dict, first: str = "", spec: str | dict = "{:.2f}") -> str:
    """A Markdown table with one row per entry of ``rows`` (``{label: {seed: value}}`` or
    ``{label: [values in seed order]}``) and one column per seed, "–" where a seed has no
    value; ``spec``: one format for every row, or ``{label: format}`` (others "{:.2f}")."""
    rows = {k: (v if isinstance(v, dict) else dict(enumerate(v))) for k, v in rows.items()}
    seeds = sorted({s for v in rows.values() for s in v})
    fmt = spec if isinstance(spec, dict) else dict.fromkeys(rows, spec)
    return md_table([first, *(f"seed {s}" for s in seeds)],
                    [[label, *(fmt.get(label, "{:.2f}").format(per_seed[s]) if s in per_seed else "–"
                               for s in seeds)] for label, per_seed in rows.items()])


def median_range(s: dict) -> str:
    """'0.25 (0.25–0.28)': the median (range) of a :func:`tfx.runs.sensitivity.summarize`."""
    return f"{s['median']:.2f} ({s['low']:.2f}–{s['high']:.2f})"


def sensitivity_summary(recs) -> str:
    """'0.25 (0.25–0.28)': the LR sensitivity of runs ``recs``, median over seeds (range)."""
    return median_range(sensitivity.summarize(recs))


def learned_at(recs) -> str:
    """'3, 4, 4': at how many learning rates each seed learned (its window,
    :func:`tfx.runs.sensitivity.windows`)."""
    return ", ".join(map(str, sensitivity.windows(recs).values()))


def sensitivity_table(records, axis: str, variants, **point) -> str:
    """One row per variant of ``axis`` (at ``point``): the LR sensitivity over the seeds, median
    (range) (:func:`tfx.runs.sensitivity.summarize`), the median best held-out loss, and at how
    many learning rates each seed learned (:func:`learned_at`)."""
    rows = []
    for v in variants:
        recs = results.select(records, **point, **{axis: v})
        s = sensitivity.summarize(recs)
        best = np.median([x["best"] for x in s["per_seed"].values()])
        rows.append([cell(v), median_range(s), f"{best:.2f}", learned_at(recs)])
    return md_table([axis, "LR sensitivity (nats), median (range)", "best held-out loss (nats), median",
                     "learning rates learned at, per seed"], rows)


def gpu_records(gpu: dict, axes: dict) -> str:
    """The body of a chapter's GPU section. ``gpu``: ``{experiment: full-profile records}``;
    ``axes``: ``{experiment: (rows, cols)}`` of its table. Where records exist: their provenance
    (device, code version, date; fixtures say so) and their tables, one per variant of the first
    axis that is neither the rows nor the columns; where none do, one sentence."""
    out, missing = [], []
    for name, recs in gpu.items():
        if not recs:
            missing.append(name)
            continue
        rows, cols = axes[name]
        out.append(f"**{name}**: {len(recs)} runs · {results.provenance(recs)}")
        other = next((a for a in recs[0].point if a not in (rows, cols)), None)
        for v in sorted({r.point[other] for r in recs}) if other else [None]:
            part = results.select(recs, **{other: v}) if other else recs
            out.append((f"{results.axis_name(other)} **{v}**\n\n" if other else "")
                       + results.table(part, rows=rows, cols=cols))
    if missing:
        out.append(f"GPU results for {', '.join(missing)} are not in yet; the box at the "
                   "end of the page says how to run them.")
    return "\n\n".join(out)


def rate_name(lr: float) -> str:
    """A learning rate as the experiment files write it: 3e-3, 1e-1."""
    return f"{lr:.0e}".replace("e-0", "e-").replace("e+0", "e+")


def effect_text(e, fmt=Signed) -> str:
    """'−2.58 nats (95 % interval −2.61 to −2.55)': a paired effect's mean and interval, the
    words a sentence needs (the verdict is said by the sentence, not pasted into it)."""
    unit = f" {e.unit}" if e.unit else ""
    ci = f"95 % interval {interval_text(e, fmt)}" if math.isfinite(e.low) else "one seed: no interval"
    return f"{fmt.format(e.mean)}{unit} ({ci})"


def label_table(recs) -> str | None:
    """A Markdown table of recorded runs, one row per label (:func:`tfx.runs.sweep.by_label`):
    each run's outcome, best held-out loss and BLEU; None when there are none."""
    from ..runs import sweep

    if not recs:
        return None
    rows = []
    for label, runs in sweep.by_label(recs).items():
        best = [min(r.history.eval_loss) if r.history.eval_loss else float("nan") for r in runs]
        bleu = [r.bleu for r in runs if r.bleu is not None]
        rows.append([label, ", ".join(r.status for r in runs),
                     ", ".join(f"{b:.3f}" for b in best),
                     ", ".join(f"{b:.1f}" for b in bleu) or "—"])
    return md_table(["variant", "outcomes", "best held-out loss", "BLEU"], rows)
