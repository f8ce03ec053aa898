"""The bookkeeping of chapters 8–10 (T-Fixup, the Lipschitz initialisation, ReZero and
DeepNorm), out of the pages so that their visible code is the code a reader learns from: the
figures, tables, glued numbers and explorers of their sweeps.

    fig = lr_figure(P, recs, "scheme", {"trains": [...], "stream blows up": [...]})
    glue_effect("tf2_vs_xavier", effect)       # the mean, its 95 % interval, the verdict

A verdict is never decided here: the effects come from :mod:`tfx.runs.effects` (registered in
:mod:`tfx.book.evidence`) and the outcomes of runs from :mod:`tfx.runs.outcome`.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..runs import effects, outcome, results, sensitivity
from ..nn import constants
from .explorer import Explorer
from . import evidence
from .notebook import glue, glue_figure, glue_sizes, md_table  # noqa: F401 (chapters call fixes_pages.glue_figure)
from .tables import Signed, outcome_counts
from .training_pages import glue_described  # noqa: F401 (chapters 8, 9 call it and glue_sizes here)
from .plot import BOUND_COLORS, GREYS, LABELS, color, effects_plot, figure, heatmap, log_ticks
from .sweep_explorers import cell_panels, grid_axes, records_stamp

# Colours of the variants of the recorded sweeps (experiments/t-fixup, lipschitz, schemes).
TFIXUP_COLORS = {"T-Fixup": color("t-fixup"), "T-Fixup, weights only": color("t-fixup-weights"),
                 "T-Fixup, embeddings only": color("t-fixup-embeddings"),
                 "Xavier, no LN": color("none"), "Post-LN": color("post"),
                 "Post-LN, warmup": color("post+warmup"), "Pre-LN": color("pre")}
LIPSCHITZ_COLORS = {"Lipschitz": color("lipschitz"),
                    "Lipschitz linears": color("lipschitz-linears"),
                    "Xavier": color("post"), "Xavier, warmup": color("post+warmup")}
SCHEME_COLORS = {"Post-LN": color("post"), "Pre-LN": color("pre"), "Admin": color("admin"),
                 "T-Fixup": color("t-fixup"), "ReZero": color("rezero"), "DeepNorm": color("deepnorm")}
# experiments/warm-baselines.toml: the fixes without warmup against Post-LN with two warmups
WARM_BASELINE_COLORS = {"T-Fixup": color("t-fixup"), "Lipschitz": color("lipschitz"),
                        "Post-LN, warmup 100": color("post+warmup"),
                        "Post-LN, warmup 300": color("post+long-warmup"), "Pre-LN": color("pre")}
DIVERGED_MARK = dict(marker="x", ms=7, mew=1.6, ls="none")
LOG_ABOVE = 5.0  # an lr_figure panel whose losses reach this many times chance is drawn on a log axis
EXPLORER_POINTS = 25  # training-loss points per seed in an explorer state (the page stays small)


# ------------------------------------------------------------------ effects in words
def effect_text(e, fmt=None) -> str:
    """'−2.58 nats (95 % interval −2.61 to −2.55)': a paired effect's mean and interval, the
    words a sentence needs (the verdict is said by the sentence, not pasted into it)."""
    fmt = fmt or Signed
    unit = f" {e.unit}" if e.unit else ""
    if not math.isfinite(e.low):
        return f"{fmt.format(e.mean)}{unit} (one seed: no interval)"
    return f"{fmt.format(e.mean)}{unit} (95 % interval {fmt.format(e.low)} to {fmt.format(e.high)})"


def glue_effect(name: str, e, fmt=None) -> str:
    """Glue ``name`` (:func:`effect_text`), ``name_mean``, ``name_low``, ``name_high`` and
    ``name_verdict`` (the verdict of :mod:`tfx.runs.effects`); returns the text."""
    text = effect_text(e, fmt)
    glue(name, text)
    for k in ("mean", "low", "high"):
        glue(f"{name}_{k}", float(getattr(e, k)))
    glue(f"{name}_verdict", e.verdict)
    return text


def warm_baseline_values(recs, book, claim: str) -> dict:
    """Chapters 8 and 9 on experiments/warm-baselines.toml (``recs``; ``book``: the records the
    registry judges), keyed by glue name without the chapter's prefix: per scheme its best rate
    and outcomes there, per comparison of ``claim`` on the sweep its effect, mean and verdict
    (keyed by the baseline's warmup: 'warmup 100' -> '100')."""
    out = {"steps": recs[0].train_config.steps, "rates": len({r.train_config.lr for r in recs}),
           "seeds": len({r.seed for r in recs}), "runs": len(recs)}
    for s in dict.fromkeys(r.point["scheme"] for r in recs):
        best, runs = effects.runs_at_best_rate(recs, scheme=s)
        key = s.split()[-1] if s.startswith("Post-LN, warmup") else s
        out[f"rate-{key}"] = best.variant
        out[f"outcomes-{key}"] = outcome_counts(runs)
        if key.isdigit():
            out[f"warmup-{key}"] = runs[0].train_config.warmup
    for c, e in evidence.evaluate(claim):
        if c.experiment == "warm-baselines":
            w = c.b.split()[-1]
            out[f"vs-{w}"] = e.describe()
            out[f"vs-{w}-mean"] = e.mean
            out[f"vs-{w}-verdict"] = c.verdict(book, e)
    return out


# ------------------------------------------------------------------ figures


def lr_figure(P, records, axis: str, groups: dict, colors: dict, title: str = ""):
    """Held-out loss at the end against the learning rate, one panel per entry of ``groups``
    (``{panel title: [variants of axis]}``), every seed thin and the median bold, chance
    dotted; a log y axis where losses reach ``LOG_ABOVE`` × chance, else from 0. A diverged
    run (no final loss) is marked × at the top of its panel, at its rate."""
    fig, axes = figure(P, ncols=len(groups), width=min(5.0 * len(groups) + 0.6, 9.6), height=4.0,
                       task=records[0].task)
    axes = np.atleast_1d(axes)
    chance = records[0].history.chance_loss
    for ax, (panel, variants) in zip(axes, groups.items()):
        finite, any_diverged = [chance], False
        for v in variants:
            c = colors.get(v, GREYS["ink"])
            mine = results.select(records, **{axis: v})
            curves = sensitivity.curves(mine)
            for lrs, vals in curves.values():
                ax.plot(lrs, vals, "-", color=c, lw=0.8, alpha=0.45)
                finite += [x for x in vals if math.isfinite(x)]
                gone = [lr for lr, x in zip(lrs, vals) if not math.isfinite(x)]
                if gone:
                    any_diverged = True
                    ax.plot(gone, [0.96] * len(gone), color=c, transform=ax.get_xaxis_transform(),
                            clip_on=False, **DIVERGED_MARK)
            if curves:
                lrs, med = sensitivity.median_curve(mine)
                ax.plot(lrs, med, "-o", color=c, lw=2, ms=4, label=v)
        ax.axhline(chance, color="0.5", ls=":", lw=1, label="chance")
        pos = [x for x in finite if x > 0]
        if max(finite) > LOG_ABOVE * chance:
            ax.set_yscale("log")
            ax.set_ylim(min(pos) / 2, max(pos) * 3)
        else:
            ax.set_ylim(0, max(finite) * 1.15)
        if any_diverged:
            ax.plot([], [], color=GREYS["ink"], label="× diverged (no final loss)", **DIVERGED_MARK)
        ax.set_xscale("log")
        ax.set(xlabel="learning rate", ylabel="held-out loss at the end (nats)")
        ax.set_title(panel, fontsize=10)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


# ------------------------------------------------------------------ explorers
def _thin(xs, ys, n: int):
    xs, ys = np.asarray(xs), np.asarray(ys)
    if len(xs) <= n:
        return xs, ys
    keep = np.unique(np.r_[np.linspace(0, len(xs) - 1, n).astype(int)])
    return xs[keep], ys[keep]


def sweep_explorer(records, experiment, profile: str, axis: str, default: dict | None = None,
                   title: str = "", points: int = EXPLORER_POINTS) -> Explorer:
    """Chapters 8 and 9: the cells of a recorded learning-rate sweep, one control for ``axis``
    ("scheme", "init") and one for the rate; panels, every seed: the training loss (thinned to
    ``points`` per seed) and the held-out loss (:func:`tfx.book.sweep_explorers.cell_panels`)."""
    axes = grid_axes(experiment, profile, (axis, "lr"))

    def compute(**cell):
        recs = results.select(records, **cell)
        where = ", ".join(f"{a} = {v}" for a, v in cell.items())
        panels = cell_panels(recs, ("loss", "eval_loss"), where=f"{where} ({profile} profile)")
        panels[0].lines = {k: (_thin(*xy, points) if k.startswith("seed") else xy)
                           for k, xy in panels[0].lines.items()}
        return panels

    return Explorer(axes, compute, default=default, title=title, P=records_stamp(records, profile),
                    labels={"lr": "learning rate"})


# ------------------------------------------------------------------ chapter 8: T-Fixup
def glue_tfixup_depth_check(lhs: dict, fits: dict, depths) -> None:
    """Glue the left side of TF-1 across depth (``bounds.tfixup_lhs_sweep`` for m =
    "embedding" and "input", and their log-log fits ``{(m, init, stack): (slope, ...)}``)."""
    for stack in ("encoder", "decoder"):
        Llhs = lhs["embedding"]["t-fixup"][stack]["L"] * lhs["embedding"]["t-fixup"][stack]["lhs"]
        glue(f"tf_Llhs_min_{stack}", float(Llhs.min()))
        glue(f"tf_Llhs_max_{stack}", float(Llhs.max()))
        glue(f"tf_xavier_lhs_{stack}", float(lhs["embedding"]["xavier"][stack]["lhs"].mean()))
        for key, m, init in (("", "embedding", "t-fixup"), ("xavier_", "embedding", "xavier"),
                             ("input_", "input", "t-fixup")):
            glue(f"tf_{key}slope_{stack}", fits[m, init, stack][0])
    glue("tf_depth_min", int(depths[0]))
    glue("tf_depth_max", int(depths[-1]))


def tfixup_lhs_figure(P, lhs: dict, fits: dict):
    """Chapter 8, TF-1 across depth: the left side against L on log-log axes, for T-Fixup and
    Xavier, encoder (filled) and decoder (open), with 1/L dotted; left with m the scaled
    token embeddings, right with m the measured value input."""
    fig, axes = figure(P, ncols=2, width=10)
    for ax, m_kind in zip(axes, ("embedding", "input")):
        for init in ("t-fixup", "xavier"):
            for stack, marker in (("encoder", "o"), ("decoder", "s")):
                r = lhs[m_kind][init][stack]
                ax.loglog(r["L"], r["lhs"], marker + "-",
                          color=color("t-fixup" if init == "t-fixup" else "none"),
                          mfc="white" if stack == "decoder" else None,
                          label=f"{init}, {stack} (slope {fits[m_kind, init, stack][0]:.2f})")
        L_all = np.unique(np.concatenate([lhs[m_kind]["t-fixup"][s]["L"] for s in ("encoder", "decoder")]))
        ax.loglog(L_all, 1 / L_all, ":", color=GREYS["reference"], label="1/L")
        ticks = [int(L_all[0])]
        for L in L_all[1:]:
            if L >= 1.3 * ticks[-1]:  # keep the labels apart on a log axis
                ticks.append(int(L))
        log_ticks(ax, ticks)
        ax.set_xlabel("residual sub-layers L")
        ax.set_ylabel("left side of TF-1 (mean over attention blocks)")
        ax.set_title("m = scaled token embeddings" if m_kind == "embedding"
                     else "m = measured value input", fontsize=10)
        ax.legend(fontsize=7)
    return fig


def geo_mean_rows(vals):
    """Geometric mean over seeds at each depth, of the seeds whose value is finite and > 0."""
    v = np.asarray(vals, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row with no such seed: NaN
        return np.exp(np.nanmean(np.where(np.isfinite(v) & (v > 0), np.log(v), np.nan), axis=1))


def output_change_figure(P, oc: dict, names: dict, items):
    """TF-1's and DN-1's aim (chapters 8, 10): left, ‖ΔF‖² after one Adam step against depth
    (every seed thin, the geometric mean bold) for each scheme of ``names`` ({key of oc: label},
    the scheme under test first); right, the forest plot of the depth-exponent effects ``items``."""
    fig, (a, b) = figure(P, ncols=2, width=9.6, height=3.8)
    for key, name in names.items():
        c = color({"xavier": "none"}.get(key, key))
        vals = oc[key]
        for s in range(vals.shape[1]):
            a.loglog(oc["depths"], vals[:, s], "-", color=c, lw=0.7, alpha=0.45)
        a.loglog(oc["depths"], geo_mean_rows(vals), "o-", color=c, lw=2, label=name)
    log_ticks(a, [int(n) for n in oc["depths"]])
    a.set(xlabel="layers N (encoder)", ylabel="‖ΔF‖² after one Adam step (lr 1e-5)")
    a.set_title("every seed thin, geometric mean bold", fontsize=10)
    a.legend(fontsize=7)
    effects_plot(b, items, title=f"depth exponent: {next(iter(names.values()))}'s against …",
                 xlabel="difference of depth exponents")
    return fig


def glue_sweep(prefix: str, recs, axis: str, names, warm: str = "") -> dict:
    """Glue a recorded sweep's sizes (``<prefix>_seeds``, ``_steps``, ``_deep``, ``_width``;
    ``_warmup``: the warmup of the variant ``warm`` of ``axis``) and return ``{name: BestRate}``
    for each variant ``name`` of ``axis``, its own best rate (:func:`tfx.runs.effects.best_rate`)."""
    glue_sizes(prefix, recs, "seeds", "steps", "deep", "width", sep="_")
    if warm:
        glue(f"{prefix}_warmup", results.select(recs, **{axis: warm})[0].train_config.warmup)
    return {n: effects.best_rate(recs, **{axis: n}) for n in names}


def glue_tfixup_sweep(recs, exp, profile: str) -> dict:
    """Chapter 8: :func:`glue_sweep` of ``experiments/t-fixup`` (``tf_*``), T-Fixup's weight
    factor ``tf_factor`` and each scheme's best rate ``tf_best_<key>``."""
    best = glue_sweep("tf", recs, "scheme", [n for n, _ in exp.grid(profile)["scheme"]],
                      "Post-LN, warmup")
    factor = constants.tfixup_scale_factors(recs[0].config.n_enc, 0)["encoder"]["weights"]
    glue("tf_factor", factor)
    glue("tf_rel_step", 1 / factor)
    for s, key in (("T-Fixup", "tfixup"), ("Xavier, no LN", "xavier"), ("Post-LN", "post"),
                   ("Post-LN, warmup", "postwarm"), ("Pre-LN", "pre")):
        glue(f"tf_best_{key}", best[s].variant)
    return best


def glue_schemes_sweep(recs, schemes) -> dict:
    """Chapter 10: :func:`glue_sweep` of ``experiments/schemes`` (``sc_*``), per scheme its best
    rate and window (median number of rates a seed learned at), the unbracketed schemes,
    Post-LN's lowest rate ending above chance and its outcomes at its best rate, and the
    grid's lowest rate ``sc_lr_lowest``."""
    chance = recs[0].history.chance_loss
    best = glue_sweep("sc", recs, "scheme", schemes)
    glue_sizes("sc", recs, "runs", "rates", sep="_")
    glue("sc_task", recs[0].task)
    for s in schemes:
        key = s.lower().replace("-", "")
        glue(f"sc_best_{key}", best[s].variant)
        win = sensitivity.windows(results.select(recs, scheme=s)).values()
        glue(f"sc_win_{key}", int(np.median(list(win))))
    glue("sc_unbracketed", ", ".join(g["scheme"] for g in effects.unbracketed(recs, axis="lr"))
         or "none")
    post = results.select(recs, scheme="Post-LN")
    rates = [name for _, name in sorted({r.train_config.lr: r.point["lr"] for r in post}.items())]
    above = [lr for lr in rates
             if all(effects.end_loss(r) > chance for r in results.select(post, lr=lr))]
    glue("sc_post_stuck", above[0] if above else "no rate of the grid")
    glue("sc_lr_lowest", min((r.train_config.lr, r.point["lr"]) for r in recs)[1])
    at_best = outcome.summarize(results.select(post, lr=best["Post-LN"].variant))
    glue("sc_post_best_outcomes",  # 'still learning 5 of 5'
         ", ".join(f"{k} {n}" for k, n in at_best["counts"].items() if n) + f" of {at_best['n']}")
    return best


def largest_rise(history) -> float:
    """The largest rise of a run's training loss above its own running minimum (nats): the
    size of its worst loss spike."""
    loss = np.asarray(history.loss, dtype=float)
    return float(np.max(loss - np.minimum.accumulate(loss)))


# ------------------------------------------------------------------ chapter 9: Lipschitz
def glue_v1_scales(scales: dict) -> None:
    """Glue ``bounds.v1_residual_scales`` of the Xavier and the Lipschitz v1 models
    (``{init: {stack: {...}}}``): σ, w/σ and the share of the embedding carried to the top."""
    for init, sc in scales.items():
        for stack, r in sc.items():
            sigma = r["sigma"]
            for k, v in (("sigma_mean", sigma.mean()), ("sigma_max", sigma.max()),
                         ("sigma_first", sigma[0]), ("ratio_mean", r["w_over_sigma"].mean()),
                         ("carried", r["carried"][-1]), ("range", r["range"].mean())):
                glue(f"lp_{k}_{init}_{stack}", float(v))
            glue(f"lp_n_le1_{init}_{stack}", int((sigma <= 1).sum()))
            if init == "xavier":  # the same count for both inits: glued once
                glue(f"lp_n_sub_{stack}", len(sigma))
    glue("lp_carried_ratio", scales["lipschitz"]["encoder"]["carried"][-1]
         / scales["xavier"]["encoder"]["carried"][-1])


def v1_scales_figure(P, scales: dict, depth: int):
    """Chapter 9, LP-1: σ at every sub-layer of a v1 model at initialisation (left, σ = 1
    dotted) and the share of the embedding carried, ∏ w/σ (right, log), Xavier and Lipschitz."""
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
    axes[0].set_ylim(bottom=0)
    axes[0].set_ylabel("σ = std(in_res + in_model)")
    axes[1].set_ylabel("∏ w/σ: share of the embedding carried")
    for ax in axes:
        ax.set_xlabel("residual sub-layer i")
        ax.legend(fontsize=7)
    axes[0].set_title(f"v1 (Post-LN), {depth}+{depth} layers, at init", fontsize=10)
    axes[1].set_title("the carried residual, compounded", fontsize=10)
    return fig


def interval_std_table(mc: dict, intervals, names) -> str:
    """A GFM table of σ/(b − a) for each distribution (rows) on each interval (columns), from
    ``bounds.std_on_interval_monte_carlo``."""
    return md_table(["distribution", *(f"[{a:g}, {b:g}]" for a, b in intervals)],
                    [[name, *(f"{mc[iv][name]['over_paper']:.4f}" for iv in intervals)]
                     for name in names])


def interval_std_figure(P, rand, mc0: dict, names):
    """Chapter 9, LP-2: the histogram of σ/(b − a) over random discrete distributions, the six
    Monte Carlo distributions as lines, Popoviciu's bound ½ and Xu et al.'s 1."""
    fig, ax = figure(P, width=7)
    ax.hist(rand, bins=60, color=color("lipschitz"), alpha=0.7, label="random discrete distributions")
    for k, name in enumerate(names):
        ax.axvline(mc0[name]["over_paper"], color=f"C{k}", lw=1.2, label=name)
    ax.axvline(0.5, color=BOUND_COLORS["Popoviciu"], ls="--", lw=1.5, label="Popoviciu: (b − a)/2")
    ax.axvline(1.0, color=BOUND_COLORS["Xu et al."], ls=":", lw=1.5, label="Xu et al.: b − a")
    ax.set(xlabel="σ / (b − a)", ylabel="count", xlim=(0, 1.05))
    ax.legend(fontsize=7)
    return fig


def glue_lipschitz_sweep(recs, exp, profile: str) -> dict:
    """Chapter 9: :func:`glue_sweep` of ``experiments/lipschitz`` (``lp3_*``) and each
    initialisation's best rate and outcomes there (``lp3_best_<key>``, ``lp3_outcomes_<key>``)."""
    inits = [n for n, _ in exp.grid(profile)["init"]]
    best = glue_sweep("lp3", recs, "init", inits, "Xavier, warmup")
    for i, key in zip(inits, ("lip", "lin", "xav", "xavwarm")):
        glue(f"lp3_best_{key}", best[i].variant)
        glue(f"lp3_outcomes_{key}", outcome.describe(results.select(recs, init=i, lr=best[i].variant)))
    return best


# ------------------------------------------------------------------ chapter 10: ReZero, DeepNorm
def stream_drift(model, batch, stack: str = "encoder"):
    """‖x_i − x_0‖ / ‖x_0‖ for the stream leaving each sub-layer of ``stack`` (the last one: the
    stack's output), averaged over tokens: how far the stream is from its input."""
    import torch

    from ..nn import hooks

    with torch.no_grad():
        with hooks.record_branches(model) as rec:
            model.eval()
            model.loss(batch)
        r = rec[stack]
        x0 = r[0]["x"]
        outs = [r[k + 1]["x"] for k in range(len(r) - 1)] + [model.encoder(model.src_embed(batch.src))]
        return np.array([float(((o - x0).norm(dim=-1) / x0.norm(dim=-1)).mean()) for o in outs])


def rezero_figure(P, drifts: dict, alpha_grad: dict, branch_grad: float, depth: int):
    """Chapter 10, RZ-1: left, each scheme's stream drift at initialisation (``{scheme:
    stream_drift}``); right, ReZero's |∂L/∂α_i| per sub-layer of each stack, with the largest
    branch-weight gradient dotted."""
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


def deepnorm_constants_table(pairs) -> tuple[str, dict]:
    """DeepNorm's α, κ (the code's ``beta``) and balance 2α²κ² under the paper's and
    torchscale's conventions (``constants.deepnorm_constants``) per ``(N, M)`` of ``pairs``: a
    GFM table, and the encoder row of the first encoder–decoder pair as a dict."""
    from ..theory import scaling

    rows, enc = [], None
    for N, M in pairs:
        c = {conv: constants.deepnorm_constants(N, M, conv) for conv in constants.DEEPNORM_CONVENTIONS}
        for stack in c["paper"]:
            a, kp, kt = c["paper"][stack]["alpha"], c["paper"][stack]["beta"], c["torchscale"][stack]["beta"]
            bp, bt = float(scaling.deepnorm_balance(a, kp)), float(scaling.deepnorm_balance(a, kt))
            rows.append([N, M, stack, f"{a:.3f}", f"{kp:.4f}", f"{kt:.4f}", f"{bp:.3f}",
                         f"{bt:.3f}"])
            if enc is None and stack == "encoder" and M > 0:
                enc = {"alpha": a, "kappa_paper": kp, "kappa_torchscale": kt,
                       "balance_paper": bp, "balance_torchscale": bt}
    return md_table(["N", "M", "stack", "α", "κ, paper", "κ, torchscale", "2α²κ², paper",
                     "2α²κ², torchscale"], rows), enc


def diagnostics_figure(P, diag, schemes, depth: int):
    """Chapter 10, ``scaling.init_diagnostics_grid`` per scheme: the relative output change
    under a random δ and after one Adam step against depth, and the relative gradient norm of
    every decoder sub-layer at ``depth``."""
    from ..theory import scaling
    fig, axes = figure(P, ncols=3, width=9.6, height=4.0)
    for ax, (attr, title) in zip(axes[:2], (("rel_out_change", "‖ΔF‖² / ‖F‖², random δ"),
                                            ("rel_out_change_adam", "‖ΔF‖² / ‖F‖², one Adam step"))):
        for s in schemes:
            ns, y = scaling.grid_mean(diag, s, attr)
            ax.plot(ns, np.maximum(y, 1e-9), "o-", ms=4, color=color(s), label=LABELS[s])
        ax.set_yscale("log")
        ax.set_xlabel("layers N (encoder and decoder)")
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
    """Chapter 10: the encoder's layer dependency β_{i,j} at initialisation, one heat map per
    scheme of ``schemes`` at ``depth``, on a 3 × 2 grid."""
    fig, axes = figure(P, ncols=3, nrows=2, width=10, height=6.2)
    axes.flat[-1].set_axis_off()
    for ax, s in zip(axes.flat, schemes):
        heatmap(ax, diag[s, depth][0].beta, title=LABELS[s], xlabel="branch j", ylabel="sub-layer i",
                vmin=0, vmax=1)
    return fig


def glue_diagnostics(diag, schemes, depths) -> dict:
    """Glue the init-time diagnostics at the largest depth (``dg_<scheme>_rel``, ``_adam``,
    ``_sb``, ``_dec``) and the ratios and growths the text and the claims page state (of
    Post-LN and Pre-LN against DeepNorm: ``schemes`` must hold all three); returns
    ``{scheme: Diagnostics}`` at that depth."""
    from ..theory import scaling

    missing = [s for s in ("post", "pre", "deepnorm") if s not in schemes]
    if missing:
        raise ValueError(f"schemes: the ratios need {', '.join(missing)} (given: {', '.join(schemes)})")
    top = depths[-1]
    table = {s: diag[s, top][0] for s in schemes}
    for s, d in table.items():
        for k, v in (("rel", d.rel_out_change), ("adam", d.rel_out_change_adam),
                     ("sb", d.sum_beta_diag_sq), ("dec", d.grad_spread["decoder"])):
            glue(f"dg_{s.replace('-', '_')}_{k}", v)
    glue("dg_depth", top)
    glue("dg_depth_min", depths[0])
    for s in ("post", "pre"):
        glue(f"dg_{s}_over_dn", table[s].rel_out_change_adam / table["deepnorm"].rel_out_change_adam)
    for s, key in (("deepnorm", "dn"), ("post", "post")):
        _, y = scaling.grid_mean(diag, s, "rel_out_change")
        glue(f"dg_{key}_random_growth", float(y[-1] / y[0]))
        glue(f"dg_{key}_trend", "falls" if y[-1] < y[0] else "grows")
    return table


def diagnostics_table(table: dict) -> str:
    """A GFM table of the init-time diagnostics at one depth, one row per scheme."""
    return md_table(["scheme", "rel. ‖ΔF‖², random δ", "rel. ‖ΔF‖², one Adam step", "Σβ²_ii",
                     "decoder gradient, bottom/top"],
                    [[LABELS[s], f"{d.rel_out_change:.3g}", f"{d.rel_out_change_adam:.3g}",
                      f"{d.sum_beta_diag_sq:.2f}", f"{d.grad_spread['decoder']:.3g}"]
                     for s, d in table.items()])


def convention_effect(records, label: str, task, convention: str = "torchscale"):
    """Chapter 10's third exercise: retrain the DeepNorm runs labelled ``label`` (same configs
    and seeds) with the encoder κ_e of ``convention`` (``scaling.use_deepnorm_convention_``);
    returns the paired effect on the final held-out loss (``convention`` − paper) and the new
    runs' outcomes."""
    from types import SimpleNamespace

    from ..runs.sweep import build_for_run, by_label
    from ..runs.train import train
    from ..theory import scaling

    paper = by_label(records)[label]
    new = {}
    for r in paper:
        tc = r.train_config
        model = build_for_run(r.config, task, tc, None)
        scaling.use_deepnorm_convention_(model, convention)
        new[r.seed] = SimpleNamespace(history=train(model, task, tc))
    e = effects.paired({s: effects.end_loss(run) for s, run in new.items()},
                       {r.seed: effects.end_loss(r) for r in paper}, "lower",
                       f"DeepNorm, {convention}", label)
    return e, [outcome.judge(run).verdict for run in new.values()]
