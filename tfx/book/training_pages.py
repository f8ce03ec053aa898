"""The figures, tables and verdict lines of the training chapters (11, 12 and 13: warmup,
Adam and depth). What they compute lives in the runs and theory wings (:mod:`tfx.runs.curves`,
:mod:`tfx.runs.effects`, :mod:`tfx.runs.sensitivity`, :mod:`tfx.theory.adam`); the tally of
verdicts is :func:`tfx.book.claims.verdict_tally`."""
from __future__ import annotations

import math

import numpy as np

from ..runs import curves, effects, outcome, results, sensitivity
from ..theory import adam, dependency
from .plot import (BETA2_COLORS, GREYS, OPTIMISER_SETTING_COLORS, color, figure, label_color,
                   level, loss_levels, lr_curves, seed_curves, warmup_colors)
from .notebook import glue, glue_figure, glue_sizes, md_table  # noqa: F401 (chapters call pages.glue_figure, pages.glue_sizes)
from .gpu_half import records_profile
from .tables import Signed, cell, interval_text, learned_at, outcome_counts

# --------------------------------------------------------------------------- effects
def glue_described(name: str, e, verdict: str | None = None, fmt: str = "{:+.2f}") -> None:
    """Glue ``name`` (:meth:`tfx.runs.effects.Effect.describe` with ``fmt``), ``name-mean`` and
    ``name-verdict``: ``verdict`` where given (the registry's reading,
    :meth:`tfx.book.evidence.Comparison.verdict`), else the effect's own."""
    glue(name, e.describe(fmt))
    glue(f"{name}-mean", e.mean)
    glue(f"{name}-verdict", verdict or e.verdict)


def effects_sentence(opening: str, items, fmt=Signed, interval: bool = True) -> str:
    """One sentence from ``(phrase, Effect)`` items: '<opening> <phrase> by +0.23 nats (95 % CI
    +0.14 to +0.31; as the paper predicts); …' (no interval if ``interval`` is false)."""
    say = {"reproduces": "as the paper predicts", "reversed": "the opposite of the paper",
           "not resolved at this scale": "not resolved at this scale"}
    parts = []
    for phrase, e in items:
        unit = f" {e.unit}" if e.unit else ""
        ci = f"95 % CI {interval_text(e, fmt)}; " if interval else ""
        parts.append(f"{phrase} by {fmt.format(e.mean)}{unit} ({ci}{say[e.verdict]})")
    if not parts:
        raise ValueError("items must hold at least one (phrase, Effect) pair")
    return f"{opening} " + "; ".join(parts) + "."


# --------------------------------------------------------------------------- chapter 11
def radam_figure(P, t, betas2=(0.95, 0.98, 0.999)):
    """Left: Var[ψ] against ρ, exact and first order (eq-wu-var). Right: RAdam's r_t."""
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=3.4)
    rho = np.geomspace(2.05, 2000, 400)
    ax1.plot(rho, adam.adaptive_lr_variance(rho, exact=True), color=GREYS["ink"], label="exact")
    ax1.plot(rho[rho > 4.2], adam.adaptive_lr_variance(rho[rho > 4.2]), "--",
             color=GREYS["reference"], label="first order (delta method)")
    ax1.set(xscale="log", yscale="log", xlabel="ρ (gradients averaged)",
            ylabel="Var[ψ]  (σ = 1)", title="variance of the adaptive learning rate")
    ax1.legend()
    for b2, c in zip(betas2, BETA2_COLORS):
        ax2.plot(t, adam.radam_rectification(t, b2), color=c,
                 label=f"β₂ = {b2}  (ρ∞ = {adam.radam_rho_inf(b2):.0f})")
    ax2.set(xscale="log", xlabel="step t", ylabel="r_t",
            title="RAdam's factor: a warmup set by β₂")
    ax2.legend(loc="upper left")
    return fig


