"""The bookkeeping of chapters 1–4 (why it is hard, anatomy, the LayerNorm Jacobian,
gradients at initialisation): the figures, tables and glued values of what each page
computed (the computing itself is in ``tfx.theory``), so a test can check them without a notebook.
"""
from __future__ import annotations

import inspect

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..nn.model import build_model
from ..runs import sweep
from ..theory import fit, gradients, hidden
from ..theory.adam import least_moved
from ..theory.bounds import v1_layers_to_fade
from . import plot, toy
from .notebook import glue_all, glue_figure, interval, md_table

# ------------------------------------------------------------------ chapter 1: why hard
SIGNAL_NAMES = {"plain": "plain (no residual)", "residual": "residual, no LN",
                "post": "Post-LN", "pre": "Pre-LN"}
SIGNAL_COLORS = {"plain": plot.GREYS["reference"], "residual": plot.color("none"),
                 "post": plot.color("post"), "pre": plot.color("pre")}


def signal_figure(P, profiles: dict):
    """Activations (left) and weight gradients (right) through the four toy stacks of
    ``tfx.book.toy.signal_profile``: ``profiles`` is {wiring: profile}."""
    fig, (a, b) = plot.figure(P, ncols=2, height=3.4)
    for k, label in SIGNAL_NAMES.items():
        p = profiles[k]
        a.semilogy(p["act_rms"], color=SIGNAL_COLORS[k], label=label)
        b.semilogy(np.arange(1, len(p["grad_rms"]) + 1), p["grad_rms"],
                   color=SIGNAL_COLORS[k], label=label)
    a.set(xlabel="layer l", ylabel="RMS of activation $x_l$", title="forward: activations")
    b.set(xlabel="layer l", ylabel="RMS of ∂loss/∂(fc1 weight)",
          title="backward: weight gradients")
    a.legend(fontsize=8)
    return fig


def signal_values(profiles: dict, depth: int) -> dict:
    """The four-stack demo's numbers: each wiring's growth of the activation RMS from the
    input to the last layer, the plain stack's largest weight gradient and its growth per
    block (of the mean square), the residual growth at twice the depth, the Post-LN spread."""
    act = {k: np.asarray(p["act_rms"]) for k, p in profiles.items()}
    growth = {k: float(v[-1] / v[0]) for k, v in act.items()}
    return {"depth": depth, "plain-act": growth["plain"],
            "plain-grad": float(max(profiles["plain"]["grad_rms"])),
            "plain-per-block": growth["plain"] ** (2 / depth), "res-act": growth["residual"],
            "res-act-twice": growth["residual"] ** 2,  # exercise 1: twice the depth
            "post-spread": float(max(act["post"][1:]) / min(act["post"][1:])),
            "pre-act": growth["pre"]}


def first_step_figure(P, lrs, steps: dict, sgd: dict, adam: dict):
    """Left: per Post-LN weight matrix (sorted by gradient), the gradient and one SGD and
    one Adam step (``sgd``, ``adam``: ``toy.first_step`` at one rate). Right: one Adam step's
    output change against its rate (``steps``: {placement: [first_step per lr]})."""
    fig, (a, b) = plot.figure(P, ncols=2, height=3.6)
    g = np.array(list(adam["grad_rms"].values()))
    order = np.argsort(g)
    a.semilogy(g[order], ".", color=plot.GREYS["reference"], label="gradient RMS")
    for opt, r, mk, label in (("sgd", sgd, "1", "SGD"), ("adam", adam, "2", "Adam")):
        a.semilogy(np.array(list(r["update_rms"].values()))[order], mk,
                   color=plot.OPTIMISERS_BESIDE_SCHEMES[opt], label=f"{label} step")
    a.set(xlabel="weight matrix (sorted by gradient size)", ylabel="RMS per entry",
          title="Post-LN: one step, per matrix")
    a.legend(fontsize=8)
    for pl, rs in steps.items():
        b.loglog(lrs, [r["output_change"] for r in rs], "o-", ms=3, color=plot.color(pl),
                 label=f"{pl}-LN")
    b.axhline(steps["post"][0]["output_norm"], ls=":", color=plot.GREYS["reference"], lw=1,
              label="‖logits‖² at init")
    b.set_xlabel("learning rate of the first Adam step", loc="left")
    b.set(ylabel="‖Δ logits‖² per token", title="output change after one step")
    b.legend(fontsize=8)
    return fig


