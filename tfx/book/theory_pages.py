"""The bookkeeping of chapters 1–4 (why it is hard, anatomy, the LayerNorm Jacobian,
gradients at initialisation): each function takes what the page computed and returns a
figure, a Markdown table or the values it glued, so a test can check it without a notebook.
"""
from __future__ import annotations

import math

import numpy as np

from ..runs import sweep
from ..theory import fit, gradients, hidden, jacobian
from . import plot
from .notebook import glue, glue_all, glue_figure, interval, md_table

# Chapter 1 draws optimisers and placements in neighbouring panels (plot.OPTIMISERS_BESIDE_SCHEMES)
OPTIMISER_COLORS = plot.OPTIMISERS_BESIDE_SCHEMES


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


def glue_signals(profiles: dict, depth: int) -> dict:
    """Glue the ``wh-*`` values of the four-stack demo; returns {wiring: growth of the
    activation RMS from the input to the last layer}."""
    act = {k: np.asarray(p["act_rms"]) for k, p in profiles.items()}
    growth = {k: float(v[-1] / v[0]) for k, v in act.items()}
    glue_all({"depth": depth, "plain-act": growth["plain"],
              "plain-grad": float(max(profiles["plain"]["grad_rms"])),
              "plain-per-block": growth["plain"] ** (2 / depth),
              "res-act": growth["residual"],
              "res-act-twice": growth["residual"] ** 2,  # exercise 1: twice the depth
              "post-spread": float(max(act["post"][1:]) / min(act["post"][1:])),
              "pre-act": growth["pre"]}, "wh-")
    return growth


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
                   color=OPTIMISER_COLORS[opt], label=f"{label} step")
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


def glue_first_step(steps: dict, adam: dict, lrs, change_at, lr: float, warmup: int,
                    n_layers: int, sgd_lr: float) -> dict:
    """Glue the ``wh-*`` values of the one-step demo. ``change_at(placement, lr)`` is the
    output change of one Adam step; ``lr`` the profile's training rate; returns them."""
    gs = list(adam["grad_rms"].values())
    us = list(adam["update_rms"].values())
    return glue_all({
        "wh-N": n_layers, "wh-n-mats": len(gs), "wh-grad-spread": max(gs) / min(gs),
        "wh-adam-spread": max(us) / min(us), "wh-lr": lr, "wh-warmup": warmup,
        "wh-sgd-lr": sgd_lr, "wh-change-full": change_at("post", lr),
        "wh-change-warm": change_at("post", lr / warmup),
        "wh-logit-norm": steps["post"][0]["output_norm"],
        "wh-post-over-pre": change_at("post", lr) / change_at("pre", lr),
        "wh-small-lr": float(lrs[0]),
        "wh-post-over-pre-small": (steps["post"][0]["output_change"]
                                   / steps["pre"][0]["output_change"]),
        **adam_smallest_step(adam, float(lrs[int(np.argmin(abs(np.asarray(lrs) - sgd_lr)))]))})


def adam_smallest_step(adam: dict, lr: float) -> dict:
    """The weight matrix that Adam's first step (``toy.first_step`` at ``lr``) moves least:
    its step's RMS over ``lr``, its gradient's RMS, its name, and Adam's ε there. On the
    first step a coordinate moves by lr·|g|/(|g| + ε): about lr where |g| ≫ ε, less where
    the gradient is near ε."""
    import inspect

    from . import toy

    name = min(adam["update_rms"], key=adam["update_rms"].get)
    return {"wh-adam-min-frac": adam["update_rms"][name] / lr,
            "wh-adam-min-grad": adam["grad_rms"][name],
            "wh-adam-min-name": name.removesuffix(".weight"),
            "wh-adam-eps": inspect.signature(toy.first_step).parameters["eps"].default}