def warmup_sweep_figure(P, recs, fix_recs, optimisers, warmups, hi):
    """Left: Post-LN's final loss against warmup per optimiser, with the no-warmup fixes.
    Right: Post-LN's training curves at the higher Adam rate, every seed."""
    chance = recs[0].history.chance_loss
    top = 1.15 * chance
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=3.6, task=recs[0].task)
    x = np.arange(len(warmups))
    for k, (opt, c) in enumerate(zip(optimisers, OPTIMISER_SETTING_COLORS)):
        ys = [sensitivity.final_losses_capped(results.select(recs, optimizer=opt, **{"train.warmup": w}), top)
              for w in warmups]
        ax1.plot(x + 0.05 * k, [np.mean(y) for y in ys], "-", color=c, label=opt)
        for xi, y in zip(x, ys):
            ax1.plot([xi + 0.05 * k] * len(y), y, "o", color=c, ms=4, alpha=0.7)
    for name, fix, c in (("Pre-LN, Adam, no warmup", "Pre-LN, Adam", color("pre")),
                         ("Post-LN, RAdam, no warmup", "Post-LN, RAdam", color("radam"))):
        rs = results.select(fix_recs, fix=fix)
        ax1.plot([-0.25] * len(rs), sensitivity.final_losses_capped(rs, top), "D", color=c, ms=5, label=name)
    level(ax1, "chance", chance)
    ax1.set(xticks=x, xticklabels=warmups, ylabel="held-out loss at the end (nats)",
            yscale="log", title="Post-LN: final loss against warmup")
    ax1.legend(fontsize=7)
    for w, c in zip(warmups, warmup_colors(3)):
        seed_curves(ax2, results.select(recs, optimizer=hi, **{"train.warmup": w}), c, w,
                    "loss", lw=0.8, alpha=0.8)
    level(ax2, "chance", chance, False)
    ax2.set(yscale="log", xlabel="step", ylabel="training loss",
            title=f"Post-LN, {hi}, every seed")
    ax2.legend(fontsize=7)
    return fig


def post_ln_windows_figure(P, post_recs):
    """Post-LN's final loss against the learning rate, with and without warmup, one panel
    per depth, every seed (the lr-sensitivity sweep)."""
    depths = list(dict.fromkeys(r.point["depth"] for r in post_recs))
    warms = list(dict.fromkeys(r.point["warmup"] for r in post_recs))
    fig, axes = figure(P, ncols=len(depths), width=9.4, height=3.4, task=post_recs[0].task)
    h = post_recs[0].history
    for ax, dp in zip(np.atleast_1d(axes), depths):
        for w, c in zip(warms, warmup_colors(2)):
            for seed, (lrs, vals) in sensitivity.curves(
                    results.select(post_recs, depth=dp, warmup=w)).items():
                ax.plot(lrs, vals, "-o", ms=3, lw=1, color=c, label=w if seed == 0 else None)
        loss_levels(ax, h, label=False)
        ax.set(xscale="log", xlabel="learning rate", title=f"Post-LN, {dp}, every seed",
               ylabel="held-out loss at the end (nats)")
        ax.legend(fontsize=7)
    return fig


def windows_table(records, rows: str, cols: str) -> str:
    """Markdown, per variant of ``rows`` × ``cols``: each seed's window (the rates it learned at,
    :func:`tfx.book.tables.learned_at`) and the LR sensitivity's median and range."""
    order = lambda axis: list(dict.fromkeys(r.point.get(axis) for r in records))  # noqa: E731
    cols_ = order(cols)
    table = []
    for rn in order(rows):
        cells = []
        for cn in cols_:
            rs = results.select(records, **{rows: rn, cols: cn})
            s = sensitivity.summarize(rs)
            cells.append(f"{learned_at(rs)} (LRS {s['median']:.2f}; {s['low']:.2f}–{s['high']:.2f})")
        table.append([cell(rn), *cells])
    return md_table([rows, *map(cell, cols_)], table)