def first_step_values(steps: dict, adam: dict, lrs, change_at, lr: float, warmup: int,
                      n_layers: int, sgd_lr: float) -> dict:
    """The one-step demo's numbers. ``change_at(placement, lr)`` is the output change of one
    Adam step; ``lr`` the profile's training rate; ``adam-min-*``: ``tfx.theory.adam.least_moved``
    at the rate of ``lrs`` nearest ``sgd_lr``, beside Adam's ε."""
    gs, us = list(adam["grad_rms"].values()), list(adam["update_rms"].values())
    low = least_moved(adam, float(lrs[int(np.argmin(abs(np.asarray(lrs) - sgd_lr)))]))
    return {"N": n_layers, "n-mats": len(gs), "grad-spread": max(gs) / min(gs),
            "adam-spread": max(us) / min(us), "lr": lr, "warmup": warmup, "sgd-lr": sgd_lr,
            "change-full": change_at("post", lr), "change-warm": change_at("post", lr / warmup),
            "logit-norm": steps["post"][0]["output_norm"],
            "post-over-pre": change_at("post", lr) / change_at("pre", lr),
            "small-lr": float(lrs[0]),
            "post-over-pre-small": (steps["post"][0]["output_change"]
                                    / steps["pre"][0]["output_change"]),
            **{f"adam-min-{k}": v for k, v in low.items()},
            "adam-eps": inspect.signature(toy.first_step).parameters["eps"].default}


# The map: problems (left) → mechanisms (middle) → failures (right); the fixes, in green,
# act on a link with a dashed arrow. Words on the arrows, no claim ids.
MAP_NODES = {
    "post": (1.3, 4.6, "Post-LN:\nLN after the\nresidual sum", "problem"),
    "adam": (1.3, 1.4, "Adam: every weight\nmoves ≈ lr from\nthe first step", "problem"),
    "jac": (1.3, 3.0, "LN shrinks gradients\nby √d / ‖x − μ‖", "problem"),
    "dep": (5.0, 4.6, "output leans on the\nresidual branches:\nchanges amplified", "mechanism"),
    "grad": (5.0, 2.9, "large gradients\nnear the output\nat initialisation", "mechanism"),
    "vanish": (5.0, 1.2, "not: vanishing\ngradients\n(encoder)", "ruled out"),
    "fail": (8.8, 3.0, "big early updates:\nthe output collapses\n(stuck at chance)\n"
                       "or diverges", "failure"),
    "fix-pre": (1.3, 6.3, "Pre-LN", "fix"),
    "fix-warm": (8.8, 5.4, "learning-rate\nwarmup", "fix"),
    "fix-admin": (5.0, 6.4, "Admin, ReZero, DeepNorm,\nLipschitz init", "fix"),
    "fix-tfix": (8.8, 0.8, "T-Fixup", "fix"),
}
MAP_EDGES = [  # (from, to, words, kind): "cause" solid dark, "fix" dashed green
    ("post", "dep", "makes", "cause"), ("post", "grad", "makes", "cause"),
    ("jac", "grad", "shapes", "cause"), ("dep", "fail", "amplifies steps", "cause"),
    ("grad", "fail", "makes steps large", "cause"), ("adam", "fail", "full-size steps", "cause"),
    ("vanish", "grad", "ruled out", "ruled out"),
    ("fix-pre", "post", "moves the LN", "fix"), ("fix-admin", "dep", "rebalance", "fix"),
    ("fix-warm", "fail", "small first steps", "fix"),
    ("fix-tfix", "fail", "no LN, scaled init", "fix"),
]
EDGE_STYLE = {kind: dict(color=plot.MAP_ARROW_COLORS[kind], ls=ls)
              for kind, ls in (("cause", "-"), ("fix", "--"), ("ruled out", ":"))}