def sgd_matching_lr(eta0: float, change0: float, change_adam: float) -> float:
    """The SGD learning rate whose one-step output change equals ``change_adam``, from one
    SGD step at ``eta0`` that changed the output by ``change0``, if both are in the regime
    where the change grows like η²: η₀·√(c_A / c₀) (chapter 1, exercise 2)."""
    if eta0 <= 0 or change0 <= 0 or change_adam < 0:
        raise ValueError(f"eta0={eta0}, change0={change0} must be > 0 and "
                         f"change_adam={change_adam} ≥ 0")
    return eta0 * math.sqrt(change_adam / change0)
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
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.9))
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
    with a 5-step mean training loss below 1 nat. The caption (``an-headline``) is read from
    the outcomes: another CPU can end a chaotic run otherwise."""
    summ, hs = sweep.summary(records), sweep.histories(records)
    v = {"N": depth, "task": task_name, "lr": lr, "steps": steps,
         "chance": records[0].history.chance_loss}
    rows = []
    for key, label in keys.items():
        s = summ[label]
        t1 = sweep.steps_to_loss(hs[label], 1.0)
        v |= {f"{key}-status": s["verdicts"][0], f"{key}-loss": s["losses"][0]}  # held out
        if key != "post":
            v[f"{key}-t1"] = f"at step {t1}" if t1 else "never within the run"
        rows.append((label, s["verdicts"][0], f"{s['losses'][0]:.3f}",
                     t1 if t1 is not None else "never"))
    post_h = hs[keys["post"]]
    post_avg = np.convolve(post_h.loss, np.ones(5) / 5, mode="valid")  # as in the figure
    near = sweep.steps_to_loss(post_h, 1.1 * post_h.chance_loss)  # within 10 % of chance
    verdict = {k: v[f"{k}-status"] for k in ("post", "pre", "admin")}
    stuck = verdict["post"] == "did not learn" and abs(post_avg[-1] / post_h.chance_loss - 1) <= 0.1
    glue_all(v | {
        "admin-vs-pre": "below" if v["admin-loss"] < v["pre-loss"] else "above",
        "post-near-chance": f"came within 10 % of chance at step {near}" if near
                            else "never came within 10 % of chance",
        "post-min": float(np.nanmin(post_avg)),
        "post-min-frac": 100 * float(np.nanmin(post_avg)) / post_h.chance_loss,
        "post-finite": "no: every step's loss was finite" if np.isfinite(post_h.loss).all()
                       else "yes: some steps' losses were not finite",
        "headline": "Post-LN stalls near the chance loss while Pre-LN and Admin learn"
                    if stuck and verdict["pre"] == verdict["admin"] == "learned" else
                    "; ".join(f"{n} {verdict[k]}" for k, n in
                              (("post", "Post-LN"), ("pre", "Pre-LN"), ("admin", "Admin")))},
             "an-")
    return md_table(("wiring", "outcome", "held-out loss (nats/token)",
                     "first step below 1 nat"), rows)


def v1_layers_to_fade(sigma: float = 1.2, share: float = 0.01) -> tuple:
    """How many v1 sub-layers, each scaling the carried residual by 1/σ (γ = 1), bring the
    embedding's share below ``share``: (ln(1/share)/ln σ, the first whole k past it,
    encoder layers of two sub-layers that takes)."""
    if sigma <= 1 or not 0 < share < 1:
        raise ValueError(f"sigma={sigma} must be > 1 and share={share} in (0, 1)")
    k = math.log(1 / share) / math.log(sigma)
    kmin = math.floor(k) + 1
    return k, kmin, math.ceil(kmin / 2)


def source_of(fn) -> str:
    """The source of a function or method without its docstring and comments: the lines a
    reader compares with the equations (chapter 2 prints ``tfx.nn.blocks.Residual``'s)."""
    import ast
    import inspect
    import io
    import textwrap
    import tokenize

    src = textwrap.dedent(inspect.getsource(fn))
    cuts = {t.start[0]: t.start[1] for t in tokenize.generate_tokens(io.StringIO(src).readline)
            if t.type == tokenize.COMMENT}
    src = "\n".join(line[:cuts[i]].rstrip() if i in cuts else line
                    for i, line in enumerate(src.splitlines(), 1)) + "\n"
    node = ast.parse(src).body[0]
    first = node.body[0] if node.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return src.rstrip("\n")
    lines = src.splitlines()
    return "\n".join(lines[:first.lineno - 1] + lines[first.end_lineno:])


def count_layer_norms(model) -> int:
    """The ``torch.nn.LayerNorm`` modules of a model."""
    import torch

    return sum(isinstance(m, torch.nn.LayerNorm) for m in model.modules())


def glue_anatomy_exercises(warm_records, records, keys: dict, depth: int) -> dict:
    """Glue chapter 2's exercise answers: the Post-LN run with warmup (ex. 1), the v1 fade
    (ex. 2), and the sub-layers and LayerNorms of an N+N model (ex. 3); returns them."""
    from ..nn.model import build_model

    (warm,) = sweep.summary(warm_records).values()
    k, kmin, layers = v1_layers_to_fade()
    cfg = {r.label: r.config for r in records}[keys["post"]]
    pre_cfg = cfg.replace(placement="pre", enc_placement="pre", dec_placement="pre")
    post, pre = build_model(cfg), build_model(pre_cfg)
    return glue_all({"an-ex1-status": warm["verdicts"][0], "an-ex1-loss": warm["losses"][0],
                     "an-ex2-k": k, "an-ex2-kmin": kmin, "an-ex2-layers": layers,
                     "an-ex3-subs": len(list(post.residuals())),
                     "an-ex3-post-norms": count_layer_norms(post),
                     "an-ex3-pre-norms": count_layer_norms(pre)})


# ------------------------------------------------------------ chapter 3: LN Jacobian
def ln_jacobian_figure(P, widths, input_norms, measured: dict, predicted: dict):
    """Autograd's spectral norm (dots) against the formula (lines), ε = 0 (left) and
    ε = 1e-5 (right); ``measured`` and ``predicted`` are keyed by (d, ε)."""
    import matplotlib.pyplot as plt

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


def post_ln_sum_norms(model, batch) -> dict:
    """The squared centred norm ‖z − μ1‖²/d of every residual sum z = x_{i-1} + f_i that a
    Post-LN model's LayerNorms read, averaged over the tokens of ``batch`` (one forward pass,
    eval mode): ``{kind: array over the sub-layers of that kind, bottom first}``, kinds
    'self-attn', 'cross-attn' and 'ffn', the encoder's before the decoder's."""
    import torch

    from ..nn import hooks

    out = {}
    with hooks.record_branches(model) as rec, hooks.mode(model), torch.no_grad():
        hooks.loss_on(model, batch)
    for recs in rec.values():
        for r in recs:
            z = r["x"] + r["f"]
            c = z - z.mean(-1, keepdim=True)
            out.setdefault(hooks.sublayer_kind(r["name"]), []).append(
                float(c.pow(2).sum(-1).mean()) / z.shape[-1])
    return {k: np.array(v) for k, v in out.items()}


def glue_post_ln_sums(sums: dict, depth: int) -> dict:
    """Glue chapter 3's ``ln_post_*``: the mean of :func:`post_ln_sum_norms` per kind of
    LayerNorm, the smallest and largest sub-layer (``ln_post_lo``, ``ln_post_hi``), the
    gains √d/‖z − μ‖ they give (``ln_post_gain_lo`` from the largest input,
    ``ln_post_gain_hi`` from the smallest) and the depth per stack; returns them."""
    every = np.concatenate(list(sums.values()))
    lo, hi = float(every.min()), float(every.max())
    return glue_all({"depth": depth, "ffn": float(sums["ffn"].mean()),
                     "self": float(sums["self-attn"].mean()),
                     "cross": float(sums["cross-attn"].mean()), "lo": lo, "hi": hi,
                     "gain_lo": 1 / math.sqrt(hi), "gain_hi": 1 / math.sqrt(lo)}, "ln_post_")


def monte_carlo_table(rows) -> str:
    """LN-2's Monte Carlo rows (d, σ, estimate, σ²d/2) as a Markdown table."""
    return md_table(("$d$", "$\\sigma$", "Monte Carlo $\\mathbb E\\|\\mathrm{ReLU}(X)\\|^2$",
                     "$\\sigma^2 d/2$"),
                    [(d, f"{s:g}", f"{mc:.3f}", f"{pred:.3f}") for d, s, mc, pred in rows])


def ln_exercises(d: int = 64, radius: float = 8.0, shift: float = 100.0,
                 seed: int = 0) -> dict:
    """Chapter 3's exercises, computed: the Jacobian norm of LayerNorm at a centred input of
    norm ``radius`` and at the same input shifted by ``shift`` (ex. 1); RMSNorm's measured
    norm against √d/‖x‖ at the shifted input (ex. 2); a LayerNorm with random gains against
    the bound max|γ|·√d/‖x−μ‖ (ex. 3). Glues the ``ln_ex*`` values; returns them."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(d, generator=g, dtype=torch.float64)
    x = radius * (x - x.mean()) / (x - x.mean()).norm()
    shifted = float((x + shift).norm())
    rms = torch.nn.RMSNorm(d, eps=0.0).double()
    ln = torch.nn.LayerNorm(d, eps=0.0).double()
    with torch.no_grad():
        ln.weight.copy_(1 + 0.5 * torch.randn(d, generator=g, dtype=torch.float64))
    measured = jacobian.ln_jacobian_norm(x, ln)
    bound = float(ln.weight.detach().abs().max()) * math.sqrt(d) / radius
    k = int(ln.weight.detach().abs().argmax())  # the coordinate with the largest gain
    out = {"ln_ex1_centred": jacobian.ln_jacobian_norm(x, eps=0.0),
           "ln_ex1_shifted": jacobian.ln_jacobian_norm(x + shift, eps=0.0),
           "ln_ex1_plain_norm": shifted, "ln_ex1_plain_bound": math.sqrt(d) / shifted,
           "ln_ex2_rms_centred": jacobian.ln_jacobian_norm(x, rms),
           "ln_ex2_rms_shifted": jacobian.ln_jacobian_norm(x + shift, rms),
           "ln_ex2_rms_formula": math.sqrt(d) / shifted,
           "ln_ex3_measured": measured, "ln_ex3_bound": bound, "ln_ex3_ratio": measured / bound,
           "ln_ex3_factor": math.sqrt(1 - 1 / d - float(x[k] ** 2 / x.norm() ** 2))}
    return glue_all({k: float(v) for k, v in out.items()})


# ------------------------------------------------------ chapter 4: gradients at init
def post_ln_sum_norm(r: float) -> float:
    """Lemma 2 redone for Xavier d×rd and rd×d FFN weights: E‖x^{post,5}‖²/d = 1 + 2r/(1+r)²
    (chapter 4, exercise 3)."""
    if r <= 0:
        raise ValueError(f"r={r} (the FFN's width over d) must be > 0")
    return 1 + 2 * r / (1 + r) ** 2


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
            ax.axhline(post_ln_sum_norm(r), ls=":", lw=1, color=plot.color("post"),
                       label=f"{post_ln_sum_norm(r):.2f}: d_ffn = {r:.0f}d")
        ax.set(title=f"{setting} setting", xlabel="layer l")
        ax.legend(fontsize=7)
    a.set_ylabel(r"$\mathbb{E}\,\|x\|^2 / d$ of the FFN residual sum")
    return fig


def glue_hidden_norms(P, norms: dict, inputs: dict, layers, n_seeds: int, depth: int) -> dict:
    """Glue LN-3's ``ln3_*`` values; returns the Pre-LN growth per block in both settings
    and, per layer, whether the simplified Pre-LN mean lies inside Lemma 2's bounds."""
    pre_simp = norms["simplified", "pre"].mean(0)
    slope = {s: float(fit.fit_linear(layers, norms[s, "pre"].mean(0))[0])
             for s in ("simplified", "real")}
    inside = [lo <= v <= hi for l, v in zip(layers, pre_simp)
              for lo, hi in [hidden.pre_ln_hidden_norm_sq_bounds(l, 1)]]
    glue_all({"seeds": n_seeds, "depth": depth,
              "post_simp": float(norms["simplified", "post"].mean()),
              "post_real": float(norms["real", "post"].mean()),
              "post_real_pred": post_ln_sum_norm(P.d_ffn / P.d_model),
              "pre_slope_simp": slope["simplified"], "pre_slope_real": slope["real"],
              "pre_inside": f"{sum(inside)} of {len(inside)}", "input_real": inputs["pre"]},
             "ln3_")
    return {"slope_simp": slope["simplified"], "slope_real": slope["real"], "inside": inside}


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


def finite_depth_exponent(depths, embed: float, growth: float) -> float:
    """The log-log slope, over ``depths``, of the final LayerNorm's gain (e + g·N)^(−1/2): the
    exponent Theorem 1's argument predicts for Pre-LN at these finite depths, where the
    embedding's share e keeps it above the asymptotic −1/2."""
    depths = list(depths)
    return float(fit.fit_loglog(depths, [(embed + growth * n) ** -0.5 for n in depths])[0])


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
    """Glue LN-4's ``ln4_*`` values. ``embed`` (e) and ``growth`` (g) are LN-3's embedding
    share and Pre-LN growth per block of the real model: the final LayerNorm then reads
    E‖x_N‖² ≈ (e + g·N)·d. Returns, per placement, whether the theory's exponent lies inside
    its 95 % interval."""
    depths = list(depths)
    last = {pl: np.array([g[:, -1].mean() for g in grad[pl]]) for pl in grad}
    paper = [i for i, n in enumerate(depths) if 6 <= n <= 14] or list(range(len(depths)))
    k_offset = finite_depth_exponent(depths, embed, growth)
    halves = {pl: bool(expo[pl]["low"] <= gradients.expected_exponent(pl) <= expo[pl]["high"])
              for pl in expo}
    v = {"post_paper_range": float(last["post"][paper].mean()),
         "post_min": float(last["post"].min()), "post_max": float(last["post"].max()),
         "pre_first": float(last["pre"][0]), "pre_last": float(last["pre"][-1]),
         "depths": ", ".join(map(str, depths)), "seeds": seeds, "d": d,
         "ex_pred": float(np.sqrt((embed + 6 * growth) / (embed + 24 * growth))),
         "ex_fit": float(4 ** expo["pre"]["exponent"]), "k_offset": k_offset,
         "offset_share": 100 * (k_offset + 0.5) / (expo["pre"]["exponent"] + 0.5)}
    for pl, ok in halves.items():
        v |= interval(f"k_{pl}", expo[pl]) | {f"{pl}_verdict": "inside" if ok else "outside"}
    glue_all(v, "ln4_")
    return halves


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
        v |= {f"{pl}_spearman": s["spearman"], f"{pl}_ratio": s["last_over_first"],
              **interval(f"{pl}_slope", iv)}
        rows.append((f"{pl.capitalize()}-LN", shape[pl], f"{s['spearman']:+.2f}",
                     f"{s['last_over_first']:.2f}",
                     f"{iv['exponent']:+.2f} ({iv['low']:+.2f} to {iv['high']:+.2f})"))
    v["verdict_post"] = ("rises toward the output, as in the paper" if shape["post"] == "rises"
                         else f"{shape['post']}, unlike the paper's rising profile")
    v["verdict_pre"] = ("is about flat, as in the paper" if shape["pre"] == "about flat" else
                        "falls toward the output, unlike the paper's flat profile"
                        if shape["pre"] == "falls" else f"is {shape['pre']}, not clearly flat")
    glue_all(v, "ln5_")
    return md_table(("placement", "shape", "Spearman ρ", "top / bottom",
                     "log-log slope (95 % interval)"), rows)
def ffn_weight_grad_parts(model, batch, stack: str = "encoder") -> dict:
    """LN-5 taken apart: one backward pass (eval mode) of a Post-LN model; per layer of
    ``stack``, bottom first, ``w2`` = ‖∂L/∂W^{2,l}‖_F with ∂L/∂W^{2,l} = Σ_t Δz_t h_tᵀ, its
    factors ``dz`` = ‖ΔZ‖ (the gradient at the residual sum the layer's last LayerNorm
    reads) and ``h`` = ‖H‖ (the FFN's hidden activations), ``align`` = w2 / (dz · h) in
    [0, 1], and ``stream`` (``gradients.sublayer_grad_norms``'s 'norm' for ``stack``)."""
    from ..nn import hooks

    layers = model.stacks()[stack].layers
    zs, hs = [], []

    def keep_z(module, args, kwargs):
        args[0].retain_grad()
        zs.append(args[0])

    def keep_h(module, args, kwargs):
        hs.append(args[0].detach())

    attach = [(layer.ffn.norm, keep_z) for layer in layers]
    attach += [(layer.ffn.f.fc2, keep_h) for layer in layers]
    with hooks.attached(attach, "forward_pre"), hooks.mode(model):
        model.zero_grad(set_to_none=True)
        hooks.loss_on(model, batch)["loss"].backward()
    w2 = np.array([float(layer.ffn.f.fc2.weight.grad.norm()) for layer in layers])
    dz = np.array([float(z.grad.norm()) for z in zs])
    h = np.array([float(x.norm()) for x in hs])
    model.zero_grad(set_to_none=True)
    stream = gradients.sublayer_grad_norms(model, batch)[stack]["norm"]
    return {"w2": w2, "dz": dz, "h": h, "align": w2 / (dz * h), "stream": stream}


def glue_encoder_under_decoder(task, depth: int, seeds: int, batch_size: int,
                               **model_kw) -> dict:
    """LN-5's Post-LN encoder under a decoder of as many layers: :func:`ffn_weight_grad_parts`
    of the encoder, for seed s a model of seed s on ``task.batch(s, batch_size)`` (as
    ``gradients.ffn_grad_profiles``). Glues ``ln5_ud_*``, each a mean over seeds of one
    seed's ratio: ``stream`` (bottom/top sub-layer gradient), ``w2`` (top/bottom layer's W²
    gradient) with ``w2_rises`` (in how many seeds it is > 1), ``dz`` and ``h`` (top/bottom),
    ``align_bottom`` and ``align_top``; returns them."""
    from ..nn.model import build_model

    parts = []
    for s in range(seeds):
        m = build_model(n_enc=depth, n_dec=depth, placement="post", seed=s,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab, **model_kw)
        parts.append(ffn_weight_grad_parts(m, task.batch(s, batch_size)))
    top = {k: np.array([p[k][-1] / p[k][0] for p in parts]) for k in ("w2", "dz", "h")}
    return glue_all({
        "depth": depth, "seeds": seeds, **{k: float(r.mean()) for k, r in top.items()},
        "stream": float(np.mean([p["stream"][0] / p["stream"][-1] for p in parts])),
        "w2_rises": int((top["w2"] > 1).sum()),
        "align_bottom": float(np.mean([p["align"][0] for p in parts])),
        "align_top": float(np.mean([p["align"][-1] for p in parts]))}, "ln5_ud_")


def gradient_exercises(P, task, seeds: int = 3) -> dict:
    """Chapter 4's exercises, measured. Ex. 2: the Pre-LN exponent of LN-4 without the √d
    embedding scale (``embed_scale=False``), over ``P.depths`` and ``seeds`` seeds. Ex. 3:
    E‖x^{post,5}‖²/d of Post-LN models with FFN width r·d, r = 1, 2, 8, on the reverse task,
    beside :func:`post_ln_sum_norm`. Glues ``ln4_ex2_*`` and ``ln3_ex3_*``; returns them."""
    from ..nn.model import build_model

    kw = P.model_kwargs()
    grads = np.array([gradients.ffn_grad_profiles(task, "pre", n, seeds=seeds,
                                                  batch_size=P.batch_size, embed_scale=False,
                                                  **kw)[:, -1] for n in P.depths])
    out = interval("ln4_ex2", fit.exponent_interval(P.depths, grads), ("_k", "_lo", "_hi"))
    out["ln4_ex2_seeds"] = seeds
    for r in (1, 2, 8):
        m = build_model(n_enc=P.deep, n_dec=0, placement="post", src_vocab=task.src_vocab,
                        tgt_vocab=task.tgt_vocab, seed=0, **{**kw, "d_ffn": r * P.d_model})
        h = hidden.hidden_norms(m, task.batch(0, P.batch_size))
        out[f"ln3_ex3_r{r}"] = float(h["ffn_sum"].mean() / P.d_model)
        out[f"ln3_ex3_r{r}_pred"] = post_ln_sum_norm(r)
    return glue_all(out)