def wu2_figure(P, groups, target, title):
    """Validation loss of every seed of each ``(name, runs, colour)`` group, and the target."""
    fig, ax = figure(P, width=6.4, height=3.4)
    for name, rs, c in groups:
        seed_curves(ax, rs, c, name, marker="o", ms=2.5)
    level(ax, "target", target)
    ax.set(yscale="log", xlabel="step", ylabel="validation loss (nats)", title=title)
    ax.legend(fontsize=8)
    return fig


def first_steps_figure(P, first, names, seed):
    """Six heat maps, one colour scale: for ``names`` (no warmup, the longest) side by side,
    the histograms over steps of log10 of the source embedding's |g|, its |Δθ|/η and every
    matrix's |Δθ|/η, for one seed (:func:`tfx.theory.adam.first_steps`)."""
    import matplotlib.colors as mcolors

    views = (("grad_hist", "embedding |g|"), ("update_hist", "embedding |Δθ|/η"),
             ("pooled_update_hist", "every matrix |Δθ|/η"))
    top = max(float(np.log1p(getattr(first[w, seed], a)).max()) for w in names for a, _ in views)
    norm = mcolors.Normalize(0, top)
    fig, axes = figure(P, ncols=2, nrows=3, width=9.4, height=8.2)
    for col, w in enumerate(names):
        fs = first[w, seed]
        for row, (attr, what) in enumerate(views):
            h, ax = getattr(fs, attr), axes[row][col]
            used = np.flatnonzero(h.sum(0))  # the bins any step filled
            im = ax.imshow(np.log1p(h.T), origin="lower", aspect="auto", cmap="viridis",
                           norm=norm, extent=(0, len(fs.steps), fs.bins[0], fs.bins[-1]))
            ax.set_ylim(fs.bins[used[0]], fs.bins[used[-1] + 1])
            ticks = np.arange(0, len(fs.steps), 2)
            ax.set_xticks(ticks + 0.5, [str(fs.steps[k]) for k in ticks], fontsize=9)
            ax.set_title(f"{what}, {w}", fontsize=10)
            ax.set(xlabel="step" if row == 2 else None,
                   ylabel=f"log10 {what.split()[-1]}" if col == 0 else None)
    bar = fig.colorbar(im, ax=axes, shrink=0.6, pad=0.02)
    bar.set_label("log(1 + count of coordinates)")
    return fig


def first_steps_table(first, names, seeds, recorded) -> str:
    """Per seed and warmup: the fall of the embedding's median |g| and of the median |Δθ|/η
    from step 1 to their lowest, and the recorded run's final loss (Markdown)."""
    rows = []
    for w in names:
        falls = adam.first_steps_falls(first, w)
        for s in seeds:
            fg, fu = (10 ** x for x in falls[s])
            rows.append([cell(w), s, f"{fg:.3g}", f"{fu:.3g}", f"{recorded[w][s]:.2f}"])
    return md_table(["warmup", "seed", cell("median |g| falls ×"), cell("median |Δθ|/η falls ×"),
                     "recorded final loss (nats)"], rows)


# --------------------------------------------------------------------------- chapter 12
def depth_figure(P, recs, archs, depths, learned_level):
    """Left: final loss against depth, every architecture, every seed (with warmup).
    Right: training curves at the greatest depth."""
    chance = recs[0].history.chance_loss
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=4.0, task=recs[0].task)
    x = np.arange(len(depths))
    for k, a in enumerate(archs):
        c = label_color(a)
        ys = [sensitivity.final_losses_capped(results.select(recs, architecture=a, depth=dp), 1.15 * chance)
              for dp in depths]
        ax1.plot(x + 0.04 * k, [np.mean(y) for y in ys], "-", color=c, label=a)
        for xi, y in zip(x, ys):
            ax1.plot([xi + 0.04 * k] * len(y), y, "o", ms=4, color=c, alpha=0.7)
    level(ax1, "chance", chance, False)
    level(ax1, "learned", learned_level, False)
    ax1.set(xticks=x, xticklabels=depths, yscale="log",
            ylabel="held-out loss at the end (nats)",
            title="with warmup: final loss against depth")
    fig.legend(*ax1.get_legend_handles_labels(), loc="outside upper center", ncol=4,
               fontsize=8)
    for a in archs:
        seed_curves(ax2, results.select(recs, architecture=a, depth=depths[-1]),
                    label_color(a), curve="loss", lw=0.8, alpha=0.8)
    level(ax2, "chance", chance, False)
    ax2.set(yscale="log", xlabel="step", ylabel="training loss",
            title=f"{depths[-1]}, every seed")
    return fig


