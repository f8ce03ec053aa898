"""The book's explorers: a figure the reader changes with a few controls.

Every explorer is a ``tfx.book.explorer.Explorer`` (controls, each a small list of values,
and a ``compute(**state)`` returning ``Panel``s of plain numbers): live ipywidgets under
a kernel, every state precomputed into a Vega-Lite chart in the HTML book. How to
declare one: the docstring of ``tfx.book.explorer``.
"""
from __future__ import annotations

import numpy as np

from ..nn.config import ModelConfig, TrainConfig
from ..nn.model import build_scheme
from ..runs import outcome
from .explorer import Explorer, Panel
from .plot import CHECK_COLORS, GREYS, LABELS, STACK_COLORS, color, warmup_colors

__all__ = ["Explorer", "Panel", "init_diagnostics_explorer", "why_hard_explorer", "training_explorer", "layernorm_jacobian_explorer",
           "gradients_at_init_explorer", "amplification_explorer"]

SCHEME_LABELS = {"post": "post-LN", "pre": "pre-LN", "admin": "admin (Post-LN + ω)"}


def _ln_profile(P):
    from ..runs.profiles import get_profile

    return get_profile() if P is None else P


def _smooth(ys, k: int = 5):
    """A k-step moving average (the loss curves' noise hides their shape)."""
    ys = np.asarray(ys, dtype=float)
    if len(ys) < k:
        return ys
    return np.convolve(ys, np.ones(k) / k, mode="valid")


# ============================================================== training runs, shared by the training explorers


class _Runs:
    """Training runs by configuration: the given records first, else trained now (seed 0)."""

    def __init__(self, P, task, records=(), steps: int | None = None):
        self.P, self.task, self.steps = P, task, steps or P.train_steps
        self.cache = {self.key(r.config, r.train_config): r for r in records}

    @staticmethod
    def key(cfg, tc) -> tuple:
        return (cfg.placement, cfg.init, cfg.n_enc, cfg.n_dec, cfg.d_model, cfg.n_heads, cfg.d_ffn,
                float(tc.lr), tc.warmup, tc.steps, tc.batch_size, tc.schedule, tc.seed)

    def get(self, placement, init, depth, lr, warmup=0):
        """The Record of one run; raises the library's ValueError for a refused setting."""
        cfg = ModelConfig.for_task(self.task, n_enc=depth, n_dec=depth, placement=placement, init=init,
                                   **self.P.model_kwargs(train=True))
        return self._record(cfg, lr, warmup)

    def scheme(self, scheme, depth, lr, warmup=0):
        """The Record of one run of ``scheme`` (a key of tfx.nn.config.SCHEMES), N+N layers."""
        cfg = ModelConfig.for_scheme(scheme, self.task, depth, depth, **self.P.model_kwargs(train=True))
        return self._record(cfg, lr, warmup)

    def _record(self, cfg, lr, warmup):
        from ..runs.sweep import run_one

        tc = TrainConfig(steps=self.steps, batch_size=self.P.batch_size, lr=lr, warmup=warmup,
                         device=self.P.device, record_updates=False, seed=0)
        k = self.key(cfg, tc)
        if k not in self.cache:
            self.cache[k] = run_one("explorer", cfg, self.task, tc, seed=0)
        return self.cache[k]


def _loss_lines(hist, label):
    ys = _smooth(hist.loss)
    return label, (np.asarray(hist.step[len(hist.step) - len(ys):]), ys)


def _status_note(rec) -> str:
    out = outcome.judge(rec)
    held_out = "" if out.verdict == "diverged" else f", held-out loss {out.loss:.2f}"
    return f"{out.verdict}{held_out} nats/token (chance {out.chance:.2f})"


def _refused(e: ValueError, n_panels: int) -> list:
    import textwrap

    msg = "\n".join(textwrap.wrap("refused by the library: " + str(e), 45))
    return [Panel(note=msg if k == 0 else "") for k in range(n_panels)]


# ============================================================== the opening chapter's explorer