LABEL_AT = {("adam", "fail"): 0.3}  # where along the arrow its words sit (default: middle)


def map_figure(P):
    """The book's map (chapter 1): causes as solid dark arrows, fixes as dashed green
    arrows, a cause the papers rule out dotted grey; every arrow labelled in words."""
    fig, ax = plot.figure(P, width=9.4, height=6.0)
    boxes = {}
    for key, (x, y, text, kind) in MAP_NODES.items():
        boxes[key] = ax.text(x, y, text, ha="center", va="center", fontsize=8.5, zorder=3,
                             bbox=dict(boxstyle="round,pad=0.45", fc=plot.MAP_FILLS[kind],
                                       ec=plot.GREYS["reference"], lw=0.8))
    for a, b, words, kind in MAP_EDGES:
        st = EDGE_STYLE[kind]
        ax.annotate("", xy=MAP_NODES[b][:2], xytext=MAP_NODES[a][:2], zorder=2,
                    arrowprops=dict(arrowstyle="-|>", color=st["color"], ls=st["ls"],
                                    lw=1.2, mutation_scale=12,
                                    patchA=boxes[a].get_bbox_patch(),
                                    patchB=boxes[b].get_bbox_patch(), shrinkA=2, shrinkB=2))
        t = LABEL_AT.get((a, b), 0.5)
        xm = (1 - t) * MAP_NODES[a][0] + t * MAP_NODES[b][0]
        ym = (1 - t) * MAP_NODES[a][1] + t * MAP_NODES[b][1]
        ax.text(xm, ym, words, ha="center", va="center", fontsize=7.5, color=st["color"],
                style="italic" if kind == "fix" else "normal", zorder=4,
                bbox=dict(boxstyle="round,pad=0.15", fc=plot.GREYS["paper"], ec="none", alpha=0.9))
    for x, label in ((1.3, "problems"), (5.0, "mechanisms"), (8.8, "failure")):
        ax.text(x, 7.35, label, ha="center", fontsize=10, weight="bold",
                color=plot.GREYS["heading"])
    ax.plot([], [], color=EDGE_STYLE["cause"]["color"], label="causes")
    ax.plot([], [], color=EDGE_STYLE["fix"]["color"], ls="--", label="a fix acts here")
    ax.legend(loc="lower center", ncol=2, fontsize=8, bbox_to_anchor=(0.5, -0.02))
    ax.set_xlim(-0.3, 10.6)
    ax.set_ylim(0.0, 7.7)
    ax.set_axis_off()
    return fig


# ------------------------------------------------------------------ chapter 2: anatomy
def anatomy_losses_figure(P, records, task_name: str, depth: int, lr: float, steps: int):
    """The training losses of chapter 2's three wirings (one seed each)."""
    fig, ax = plot.figure(P, width=7.6, height=3.8)
    plot.loss_curves(ax, sweep.histories(records), smooth=5)
    ax.set_title(f"{task_name}, N = {depth} + {depth} layers, lr {lr:g}, no warmup, "
                 f"{steps} steps")
    ax.set_ylim(bottom=0)
    return fig