def warmup_axis_figure(P, wrecs, archs, w_names, w_steps, learned_level):
    """Left: final loss per warmup length, every architecture and seed, with chance, floor
    and the learned level. Right: Post-LN's validation curves, every seed."""
    wh = wrecs[0].history
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=3.6, task=wrecs[0].task)
    for k, a in enumerate(archs):
        c = label_color(a)
        xs = np.arange(len(w_names)) + 0.08 * (k - 1)
        summ = [outcome.summarize(results.select(wrecs, architecture=a, warmup=w))
                for w in w_names]
        ax1.plot(xs, [s["median"] for s in summ], "-", color=c, label=a)
        for x_, s in zip(xs, summ):
            ax1.plot([x_] * s["n"], s["losses"], "o", ms=4, color=c, alpha=0.7)
    loss_levels(ax1, wh, learned_level)
    ax1.set(xticks=range(len(w_names)),
            xticklabels=[f"{w}\n({w_steps[w]})" for w in w_names],
            ylabel="held-out loss at the end (nats)", title="every seed; warmup (steps)")
    ax1.legend(fontsize=7)
    for w, c in zip(w_names, warmup_colors(len(w_names))):
        seed_curves(ax2, results.select(wrecs, architecture="Post-LN", warmup=w), c, w)
    loss_levels(ax2, wh, label=False)
    ax2.set(xlabel="step", ylabel="validation loss (nats)", title="Post-LN, every seed")
    ax2.legend(fontsize=7)
    return fig


def best_rate_curves(ax, recs, archs, learned_level: float, **point) -> None:
    """The held-out loss over training of each architecture of ``archs`` at its own best rate
    (:func:`tfx.runs.effects.runs_at_best_rate`) at ``point``, every seed, on ``ax``; the
    learned level dash-dotted and the floor dashed."""
    for a in archs:
        best, runs = effects.runs_at_best_rate(recs, architecture=a, **point)
        seed_curves(ax, runs, label_color(a), f"{a} (lr {best.variant})", alpha=0.8)
    level(ax, "learned", learned_level)
    level(ax, "floor", recs[0].history.floor_loss)
    ax.set(xlabel="step")


def long_runs_figure(P, recs, archs, warms, learned_level, budget: int):
    """Chapter 12, slow or failed: :func:`best_rate_curves`, one panel per warmup, with the
    learning-rate sweep's step ``budget`` dotted."""
    fig, axes = figure(P, ncols=len(warms), width=9.4, height=3.6, sharey=True, task=recs[0].task)
    for ax, w in zip(np.atleast_1d(axes), warms):
        best_rate_curves(ax, recs, archs, learned_level, warmup=w)
        ax.axvline(budget, color=GREYS["guide"], ls=":", lw=1, label=f"the sweep's {budget} steps")
        ax.set(title=w)
        ax.legend(fontsize=7)
    np.atleast_1d(axes)[0].set_ylabel("held-out loss (nats)")
    return fig