def why_hard_explorer(P=None, task=None, depths=(2, 6), lr: float = 3e-3, records=(), steps: int | None = None):
    """The whole story at one glance (AD-3, AM-2, GV-1 at toy scale): choose where the
    LayerNorm sits (post, pre), the initialiser (xavier, admin: Admin is Post-LN with
    profiled ω) and the depth N; see side by side

    * the loss of a real training run (``steps`` (default ``P.train_steps``) Adam steps at peak ``lr``, no
      warmup, seed 0, an N+N encoder–decoder on ``task``); the other settings of the
      same depth faint;
    * the output change ‖F(W) − F(W + δ)‖² at initialisation of encoders of 1 … N layers
      (random δ = 1e-2 × each matrix's std, mean over ``P.seeds`` models,
      ``change.output_change_sweep``);
    * the relative gradient ‖∂L/∂x_i‖ of every sub-layer output at initialisation
      (``gradients.sublayer_grad_norms``).

    Every (valid) setting trains once when the explorer is shown (``records`` from
    ``tfx.runs.sweep.run_grid`` are reused). Pre-LN with Admin's initialiser is refused by
    the library, and the explorer shows its message."""
    from ..theory import change, gradients

    P = _ln_profile(P)
    task = task or P.load_task()
    runs = _Runs(P, task, records, steps)
    batch = task.batch(0, P.batch_size)
    kw = P.model_kwargs(train=True)
    scheme = {("post", "xavier"): "post", ("pre", "xavier"): "pre", ("post", "admin"): "admin"}
    oc_depths = sorted({1, *range(2, max(depths) + 1, 2), *depths})
    sweep = change.output_change_sweep(task, oc_depths, ("post", "pre", "admin"), seeds=P.seeds,
                                       batch_size=P.batch_size, **kw)

    def compute(placement, init, depth):
        try:
            if (placement, init) not in scheme:  # ask the library: it explains why not
                runs.get(placement, init, depth, lr)
            sch = scheme[(placement, init)]
            rec = runs.scheme(sch, depth, lr)
        except ValueError as e:
            return _refused(e, 3)
        lines, styles = {}, {}
        for other in ("post", "pre", "admin"):
            r = rec if other == sch else runs.scheme(other, depth, lr)
            label, xy = _loss_lines(r.history, SCHEME_LABELS[other])
            lines[label] = xy
            styles[label] = "bold" if other == sch else "faint"
        h = rec.history
        loss = Panel(title=f"training loss, N = {depth}+{depth}, lr {lr:g}", x="step", y="loss (nats/token)",
                     lines=lines, styles=styles, note=_status_note(rec))
        loss.level("chance", h.step[0], h.step[-1], h.chance_loss)
        upto = [i for i, n in enumerate(oc_depths) if n <= depth]
        oc = Panel(title="output change at init", x="encoder layers", y="‖ΔF‖² per token", ylog=True,
                   lines={SCHEME_LABELS[o]: (np.array(oc_depths)[upto], sweep[o].mean(1)[upto])
                          for o in ("post", "pre", "admin")},
                   styles={SCHEME_LABELS[o]: ("bold" if o == sch else "faint") for o in ("post", "pre", "admin")},
                   note=f"{SCHEME_LABELS[sch]} at N = {depth}: {sweep[sch].mean(1)[oc_depths.index(depth)]:.3g}")
        m = build_scheme(sch, task, depth, depth, batch=batch, **kw)
        g = gradients.sublayer_grad_norms(m, batch)
        grad = Panel(title="gradient at init, per sub-layer", x="sub-layer i (bottom → top)",
                     y="relative ‖∂L/∂x_i‖", ylog=True,
                     lines={stack: (np.arange(1, len(g[stack]["relative"]) + 1), g[stack]["relative"])
                            for stack in ("encoder", "decoder")},
                     colors=dict(STACK_COLORS),
                     note=f"decoder bottom/top: {g['decoder']['relative'][0] / g['decoder']['relative'][-1]:.2g}")
        return [loss, oc, grad]

    return Explorer({"placement": ["post", "pre"], "init": ["xavier", "admin"], "depth": list(depths)},
                    compute, default={"placement": "post", "init": "xavier", "depth": max(depths)},
                    labels={"init": "initialiser", "depth": "layers N"},
                    title="Placement × initialiser × depth: one run, its output change and its gradients", P=P)


# ============================================================== training explorer (anatomy chapter)