def glue_anatomy_run(records, keys: dict, depth: int, lr: float, steps: int,
                     task_name: str) -> str:
    """Glue the ``an-*`` values of chapter 2's run (``keys``: ``post``, ``pre``, ``admin`` →
    run labels); returns a table of each wiring's outcome, final held-out loss and first step
    with a 5-step mean training loss below 1 nat."""
    summ, hs = sweep.summary(records), sweep.histories(records)
    v = {"N": depth, "task": task_name, "lr": lr, "steps": steps,
         "chance": records[0].history.chance_loss}
    rows = []
    for key, label in keys.items():
        s, t1 = summ[label], sweep.steps_to_loss(hs[label], 1.0)
        v |= {f"{key}-status": s["verdicts"][0], f"{key}-loss": s["losses"][0]}  # held out
        rows.append((label, s["verdicts"][0], f"{s['losses'][0]:.3f}",
                     t1 if t1 is not None else "never"))
    post_h = hs[keys["post"]]
    post_avg = np.convolve(post_h.loss, np.ones(5) / 5, mode="valid")  # as in the figure
    near = sweep.steps_to_loss(post_h, 1.1 * post_h.chance_loss)  # within 10 % of chance
    glue_all(v | {
        "admin-vs-pre": "below" if v["admin-loss"] < v["pre-loss"] else "above",
        "post-near-chance": f"came within 10 % of chance at step {near}" if near
                            else "never came within 10 % of chance",
        "post-min": float(np.nanmin(post_avg)),
        "post-min-frac": 100 * float(np.nanmin(post_avg)) / post_h.chance_loss,
        "post-finite": "no: every step's loss was finite" if np.isfinite(post_h.loss).all()
                       else "yes: some steps' losses were not finite"}, "an-")
    return md_table(("wiring", "outcome", "held-out loss (nats/token)",
                     "first step below 1 nat"), rows)


def anatomy_exercises(warm_records, records, keys: dict) -> dict:
    """Chapter 2's exercise answers: the Post-LN run with warmup (ex. 1), the v1 fade
    (ex. 2), and the sub-layers and ``torch.nn.LayerNorm`` modules of an N+N model (ex. 3)."""
    (warm,) = sweep.summary(warm_records).values()
    k, kmin, layers = v1_layers_to_fade()
    cfg = {r.label: r.config for r in records}[keys["post"]]
    post = build_model(cfg)
    pre = build_model(cfg.replace(placement="pre", enc_placement="pre", dec_placement="pre"))
    norms = lambda m: sum(isinstance(x, torch.nn.LayerNorm) for x in m.modules())  # noqa: E731
    return {"ex1-status": warm["verdicts"][0], "ex1-loss": warm["losses"][0], "ex2-k": k,
            "ex2-kmin": kmin, "ex2-layers": layers, "ex3-subs": len(list(post.residuals())),
            "ex3-post-norms": norms(post), "ex3-pre-norms": norms(pre)}


# ------------------------------------------------------------ chapter 3: LN Jacobian
def ln_jacobian_figure(P, widths, input_norms, measured: dict, predicted: dict):
    """Autograd's spectral norm (dots) against the formula (lines), ε = 0 (left) and
    ε = 1e-5 (right); ``measured`` and ``predicted`` are keyed by (d, ε)."""
    fig, (a, b) = plot.figure(P, ncols=2)
    for k, d in enumerate(widths):
        shade = plt.cm.viridis(k / max(1, len(widths) - 1) * 0.8)
        a.loglog(input_norms, predicted[d, 0.0], color=shade, lw=1, label=f"formula, d = {d}")
        a.loglog(input_norms, measured[d, 0.0], "o", color=shade, ms=3)
        b.loglog(input_norms, predicted[d, 1e-5], color=shade, lw=1)
        b.loglog(input_norms, measured[d, 1e-5], "o", color=shade, ms=3,
                 label=f"autograd, d = {d}")
    a.set_title("eps = 0: a line of slope −1")
    b.set_title("eps = 1e-5: flat below ‖x − μ‖ ≈ √(d·eps)")
    for ax in (a, b):
        ax.set_xlabel(r"$\|x-\mu\|$")
        ax.legend(fontsize=7)
    a.set_ylabel(r"$\|J_{LN}(x)\|_2$")
    return fig


