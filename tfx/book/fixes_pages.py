"""Figures, tables and glued values of chapters 8–10 (T-Fixup, the Lipschitz initialisation,
ReZero and DeepNorm). A verdict is never decided here: effects come from
:mod:`tfx.runs.effects` (registered in :mod:`tfx.book.evidence`), outcomes from
:mod:`tfx.runs.outcome`, the numbers from :mod:`tfx.theory` and :mod:`tfx.runs`."""
from __future__ import annotations

import numpy as np

from ..runs import effects, outcome, results, sensitivity
from ..theory import fit, scaling
from . import evidence
from .notebook import SIZES, md_table
from .plot import BOUND_COLORS, DISTRIBUTION_COLORS, GREYS, LABELS, color, effects_plot, figure, heatmap, log_ticks
from .tables import Signed, effect_text, outcome_counts


# ------------------------------------------------------------------ effects and sweeps
def effect_values(e, *parts, fmt=Signed) -> dict:
    """The ``parts`` of an effect a page reads, to glue under a name (``glue_all(effect_values(e,
    "", "_verdict"), name)``): ``""`` its :func:`tfx.book.tables.effect_text`, ``_mean``,
    ``_low``, ``_high`` and ``_verdict`` (of :mod:`tfx.runs.effects`); all five without ``parts``."""
    every = {"": effect_text(e, fmt), **{f"_{k}": float(getattr(e, k)) for k in ("mean", "low", "high")},
             "_verdict": e.verdict}
    return {k: every[k] for k in parts or every}


def sweep_values(recs, axis: str, keys: dict, warm: str = "", outcomes: bool = False):
    """A recorded sweep's sizes (seeds, steps, deep, width; ``warmup``: of the variant ``warm``
    of ``axis``) and per variant of ``keys`` (``{variant: key}``) its own best rate
    (:func:`tfx.runs.effects.best_rate`) as ``best_<key>`` and, with ``outcomes``, its runs'
    outcomes there as ``outcomes_<key>``; returns (values, ``{variant: BestRate}``)."""
    best = {n: effects.best_rate(recs, **{axis: n}) for n in keys}
    out = {k: SIZES[k](recs) for k in ("seeds", "steps", "deep", "width")}
    if warm:
        out["warmup"] = results.select(recs, **{axis: warm})[0].train_config.warmup
    for n, k in keys.items():
        out[f"best_{k}"] = best[n].variant
        if outcomes:
            out[f"outcomes_{k}"] = outcome.describe(results.select(recs, **{axis: n, "lr": best[n].variant}))
    return out, best


def schemes_sweep_values(recs, schemes) -> dict:
    """Experiments/schemes: :func:`sweep_values`, runs, rates, task; per scheme its window (median
    count of rates a seed learned at); the groups whose best rate is at the grid's edge; Post-LN's
    lowest rate ending above chance, its outcomes at its best rate; the grid's lowest rate."""
    keys = {s: s.lower().replace("-", "") for s in schemes}
    out, best = sweep_values(recs, "scheme", keys)
    for s, k in keys.items():
        out[f"win_{k}"] = int(np.median(list(sensitivity.windows(results.select(recs, scheme=s)).values())))
    post = results.select(recs, scheme="Post-LN")
    edge = ", ".join(g["scheme"] for g in effects.unbracketed(recs, axis="lr"))
    stuck = sensitivity.lowest_rate_above(post, recs[0].history.chance_loss)
    return out | {"runs": len(recs), "rates": SIZES["rates"](recs), "task": recs[0].task,
                  "unbracketed": edge or "none", "post_stuck": stuck or "no rate of the grid",
                  "lr_lowest": min((r.train_config.lr, r.point["lr"]) for r in recs)[1],
                  "post_best_outcomes": outcome_counts(results.select(post, lr=best["Post-LN"].variant))}