def training_explorer(P=None, task=None, depth: int | None = None, lr: float | None = None,
                      warmups=(0, 0.1), records=(), default: dict | None = None):
    """Warmup against placement (WU-1, AD-3 at toy scale): an N+N encoder–decoder trained
    ``P.train_steps`` Adam steps at peak ``lr`` on ``task``, for each placement (post,
    pre, admin) and each warmup (a fraction of the steps). Left: the loss of the chosen
    run, the same placement with the other warmup faint, chance dotted. Right: the
    gradient norm per step (before clipping) of the same two runs.

    ``records`` (from ``tfx.runs.sweep.run_grid``) are reused; the other settings train when
    the explorer is shown."""
    P = _ln_profile(P)
    task = task or P.load_task()
    depth = depth or P.deep
    lr = lr or P.train_lr
    runs = _Runs(P, task, records)
    steps = {f"{w:.0%}": int(round(w * P.train_steps)) for w in warmups}

    def compute(placement, warmup):
        lines, grads, styles = {}, {}, {}
        for w in steps:
            rec = runs.scheme(placement, depth, lr, warmup=steps[w])
            label = f"warmup {w}"
            _, lines[label] = _loss_lines(rec.history, label)
            gn = _smooth(rec.history.grad_norm)
            grads[label] = (np.asarray(rec.history.step[len(rec.history.step) - len(gn):]), gn)
            styles[label] = "bold" if w == warmup else "faint"
            if w == warmup:
                chosen = rec
        h = chosen.history
        # no warmup … the longest, as chapters 11 and 12 colour their warmups
        colors = {f"warmup {w}": c for w, c in zip(steps, warmup_colors(len(steps)))}
        loss = Panel(title=f"{SCHEME_LABELS[placement]}, N = {depth}+{depth}, lr {lr:g}", x="step",
                     y="loss (nats/token)", lines=lines, styles=dict(styles), colors=dict(colors),
                     note=_status_note(chosen))
        loss.level("chance", h.step[0], h.step[-1], h.chance_loss)
        return [loss,
                Panel(title="gradient norm (before clipping)", x="step", y="‖∂L/∂θ‖", ylog=True, lines=grads,
                      styles=styles, colors=colors,
                      note=f"warmup {warmup}: peak lr reached at step {max(steps[warmup], 1)}")]

    return Explorer({"placement": ["post", "pre", "admin"], "warmup": list(steps)}, compute,
                    default=default or {"placement": "post", "warmup": list(steps)[-1]},
                    labels={"warmup": "warmup (share of the steps)"},
                    title=f"{task.name}: placement × warmup, {P.train_steps} steps", P=P)


# ============================================================== LayerNorm / gradients-at-init explorers


def layernorm_jacobian_explorer(P=None, widths=(16, 64, 256), norms=(1e-3, 1e-2, 0.1, 1.0, 8.0, 64.0, 1e3),
                                epss=(1e-8, 1e-5, 1e-2)):
    """LN-1: pick the width d, the size ‖x − μ‖ of the input and LayerNorm's eps.

    Left: the spectral norm of the Jacobian against ‖x − μ‖ (the closed form
    ``tfx.theory.jacobian.layernorm_jacobian_norm`` as a line, the autograd measurement at the
    chosen input as a dot). Right: all d singular values of the measured Jacobian:
    d − 2 of them equal √d/s, one is the eps direction, one is 0."""
    import torch

    from ..theory import jacobian

    P = _ln_profile(P)
    grid = np.logspace(-3, 3, 49)

    def compute(d, norm, eps):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(d, generator=g, dtype=torch.float64)
        x = x - x.mean()
        u = x / x.norm()
        J = torch.autograd.functional.jacobian(lambda v: torch.nn.functional.layer_norm(v, (d,), eps=eps), norm * u)
        sv = np.sort(torch.linalg.svdvals(J).numpy())[::-1]
        measured = jacobian.ln_jacobian_norm(norm * u, eps=eps, method="exact")
        curve = jacobian.layernorm_jacobian_norm(torch.tensor(grid)[:, None] * u, eps=eps).numpy()
        left = Panel(title="‖J_LN‖₂ against ‖x − μ‖", x="‖x − μ‖", y="‖J_LN(x)‖₂",
                     xlog=True, ylog=True, lines={"closed form": (grid, curve)},
                     points={"autograd at the chosen input": ([norm], [measured])},
                     colors={"closed form": CHECK_COLORS["closed form"],
                             "autograd at the chosen input": CHECK_COLORS["autograd"]},
                     note=f"autograd {measured:.4g}; √(d·eps) = {np.sqrt(d * eps):.2g}")
        right = Panel(title="all d singular values of J", x="index (largest first)", y="singular value",
                      points={"singular values": (np.arange(1, d + 1), sv)},
                      colors={"singular values": CHECK_COLORS["autograd"]},
                      fixed_y=False,  # from ~0.03 (d = 16, large input) to ~8000 (small input): own range
                      note=f"{d - 2} × {sv[0]:.4g}, then {sv[-2]:.3g} (eps) and {sv[-1]:.1g}")
        return [left, right]

    return Explorer({"d": list(widths), "norm": list(norms), "eps": list(epss)}, compute,
                    default={"d": 64, "norm": 8.0, "eps": 1e-5}, labels={"d": "width d", "norm": "‖x − μ‖"},
                    title="The LayerNorm Jacobian (LN-1)", P=P)