def deep_figure(P, recs, archs, learned_level: float):
    """Chapter 12, at the paper's failing depth: left, :func:`tfx.book.plot.lr_curves`; right,
    :func:`best_rate_curves`."""
    fig, (left, right) = figure(P, ncols=2, width=9.4, height=3.6, task=recs[0].task)
    lr_curves(left, recs, archs, "end of training, every rate")
    left.legend(fontsize=7)
    best_rate_curves(right, recs, archs, learned_level)
    right.set(ylabel="held-out loss (nats)", title="over training, at each one's best rate")
    right.legend(fontsize=7)
    return fig


def long_runs_table(at_best: dict, budget: int) -> str:
    """Per ``(architecture, warmup)`` of ``at_best`` (its runs at its best rate): the rate, the
    median held-out loss at step ``budget`` and at the end, and the outcomes (Markdown)."""
    rows = [[a, w, runs[0].point["lr"], f"{np.median(curves.loss_at_step(runs, budget)):.2f}",
             f"{np.median([r.history.eval_loss[-1] for r in runs]):.2f}", outcome_counts(runs)]
            for (a, w), runs in at_best.items()]
    return md_table(["architecture", "warmup", "best rate", f"loss at step {budget} (median)",
                     "at the end (median)", "outcomes at the end"], rows)


def lr_panels_figure(P, recs, archs, axis: str, variants, title=str, rows=None):
    """Final loss against learning rate (:func:`tfx.book.plot.lr_curves`), every architecture
    of ``archs``, one panel per variant of ``axis`` (a width, a depth) and, with ``rows=(axis,
    variants)``, one row of panels per variant of that axis; ``title(v)`` (with rows:
    ``title(v, row variant)``) names a panel."""
    r_axis, r_vars = rows or (None, [None])
    fig, axes = figure(P, ncols=len(variants), nrows=len(r_vars), width=9.4, sharey=True,
                       height=3.0 * len(r_vars) if rows else 3.2, task=recs[0].task)
    axes = np.array(axes).reshape(len(r_vars), len(variants))
    for row, rv in zip(axes, r_vars):
        for ax, v in zip(row, variants):
            where = {axis: v, **({r_axis: rv} if rows else {})}
            lr_curves(ax, results.select(recs, **where), archs,
                      title=title(v, rv) if rows else title(v))
    axes[0, 0].legend(fontsize=7)
    return fig


def stability_map_figure(P, smap, b2s, lrs, chance):
    """One heat map per architecture of :func:`tfx.runs.sensitivity.stability_map`, one shared
    colour bar."""
    fig, axes = figure(P, ncols=len(smap), width=9.4, height=3.2)
    for ax, (a, (grid, marks, failed)) in zip(np.atleast_1d(axes), smap.items()):
        im = ax.imshow(grid, origin="lower", cmap="magma_r", vmin=0, vmax=chance,
                       aspect="auto")
        for i in range(len(lrs)):
            for j in range(len(b2s)):
                dark = grid[i, j] / chance > 0.6
                ax.text(j, i, marks[i][j] or f"{grid[i, j]:.2f}", ha="center",
                        va="center", fontsize=9, color=GREYS["paper"] if dark else GREYS["ink"])
        ax.set(xticks=range(len(b2s)), xticklabels=b2s, yticks=range(len(lrs)),
               yticklabels=lrs, xlabel="β₂", title=f"{a}: {failed}/{grid.size} failed")
    np.atleast_1d(axes)[0].set_ylabel("learning rate")
    fig.colorbar(im, ax=axes, shrink=0.8, label="mean final loss (nats)")
    return fig


# --------------------------------------------------------------------------- chapter 13
def effective_depth_init_figure(P, sublayers, eff):
    """Σ β²_ii at initialisation against the number of sub-layers, per scheme, and ln L."""
    fig, ax = figure(P, width=5.6, height=3.2)
    for scheme, values in eff.items():
        ax.plot(sublayers, values, "-o", color=color(scheme), label=scheme)
    ax.plot(sublayers, np.log(sublayers), "--", color=GREYS["reference"], lw=1, label="ln L")
    ax.set(xscale="log", xlabel="sub-layers L", ylabel="Σ β²_ii  (effective depth)",
           title="effective depth at initialisation")
    ax.legend(fontsize=8)
    return fig