def warm_baseline_values(recs, book, claim: str, parent) -> dict:
    """Experiments/warm-baselines (``recs``; ``book``: the records the registry judges): its
    sizes; per scheme its best rate and outcomes there (Post-LN's keyed by its warmup, '100');
    per comparison of ``claim`` on it the effect, mean and verdict; the outcomes, warmup and
    steps of ``parent`` (the chapter's own sweep's warmed-up baseline at its best rate)."""
    out = {k: SIZES[k](recs) for k in ("steps", "rates", "seeds", "runs")} | {
        "depth": SIZES["deep"](recs), "parent-outcomes": outcome_counts(parent),
        "parent-warmup": SIZES["warmup"](parent), "parent-steps": SIZES["steps"](parent)}
    for s in dict.fromkeys(r.point["scheme"] for r in recs):
        best, runs = effects.runs_at_best_rate(recs, scheme=s)
        key = s.split()[-1] if s.startswith("Post-LN, warmup") else s
        out[f"rate-{key}"], out[f"outcomes-{key}"] = best.variant, outcome_counts(runs)
        if key.isdigit():
            out[f"warmup-{key}"] = runs[0].train_config.warmup
    for c, e in evidence.evaluate(claim):
        if c.experiment == "warm-baselines":
            w = c.b.split()[-1]
            out |= {f"vs-{w}": e.describe(), f"vs-{w}-mean": e.mean, f"vs-{w}-verdict": c.verdict(book, e)}
    return out


# ------------------------------------------------------------------ figures
def tfixup_lhs_figure(P, lhs: dict, fits: dict):
    """TF-1's left side against L (log-log), T-Fixup and Xavier, encoder filled, decoder open, 1/L
    dotted; left: m the scaled token embeddings, right: m the measured value input."""
    fig, axes = figure(P, ncols=2, width=10)
    for ax, m_kind in zip(axes, ("embedding", "input")):
        for init in ("t-fixup", "xavier"):
            for stack, marker in (("encoder", "o"), ("decoder", "s")):
                r = lhs[m_kind][init][stack]
                ax.loglog(r["L"], r["lhs"], marker + "-",
                          color=color("t-fixup" if init == "t-fixup" else "none"),
                          mfc=GREYS["paper"] if stack == "decoder" else None,
                          label=f"{init}, {stack} (slope {fits[m_kind, init, stack][0]:.2f})")
        L_all = np.unique(np.concatenate([lhs[m_kind]["t-fixup"][s]["L"] for s in ("encoder", "decoder")]))
        ax.loglog(L_all, 1 / L_all, ":", color=GREYS["reference"], label="1/L")
        ticks = [int(L_all[0])]
        for L in L_all[1:]:
            if L >= 1.3 * ticks[-1]:  # keep the labels apart on a log axis
                ticks.append(int(L))
        log_ticks(ax, ticks)
        ax.set(xlabel="residual sub-layers L", ylabel="left side of TF-1 (mean over attention blocks)")
        ax.set_title("m = scaled token embeddings" if m_kind == "embedding"
                     else "m = measured value input", fontsize=10)
        ax.legend(fontsize=7)
    return fig


def output_change_figure(P, oc: dict, names: dict, items):
    """Left, ‖ΔF‖² after one Adam step against depth (every seed thin, the geometric mean bold) per
    scheme of ``names`` ({key of oc: label}, the one under test first); right, ``items``' forest plot."""
    fig, (a, b) = figure(P, ncols=2, width=9.6, height=3.8)
    for key, name in names.items():
        c = color({"xavier": "none"}.get(key, key))
        vals = oc[key]
        for s in range(vals.shape[1]):
            a.loglog(oc["depths"], vals[:, s], "-", color=c, lw=0.7, alpha=0.45)
        a.loglog(oc["depths"], fit.geo_mean_rows(vals), "o-", color=c, lw=2, label=name)
    log_ticks(a, [int(n) for n in oc["depths"]])
    a.set(xlabel="layers N (encoder)", ylabel="‖ΔF‖² after one Adam step (lr 1e-5)")
    a.set_title("every seed thin, geometric mean bold", fontsize=10)
    a.legend(fontsize=7)
    effects_plot(b, items, title=f"depth exponent: {next(iter(names.values()))}'s against …",
                 xlabel="difference of depth exponents")
    return fig