def pre_ln_jacobian_figure(P, jac, stream_norms, d: int):
    """Measured LayerNorm Jacobian norm in front of each FFN of a Pre-LN encoder, beside
    √d/‖x_l‖ from the stream's plain norm."""
    layers = np.arange(1, len(jac) + 1)
    fig, a = plot.figure(P)
    a.plot(layers, jac, "o-", color=plot.color("pre"),
           label=r"measured $\|J_{LN}\|_2$ (Pre-LN, FFN norm)")
    a.plot(layers, np.sqrt(d) / np.asarray(stream_norms), "--", color=plot.GREYS["reference"],
           label=r"$\sqrt{d}/\|x_l\|$ from the stream")
    a.set(xlabel="layer l", ylabel="LayerNorm Jacobian norm")
    a.set_ylim(bottom=0)
    a.legend()
    return fig


def monte_carlo_table(rows) -> str:
    """LN-2's Monte Carlo rows (d, σ, estimate, σ²d/2) as a Markdown table."""
    return md_table(("$d$", "$\\sigma$", "Monte Carlo $\\mathbb E\\|\\mathrm{ReLU}(X)\\|^2$",
                     "$\\sigma^2 d/2$"),
                    [(d, f"{s:g}", f"{mc:.3f}", f"{pred:.3f}") for d, s, mc, pred in rows])


# ------------------------------------------------------ chapter 4: gradients at init
def hidden_norms_figure(P, norms: dict, inputs: dict, layers, d: int):
    """LN-3: E‖x‖²/d of the FFN residual sum per layer, in Lemma 2's simplified setting
    (left) and in the book's model (right), with Lemma 2's predictions."""
    r = P.d_ffn / P.d_model
    fig, (a, b) = plot.figure(P, ncols=2)
    for ax, setting in ((a, "simplified"), (b, "real")):
        for placement in ("post", "pre"):
            m = norms[setting, placement]
            ax.errorbar(layers, m.mean(0), yerr=m.std(0), fmt="o-", ms=3, capsize=2,
                        color=plot.color(placement), label=f"{placement}-LN measured")
        x0 = 1.0 if setting == "simplified" else inputs["pre"]
        lo, hi = zip(*(hidden.pre_ln_hidden_norm_sq_bounds(l, 1, x0) for l in layers))
        ax.fill_between(layers, lo, hi, color=plot.color("pre"), alpha=0.15,
                        label="Pre-LN bounds of Lemma 2")
        ax.axhline(hidden.post_ln_hidden_norm_sq(d) / d, ls="--", lw=1,
                   color=plot.color("post"), label="1.5: Lemma 2, Post-LN")
        if setting == "real":
            ax.axhline(hidden.post_ln_sum_norm(r), ls=":", lw=1, color=plot.color("post"),
                       label=f"{hidden.post_ln_sum_norm(r):.2f}: d_ffn = {r:.0f}d")
        ax.set(title=f"{setting} setting", xlabel="layer l")
        ax.legend(fontsize=7)
    a.set_ylabel(r"$\mathbb{E}\,\|x\|^2 / d$ of the FFN residual sum")
    return fig


def glue_hidden_norms(P, norms: dict, inputs: dict, layers, n_seeds: int, depth: int) -> dict:
    """Glue LN-3's ``ln3_*`` values (``tfx.theory.hidden.lemma2_summary``); returns the
    summary, with ``inside`` per layer."""
    ln3 = hidden.lemma2_summary(norms, layers, P.d_ffn / P.d_model)
    glue_all({k: v for k, v in ln3.items() if k != "inside"} | {
        "seeds": n_seeds, "depth": depth, "input_real": inputs["pre"],
        "pre_inside": f"{sum(ln3['inside'])} of {len(ln3['inside'])}"}, "ln3_")
    return ln3