def effective_depth_trained_figure(P, ed_runs, title_depth):
    """Each seed's effective depth at initialisation → after training, per architecture,
    encoder and decoder (``ed_runs``: {(architecture, seed): (before, after)})."""
    archs = list(dict.fromkeys(a for a, _ in ed_runs))
    seeds = sorted({s for _, s in ed_runs})
    fig, axes = figure(P, ncols=2, width=9.4, height=3.4)
    for ax, stack in zip(axes, ("encoder", "decoder")):
        for k, a in enumerate(archs):
            for s in seeds:
                b, t = ed_runs[a, s]
                ax.plot([k - 0.15, k + 0.15], [b[stack], t[stack]], "-o", ms=4,
                        color=label_color(a), alpha=0.8,
                        label=a if (stack == "encoder" and s == seeds[0]) else None)
        ax.set(xticks=range(len(archs)),
               xticklabels=[a.replace(" (", "\n(") for a in archs], ylabel="Σ β²_ii",
               title=f"{stack}, {title_depth}: at init (left) → trained (right)")
        ax.tick_params(axis="x", labelsize=8)
    axes[0].legend(fontsize=7)
    return fig


def effective_depth_table(ed_runs) -> str:
    """Mean over seeds of the effective depth at initialisation → trained, per stack."""
    means = dependency.effective_depth_means(ed_runs)
    rows = [[cell(a), *(f"{means[a, st][0]:.2f} → {means[a, st][1]:.2f}"
                        for st in ("encoder", "decoder"))] for a in dict.fromkeys(a for a, _ in means)]
    return md_table(["architecture", "encoder: at init → trained", "decoder: at init → trained"],
                    rows)


def excess_figure(P, l_sens, archs, warms, depths, floor):
    """Each seed's excess over the floor at its best learning rate, per depth × warmup."""
    fig, ax = figure(P, width=9.4, height=3.4)
    slots = [(w, dp) for dp in depths for w in warms]
    for k, a in enumerate(archs):
        for j, (w, dp) in enumerate(slots):
            ys = [v["best"] - floor for v in l_sens[a, w, dp]["per_seed"].values()]
            ax.plot([j + 0.15 * (k - 1)] * len(ys), ys, "o", ms=5, alpha=0.8,
                    color=label_color(a), label=a if j == 0 else None)
    ax.set(xticks=range(len(slots)), xticklabels=[f"{dp}\n{w}" for w, dp in slots],
           yscale="log", ylabel="excess over the floor (nats)",
           title="each seed at its best learning rate")
    ax.legend(fontsize=7)
    return fig


def translation_figure(P, trecs, archs, warms, lrs):
    """Validation loss of every run, one panel per warmup × learning rate."""
    chance = trecs[0].history.chance_loss
    fig, axes = figure(records_profile(P, trecs), ncols=len(lrs), nrows=len(warms), width=9.4,
                       height=2.9 * len(warms), sharey=True)
    axes = np.array(axes).reshape(len(warms), len(lrs))
    for i, w in enumerate(warms):
        for j, lr in enumerate(lrs):
            ax = axes[i, j]
            for a in archs:
                seed_curves(ax, results.select(trecs, architecture=a, warmup=w, lr=lr),
                            label_color(a), a, alpha=0.8)
            level(ax, "chance", chance, False)
            ax.set(title=f"lr {lr}, {w}", xlabel="step" if i == len(warms) - 1 else None,
                   ylabel="validation loss (nats)" if j == 0 else None)
    axes[0, 0].legend(fontsize=7)
    return fig