def gradients_at_init_explorer(P=None, depths=None,
                               params=("ffn.f.fc2.weight", "ffn.f.fc1.weight", "self_attn.f.v_proj.weight",
                                       "self_attn.f.out_proj.weight", "self_attn.f.q_proj.weight")):
    """LN-3 … LN-5: a fresh encoder-only model at initialisation, per placement (post,
    pre or both), depth N and weight. Left: ‖∂loss/∂W‖ per layer (one backward pass on
    one batch of the reverse task). Right: E‖x‖²/d of each layer's FFN residual sum
    (Post-LN: x^{post,5}; Pre-LN: the stream after l blocks) with Lemma 2's predictions."""
    from functools import lru_cache

    from ..theory import fit, gradients, hidden
    from ..runs.data import synthetic
    from ..nn.model import build_model

    P = _ln_profile(P)
    depths = list(depths or P.depths[:4])
    task = synthetic("reverse", length=P.seq_len)
    batch = task.batch(0, P.batch_size)
    d = P.d_model

    @lru_cache(maxsize=None)
    def model(pl, depth):
        return build_model(n_enc=depth, n_dec=0, placement=pl, seed=0, src_vocab=task.src_vocab,
                           tgt_vocab=task.tgt_vocab, **P.model_kwargs())

    @lru_cache(maxsize=None)
    def grads(pl, depth, param):
        return gradients.layer_grad_norms(model(pl, depth), batch, "encoder", param)

    def compute(placement, depth, param):
        places = ("post", "pre") if placement == "both" else (placement,)
        layers = np.arange(1, depth + 1)
        bars, lines, styles, notes = {}, {}, {}, []
        for pl in places:
            g = grads(pl, depth, param)
            st = fit.profile_stats(g)
            bars[f"{pl}-LN"] = (layers, g)
            notes.append(f"{pl}: Spearman {st['spearman']:+.2f}, top/bottom {st['last_over_first']:.2f}")
            h = hidden.hidden_norms(model(pl, depth), batch)
            lines[f"{pl}-LN measured"] = (layers, h["ffn_sum"] / d)
            if pl == "pre":
                lo, hi = zip(*(hidden.pre_ln_hidden_norm_sq_bounds(l, d, h["input"]) for l in layers))
                lines["Lemma 2 bounds, pre-LN (low)"] = (layers, np.array(lo) / d)
                lines["Lemma 2 bounds, pre-LN (high)"] = (layers, np.array(hi) / d)
                styles["Lemma 2 bounds, pre-LN (low)"] = styles["Lemma 2 bounds, pre-LN (high)"] = "dashed"
            else:
                lines["Lemma 2: 1.5, post-LN"] = (layers, np.full(depth, hidden.post_ln_hidden_norm_sq(d) / d))
                styles["Lemma 2: 1.5, post-LN"] = "dashed"
        colors = {"Lemma 2 bounds, pre-LN (low)": color("pre"),
                  "Lemma 2 bounds, pre-LN (high)": color("pre"),
                  "Lemma 2: 1.5, post-LN": color("post")}
        return [Panel(title="‖∂loss/∂W‖ per layer", x="layer l", y="gradient norm", bars=bars,
                      note="\n".join([f"W = {param}", *notes]), fixed_y=False),  # weights differ by orders of magnitude
                Panel(title="E‖x‖²/d of the FFN residual sum", x="layer l", y="E‖x‖² / d", lines=lines,
                      styles=styles, colors=colors, ylog=True,
                      note="Lemma 2: 1.5 (post-LN),\nbetween the dashed bounds (pre-LN)")]

    return Explorer({"placement": ["both", "post", "pre"], "depth": depths, "param": list(params)}, compute,
                    default={"placement": "both", "depth": P.deep if P.deep in depths else depths[-1]},
                    labels={"depth": "layers N", "param": "weight"},
                    title="Gradients at initialisation (LN-3 … LN-5)", P=P)