def last_grad_figure(P, depths, grad: dict, expo: dict):
    """LN-4: the last FFN weight's gradient norm against depth (seed mean ± sd), the fitted
    power law and the per-seed exponent's 95 % interval in the legend."""
    fig, a = plot.figure(P)
    for pl in ("post", "pre"):
        last = np.array([g[:, -1].mean() for g in grad[pl]])
        sd = np.array([g[:, -1].std() for g in grad[pl]])
        k, c, _ = fit.fit_loglog(depths, last)
        a.errorbar(depths, last, yerr=sd, fmt="o", capsize=2, color=plot.color(pl),
                   label=f"{pl}-LN: exponent {expo[pl]['exponent']:+.2f} "
                         f"[{expo[pl]['low']:+.2f}, {expo[pl]['high']:+.2f}] "
                         f"(theory {gradients.expected_exponent(pl):+.1f})")
        grid = np.geomspace(min(depths), max(depths), 50)
        a.plot(grid, c * grid ** k, "--", lw=1, color=plot.color(pl))
    a.set_yscale("log")
    plot.log_ticks(a, depths)
    a.set(xlabel="layers N", ylabel=r"$\|\partial \mathcal{L} / \partial W^{2,N}\|_F$")
    a.legend(fontsize=8)
    return fig


def glue_ln4_revised(expo_fresh: dict, k_offset: float, seeds: range) -> bool:
    """Glue ``ln4_fresh_*``: LN-4's Pre-LN criterion as revised after the first run (the
    finite-depth exponent ``k_offset`` inside the 95 % interval), judged on the fresh
    ``seeds``; returns whether it holds there."""
    ok = bool(expo_fresh["low"] <= k_offset <= expo_fresh["high"])
    glue_all(interval("", expo_fresh, ("k", "lo", "hi")) | {
        "seeds": f"{seeds.start}–{seeds.stop - 1}", "n": len(seeds),
        "verdict": "inside" if ok else "outside"}, "ln4_fresh_")
    return ok


def glue_last_grad(depths, grad: dict, expo: dict, d: int, seeds: int,
                   embed: float, growth: float) -> dict:
    """Glue LN-4's ``ln4_*`` values (``tfx.theory.gradients.last_layer_summary`` of the
    per-depth mean of ``grad``'s last layer); returns, per placement, whether the theory's
    exponent lies inside its 95 % interval."""
    last = {pl: np.array([g[:, -1].mean() for g in grad[pl]]) for pl in grad}
    v = gradients.last_layer_summary(depths, last, expo, embed, growth)
    glue_all(v | {"depths": ", ".join(map(str, depths)), "seeds": seeds, "d": d}, "ln4_")
    return {pl: v[f"{pl}_verdict"] == "inside" for pl in expo}


def profiles_figure(P, prof: dict, stats: dict):
    """LN-5: every layer's FFN gradient, Post-LN and Pre-LN side by side (mean ± sd)."""
    n = next(iter(prof.values())).shape[1]
    fig, a = plot.figure(P, width=7.5)
    w = 0.4
    for k, pl in enumerate(("post", "pre")):
        a.bar(np.arange(1, n + 1) + (k - 0.5) * w, prof[pl].mean(0), w,
              yerr=prof[pl].std(0), capsize=2, color=plot.color(pl),
              label=f"{pl}-LN: Spearman {stats[pl]['spearman']:+.2f}, "
                    f"top/bottom {stats[pl]['last_over_first']:.2f}")
    a.set_xticks(np.arange(1, n + 1))
    a.set(xlabel="layer l", ylabel=r"$\|\partial \mathcal{L} / \partial W^{2,l}\|_F$")
    a.legend(fontsize=8)
    return fig


def glue_profiles(stats: dict, shape_iv: dict, shape: dict, depth: int) -> str:
    """Glue LN-5's ``ln5_*`` values and return them as a Markdown table."""
    rows, v = [], {"depth": depth}
    for pl in ("post", "pre"):
        s, iv = stats[pl], shape_iv[pl]
        v |= {f"{pl}_spearman": s["spearman"], f"shape_{pl}": shape[pl],
              **interval(f"{pl}_slope", iv)}
        rows.append((f"{pl.capitalize()}-LN", shape[pl], f"{s['spearman']:+.2f}",
                     f"{s['last_over_first']:.2f}",
                     f"{iv['exponent']:+.2f} ({iv['low']:+.2f} to {iv['high']:+.2f})"))
    glue_all(v, "ln5_")
    return md_table(("placement", "shape", "Spearman ρ", "top / bottom",
                     "log-log slope (95 % interval)"), rows)