def bracket_sentence(records) -> str:
    """'every group's best rate lies inside it', or 'the best of Post-LN · none (1e-3, the
    lowest) sits at its edge, so there the optimum is not located'
    (:func:`tfx.runs.effects.best_rate_edge`)."""
    named = [f"{e[0]} ({e[1]}, the {e[2]})"
             for g in effects.groups(records) if (e := effects.best_rate_edge(records, **g))]
    if not named:
        return "every group's best rate lies inside it"
    listed = _listed(named)
    verb = "sits" if len(named) == 1 else "sit"
    return f"the best of {listed} {verb} at its edge, so there the optimum is not located"


def failed_rates(records, **point) -> str:
    """Where the runs at ``point`` failed by the outcome rule (:data:`tfx.runs.outcome.FAILED`:
    did not learn or diverged; a run still learning has not failed), at least one run at a rate,
    in words (a caption's numbers stay in the tables): 'fails at the two highest rates of the
    grid', 'fails at every rate of the grid', 'fails at no rate of the grid', else the rates,
    highest first ('fails at 1e-2 and 3e-4')."""
    runs = results.select(records, **point)
    rates = sorted({r.point["lr"] for r in runs}, key=float, reverse=True)
    failed = [lr for lr in rates if any(r.outcome.verdict in outcome.FAILED for r in runs if r.point["lr"] == lr)]
    if not failed or failed == rates:
        return f"fails at {'no' if not failed else 'every'} rate of the grid"
    if failed == rates[:len(failed)]:
        k = len(failed)
        return ("fails at the highest rate of the grid" if k == 1
                else f"fails at the {NUMBER_WORDS.get(k, k)} highest rates of the grid")
    return "fails at " + _listed(failed)


def _listed(items) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def failed_cells_compared(failed: dict) -> str:
    """The stability map's failed cells per architecture (``{architecture: count}``) in words:
    'about as many cells for each architecture' (counts within one of each other), else 'the
    most cells for Post-LN (6) and the fewest for Admin (2)'."""
    most, fewest = max(failed, key=failed.get), min(failed, key=failed.get)
    if failed[most] - failed[fewest] <= 1:
        return "about as many cells for each architecture"
    return f"the most cells for {most} ({failed[most]}) and the fewest for {fewest} ({failed[fewest]})"


def translation_tables(trecs, lrs) -> str:
    """Two tables, a row per architecture and warmup, a column per rate: the mean over seeds of
    the held-out loss at the end (:func:`tfx.runs.effects.end_loss`) and of the greedy BLEU;
    the row's best rate (:func:`tfx.runs.effects.best_rate`) bold, failed seeds counted."""
    archs = list(dict.fromkeys(r.point["architecture"] for r in trecs))
    warms = list(dict.fromkeys(r.point["warmup"] for r in trecs))

    def row(a, w, value, fmt):
        best = effects.best_rate(trecs, architecture=a, warmup=w).variant
        cells = []
        for lr in lrs:
            rs = results.select(trecs, architecture=a, warmup=w, lr=lr)
            if not rs:
                cells.append("—")
                continue
            text = fmt.format(float(np.mean([value(r) for r in rs])))
            failed = sum(r.outcome.verdict in outcome.FAILED for r in rs)
            text = f"**{text}**" if lr == best else text
            cells.append(text + (f" ({failed} of {len(rs)} failed)" if failed else ""))
        return [a, w, *cells]

    head = ["architecture", "warmup", *(f"lr {lr}" for lr in lrs)]
    bleu = lambda r: r.history.bleu[-1] if r.history.bleu else math.nan  # noqa: E731
    out = []
    for title, value, fmt in (("Held-out loss at the end (nats)", effects.end_loss, "{:.2f}"),
                              ("Greedy BLEU at the end", bleu, "{:.1f}")):
        table = md_table(head, [row(a, w, value, fmt) for a in archs for w in warms])
        out.append(f"**{title}**, mean over seeds; bold: the row's best rate by loss\n\n{table}")
    return "\n\n".join(out)