# ============================================================== amplification / Admin explorers


def amplification_explorer(P=None, depths=None, default: dict | None = None):
    """GV-1, AM-1, AM-2, AD-1: a fresh model at initialisation, per placement (post, pre,
    admin) and depth N. Top left: the layer dependency β_{i,j} of an N-layer encoder
    (``dependency.layer_dependency``; column 0 is the embedding). Top right: the output
    change ‖F(W) − F(W + δ)‖² under random noise (δ = 1e-2 × each matrix's std; mean
    over ``P.seeds`` models, the change is heavy-tailed) for encoders of 1 … N layers,
    all three placements, the chosen one bold, with Theorem 2's shape (N or ln N)
    fitted to it. Bottom: the relative gradient norm of every
    sub-layer output of an N+N encoder–decoder. ``default``: the state shown first
    ({"placement": ..., "depth": ...}); ``depths``: default ``P.depths``."""
    from ..theory import change, dependency, fit, gradients
    from ..runs.data import synthetic

    P = _ln_profile(P)
    depths = list(depths or P.depths)
    task = synthetic("reverse", length=P.seq_len)
    batch = task.batch(0, P.batch_size)
    oc_depths = sorted({1, *depths})
    sweep = change.output_change_sweep(task, oc_depths, ("post", "pre", "admin"), seeds=P.seeds,
                                       batch_size=P.batch_size, **P.model_kwargs())

    def compute(placement, depth):
        m = build_scheme(placement, task, depth, 0, batch=batch, **P.model_kwargs())
        beta = dependency.layer_dependency(m, batch)["encoder"]["beta"]
        upto = np.array([n for n in oc_depths if n <= depth])
        lines = {SCHEME_LABELS[s]: (upto, sweep[s].mean(1)[: len(upto)]) for s in ("post", "pre", "admin")}
        styles = {SCHEME_LABELS[s]: ("bold" if s == placement else "faint") for s in ("post", "pre", "admin")}
        note = ""
        if len(upto) >= 3:
            y = sweep[placement].mean(1)[: len(upto)]
            x = upto if placement == "post" else np.log(upto)
            k, c0, r2 = fit.fit_linear(x, y)
            grid = np.arange(1, depth + 1)  # integer depths: the axis keeps integer ticks
            form = "N" if placement == "post" else "ln N"
            lines[f"fit against {form}"] = (grid, k * (grid if placement == "post" else np.log(grid)) + c0)
            styles[f"fit against {form}"] = "dashed"
            note = f"{SCHEME_LABELS[placement]} against {form}: R² = {r2:.2f}"
        ed = build_scheme(placement, task, depth, depth, batch=batch, **P.model_kwargs())
        g = gradients.sublayer_grad_norms(ed, batch)
        dec = g["decoder"]["relative"]
        return [
            Panel(title=f"β of a {depth}-layer {placement} encoder", x="branch j (0: embedding)",
                  y="sub-layer output i", heatmap=beta, vmin=0, vmax=1,
                  note=f"β_ii² at the top: {np.diag(beta)[-1] ** 2:.3f}"),
            Panel(title="output change under random δ", x="layers N", y="‖ΔF‖² per token", lines=lines,
                  styles=styles, note=note,
                  colors=dict.fromkeys(("fit against N", "fit against ln N"), GREYS["reference"]),
                  fixed_y=False),  # the x range follows N: so does y, the three placements share it
            Panel(title="gradient at init, N+N encoder–decoder", x="sub-layer i (bottom → top)",
                  y="relative ‖∂L/∂x_i‖", ylog=True,
                  lines={stack: (np.arange(1, len(g[stack]["relative"]) + 1), g[stack]["relative"])
                         for stack in ("encoder", "decoder")},
                  colors=dict(STACK_COLORS), styles={"decoder": "bold"},
                  note=f"decoder bottom/top: {dec[0] / dec[-1]:.2g}"),
        ]

    return Explorer({"placement": ["post", "pre", "admin"], "depth": depths}, compute,
                    default={"placement": "post", "depth": 6 if 6 in depths else depths[len(depths) // 2],
                             **(default or {})},
                    labels={"depth": "layers N"},
                    title="β, output change and gradients at initialisation (GV-1, AM-1, AM-2, AD-1)", P=P)


# The initialisers chapter 10's explorer offers, each shown on its scheme (tfx.nn.config.SCHEMES):
# Xavier on Post-LN, the others on the placement they are defined for.
INIT_DIAGNOSTICS = {"xavier": "post", "t-fixup": "t-fixup", "lipschitz": "lipschitz", "admin": "admin",
                    "rezero": "rezero", "deepnorm": "deepnorm"}


def init_diagnostics_explorer(grid: dict, P=None, default: dict | None = None, references=("post", "pre")):
    """The chapter's explorer over an ``init_diagnostics_grid``: choose the initialiser (a key of
    :data:`INIT_DIAGNOSTICS`) and the depth N. Panels: the encoder's β_{i,j}; the relative
    gradient norm of every sub-layer output (encoder and decoder); the relative output change
    against depth for the chosen initialiser's scheme (bold) beside the schemes ``references``
    (faint). Every state comes from the grid, so the HTML book holds them all (tfx.book.explorer)."""
    from ..theory.scaling import grid_mean

    inits = [i for i, s in INIT_DIAGNOSTICS.items() if any(k == s for k, _ in grid)]
    depths = sorted({n for _, n in grid})
    floor = 1e-4  # a zero gradient (ReZero's encoder at init) is drawn on the floor

    def compute(init, depth):
        scheme = INIT_DIAGNOSTICS[init]
        d = grid[scheme, depth][0]
        shown = [s for s in dict.fromkeys((*references, scheme)) if s in {k for k, _ in grid}]
        lines = {LABELS[s]: grid_mean(grid, s, "rel_out_change") for s in shown}
        lines = {k: (ns, np.maximum(y, 1e-12)) for k, (ns, y) in lines.items()}
        return [
            Panel(title=f"β of the {depth}-layer encoder", x="branch j (0: embedding)", y="sub-layer output i",
                  heatmap=d.beta, vmin=0, vmax=1, note=f"Σβ²_ii = {d.sum_beta_diag_sq:.2f}"),
            Panel(title=f"gradient at init, {depth}+{depth} layers", x="sub-layer i (bottom → top)",
                  y="relative ‖∂L/∂x_i‖", ylog=True,
                  lines={stack: (np.arange(1, len(d.grad[stack]) + 1), np.maximum(d.grad[stack], floor))
                         for stack in ("encoder", "decoder")},
                  colors=dict(STACK_COLORS), styles={"decoder": "bold"},
                  note=f"decoder bottom/top: {d.grad_spread['decoder']:.2g}"),
            Panel(title="output change under random δ", x="layers N", y="‖ΔF‖² / ‖F‖²", ylog=True, lines=lines,
                  styles={LABELS[s]: "bold" if s == scheme else "faint" for s in shown},
                  colors={LABELS[s]: color(s) for s in shown}, fixed_y=False),
        ]

    return Explorer({"init": inits, "depth": depths}, compute,
                    default={"init": "deepnorm" if "deepnorm" in inits else inits[0], "depth": depths[-1],
                             **(default or {})},
                    labels={"init": "initialiser", "depth": "layers N"},
                    title="Initialisers at init: β, gradients, output change", P=P,
                    panel_width=215)  # three legends of scheme names: narrower panels keep the row in the column