def v1_scales_figure(P, scales: dict, depth: int):
    """LP-1: σ per sub-layer of a v1 model at init (left, σ = 1 dotted), the share of the
    embedding carried, ∏ w/σ (right, log); Xavier and Lipschitz."""
    fig, axes = figure(P, ncols=2, width=10)
    for init in ("xavier", "lipschitz"):
        for stack, ls in (("encoder", "-"), ("decoder", "--")):
            r = scales[init][stack]
            i = np.arange(1, len(r["sigma"]) + 1)
            c = color("lipschitz") if init == "lipschitz" else color("post")
            axes[0].plot(i, r["sigma"], ls, color=c, marker=".", label=f"{init}, {stack}")
            axes[1].semilogy(i, r["carried"], ls, color=c, label=f"{init}, {stack}")
    axes[0].axhline(1, color=GREYS["reference"], lw=1, ls=":",
                    label="σ = 1 (Xu et al.'s target: σ ≤ 1)")
    axes[0].set(ylim=(0, None), ylabel="σ = std(in_res + in_model)")
    axes[1].set_ylabel("∏ w/σ: share of the embedding carried")
    for ax in axes:
        ax.set_xlabel("residual sub-layer i")
        ax.legend(fontsize=7)
    axes[0].set_title(f"v1 (Post-LN), {depth}+{depth} layers, at init", fontsize=10)
    axes[1].set_title("the carried residual, compounded", fontsize=10)
    return fig


def interval_std_figure(P, rand, mc0: dict, names):
    """LP-2: σ/(b − a) of random discrete distributions (histogram) and of ``names`` (lines),
    Popoviciu's bound ½ and Xu et al.'s 1."""
    fig, ax = figure(P, width=7)
    ax.hist(rand, bins=60, color=color("lipschitz"), alpha=0.7, label="random discrete distributions")
    for k, name in enumerate(names):
        ax.axvline(mc0[name]["over_paper"], color=DISTRIBUTION_COLORS[k % len(DISTRIBUTION_COLORS)],
                   lw=1.2, label=name)
    ax.axvline(0.5, color=BOUND_COLORS["Popoviciu"], ls="--", lw=1.5, label="Popoviciu: (b − a)/2")
    ax.axvline(1.0, color=BOUND_COLORS["Xu et al."], ls=":", lw=1.5, label="Xu et al.: b − a")
    ax.set(xlabel="σ / (b − a)", ylabel="count", xlim=(0, 1.05))
    ax.legend(fontsize=7)
    return fig


def rezero_figure(P, drifts: dict, alpha_grad: dict, branch_grad: float, depth: int):
    """RZ-1: left, each scheme's ``scaling.stream_drift`` at init; right, ReZero's |∂L/∂α_i| per
    sub-layer of each stack, the largest branch-weight gradient dotted."""
    fig, (a, b) = figure(P, ncols=2, width=10)
    for s, d in drifts.items():
        a.plot(np.arange(1, len(d) + 1), d, "o-", ms=3, color=color(s), label=LABELS[s])
    a.set(xlabel="encoder sub-layer i", ylabel="‖x_i − x_0‖ / ‖x_0‖")
    a.set_title("how far the stream is from the input, at init", fontsize=10)
    a.legend(fontsize=8)
    for s, mk in (("encoder", "o"), ("decoder", "s")):
        g = alpha_grad[s]
        b.plot(np.arange(1, len(g) + 1), g, mk + "-", ms=4, color=color("rezero"),
               alpha=0.5 if s == "encoder" else 1, label=f"|∂L/∂α_i|, {s}")
    b.axhline(branch_grad, ls=":", color=GREYS["reference"], lw=1,
              label=f"largest branch-weight gradient: {branch_grad:.1g}")
    b.set(xlabel="sub-layer i (bottom → top)", ylabel="gradient norm")
    b.set_title(f"ReZero, {depth}+{depth} layers: who gets a gradient at step 1", fontsize=10)
    b.legend(fontsize=8)
    return fig


def diagnostics_figure(P, diag, schemes, depth: int):
    """``scaling.init_diagnostics_grid`` per scheme: the relative output change (random δ, one Adam
    step) against depth, and each decoder sub-layer's relative gradient norm at ``depth``."""
    fig, axes = figure(P, ncols=3, width=9.6, height=4.0)
    for ax, (attr, title) in zip(axes[:2], (("rel_out_change", "‖ΔF‖² / ‖F‖², random δ"),
                                            ("rel_out_change_adam", "‖ΔF‖² / ‖F‖², one Adam step"))):
        for s in schemes:
            ns, y = scaling.grid_mean(diag, s, attr)
            ax.plot(ns, np.maximum(y, 1e-9), "o-", ms=4, color=color(s), label=LABELS[s])
        ax.set(yscale="log", xlabel="layers N (encoder and decoder)")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("relative output change (0 drawn at 1e-9)")
    c = axes[2]
    for s in schemes:
        g = np.maximum(diag[s, depth][0].grad["decoder"], 1e-5)
        c.semilogy(np.arange(1, len(g) + 1), g, "-", color=color(s), lw=1.2, label=LABELS[s])
    c.set(xlabel="decoder sub-layer i (bottom → top)", ylabel="relative ‖∂L/∂x_i‖")
    c.set_title(f"decoder gradients at N = {depth}", fontsize=10)
    c.legend(fontsize=7)
    axes[0].legend(fontsize=7)
    return fig


def dependency_heatmaps(P, diag, depth: int, schemes=("post", "pre", "admin", "rezero", "deepnorm")):
    """The encoder's layer dependency β_{i,j} at init, a heat map per scheme at ``depth``."""
    fig, axes = figure(P, ncols=3, nrows=2, width=10, height=6.2)
    axes.flat[-1].set_axis_off()
    for ax, s in zip(axes.flat, schemes):
        heatmap(ax, diag[s, depth][0].beta, title=LABELS[s], xlabel="branch j", ylabel="sub-layer i",
                vmin=0, vmax=1)
    return fig


# ------------------------------------------------------------------ tables
def interval_std_table(mc: dict, intervals, names) -> str:
    """σ/(b − a) per distribution (rows) and interval (columns), from
    ``bounds.std_on_interval_monte_carlo``."""
    return md_table(["distribution", *(f"[{a:g}, {b:g}]" for a, b in intervals)],
                    [[name, *(f"{mc[iv][name]['over_paper']:.4f}" for iv in intervals)]
                     for name in names])


def deepnorm_constants_table(rows) -> str:
    """A GFM table of :func:`tfx.theory.scaling.deepnorm_conventions` rows."""
    return md_table(["N", "M", "stack", "α", "κ, paper", "κ, torchscale", "2α²κ², paper",
                     "2α²κ², torchscale"],
                    [[r["N"], r["M"], r["stack"], f"{r['alpha']:.3f}", f"{r['kappa_paper']:.4f}",
                      f"{r['kappa_torchscale']:.4f}", f"{r['balance_paper']:.3f}",
                      f"{r['balance_torchscale']:.3f}"] for r in rows])


def diagnostics_table(grid, depth: int) -> str:
    """A GFM table of an ``init_diagnostics_grid`` at ``depth`` (its first seed), a row per scheme."""
    return md_table(["scheme", "rel. ‖ΔF‖², random δ", "rel. ‖ΔF‖², one Adam step", "Σβ²_ii",
                     "decoder gradient, bottom/top"],
                    [[LABELS[s], f"{d.rel_out_change:.3g}", f"{d.rel_out_change_adam:.3g}",
                      f"{d.sum_beta_diag_sq:.2f}", f"{d.grad_spread['decoder']:.3g}"]
                     for (s, n), [d, *_] in grid.items() if n == depth])
