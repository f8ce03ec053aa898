"""The explorers: ipywidgets that let a reader change a setting and see the result.

Each explorer is one function returning a widget to display; it computes its
default state when built, so the HTML book (which saves widget state) shows that
state, and Jupyter/Colab recompute live. Heavy work runs on a button press.
"""
from __future__ import annotations

import ipywidgets as W
import matplotlib.pyplot as plt


def _panel(controls: list, run, button: str | None = None, live: bool = False):
    """Controls above an Output area. ``run(**values)`` draws into the output; it
    runs once now (the default state), then on every button press (or every change
    when ``live``)."""
    out = W.Output()
    values = lambda: {c.description_key: c.value for c in controls}  # noqa: E731

    def redraw(*_):
        out.clear_output(wait=True)
        with out:
            run(**values())
            plt.show()

    box = list(controls)
    if button:
        b = W.Button(description=button, button_style="primary")
        b.on_click(redraw)
        box.append(b)
    if live:
        for c in controls:
            c.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox(box[:3]), W.HBox(box[3:]), out]) if len(box) > 3 else W.VBox([W.HBox(box), out])


def control(kind, key: str, description: str, **kw):
    """A widget whose value is passed to ``run`` as keyword ``key``."""
    w = kind(description=description, style={"description_width": "initial"}, **kw)
    w.description_key = key
    return w


# ============================================================== training explorer (anatomy chapter)


def _train_key(cfg, tc) -> tuple:
    """What identifies a training run for the explorer's cache."""
    return (cfg.placement, cfg.init, cfg.n_enc, cfg.n_dec, cfg.d_model, cfg.n_heads, cfg.d_ffn,
            float(tc.lr), tc.warmup, tc.steps, tc.batch_size, tc.schedule, tc.seed)


def training_explorer(P=None, task=None, depth: int | None = None, lr: float | None = None,
                      placement: str = "post", init: str = "xavier", warmup: int = 0, records=()):
    """Train a tiny encoder–decoder live (AD-3, WU-1 at toy scale).

    Choose the placement of the normalisation, the initialiser, the depth N
    (encoder and decoder layers), the peak learning rate and the warmup steps, then
    press *Train*: a fresh model (seed 0) trains ``P.train_steps`` steps with Adam on
    ``task`` (default: the reverse task, length ``P.seq_len``) at the profile's width
    and batch size, and its loss curve appears with the run's status ('ok', 'stuck'
    near chance, or 'diverged'); earlier runs stay in grey for comparison. A setting
    the library refuses (e.g. init='admin' with placement='pre') shows the library's
    message instead of a curve. ``records`` (from ``tfx.sweep.run_grid``) pre-fill a
    cache, so a setting the chapter already trained is drawn without retraining."""
    import textwrap

    from .config import INITS, PLACEMENTS, ModelConfig, TrainConfig
    from .data import synthetic
    from .plot import figure, loss_curves
    from .sweep import run_one

    P = _ln_profile(P)
    task = task or synthetic("reverse", length=P.seq_len)
    depth = depth or P.deep
    lr = lr or P.train_lr
    cache = {_train_key(r.config, r.train_config): r for r in records}
    past = []  # (label, History) of earlier presses, newest last

    def run(placement, init, depth, lr, warmup):
        try:
            cfg = ModelConfig.for_task(task, n_enc=depth, n_dec=depth, placement=placement, init=init,
                                       **P.model_kwargs(train=True))
            tc = TrainConfig(steps=P.train_steps, batch_size=P.batch_size, lr=lr, warmup=warmup,
                             device=P.device, record_updates=False)
        except ValueError as e:
            print("This combination is not allowed:\n" + textwrap.fill(f"ValueError: {e}", 72, subsequent_indent="  "))
            return
        key = _train_key(cfg, tc)
        rec = cache.get(key)
        if rec is None:
            rec = cache[key] = run_one("explorer", cfg, task, tc, seed=0)
        h = rec.history
        label = f"{placement} ({init}), N {depth}, lr {lr:.1e}, warmup {warmup}"
        fig, ax = figure(P, width=7.6, height=3.6)
        for old_label, old in past[-4:]:
            if old_label != label:
                ax.plot(old.step, old.loss, color="#999999", lw=0.9, alpha=0.6)
        loss_curves(ax, {label: h})
        ax.set_title(f"{task.name}: status {h.status}, final loss {h.final_loss():.3f} "
                     f"(chance {h.chance_loss:.2f}) · {rec.wall_time:.0f} s", fontsize=9)
        if past and any(lbl != label for lbl, _ in past[-4:]):
            ax.plot([], [], color="#999999", lw=0.9, label="earlier runs")
            ax.legend(fontsize=8)
        past[:] = [(lbl, old) for lbl, old in past if lbl != label] + [(label, h)]
        if h.reason:
            print(textwrap.fill(f"{h.status}: {h.reason}", 72))

    controls = [
        control(W.Dropdown, "placement", "placement", options=list(PLACEMENTS), value=placement),
        control(W.Dropdown, "init", "initialiser", options=list(INITS), value=init),
        control(W.IntSlider, "depth", "layers N", value=depth, min=1, max=24, step=1,
                continuous_update=False),
        control(W.FloatLogSlider, "lr", "peak lr", value=lr, base=10, min=-5, max=-1.5, step=0.25,
                readout_format=".1e", continuous_update=False),
        control(W.IntSlider, "warmup", "warmup steps", value=warmup, min=0, max=P.train_steps, step=10,
                continuous_update=False),
    ]
    return _panel(controls, run, button="Train")


# ============================================================== LayerNorm / gradients-at-init explorers


def _ln_profile(P):
    from .profiles import get_profile

    return get_profile() if P is None else P


def layernorm_jacobian_explorer(P=None):
    """LN-1, live: pick the width d, the size ‖x − μ‖ of the input and LayerNorm's eps.

    Left: the spectral norm of the Jacobian against ‖x − μ‖ (the closed form
    ``tfx.theory.layernorm_jacobian_norm`` as a line, the autograd measurement at the
    chosen input as a dot). Right: all d singular values of the measured Jacobian:
    d − 2 of them equal √d/s, one is the eps direction, one is 0."""
    import numpy as np
    import torch

    from . import probes, theory
    from .plot import color, figure

    P = _ln_profile(P)

    def run(d, norm, eps):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(d, generator=g, dtype=torch.float64)
        x = x - x.mean()
        u = x / x.norm()
        J = torch.autograd.functional.jacobian(lambda v: torch.nn.functional.layer_norm(v, (d,), eps=eps), norm * u)
        sv = torch.linalg.svdvals(J).numpy()
        measured = probes.ln_jacobian_norm(norm * u, eps=eps, method="exact")
        grid = np.logspace(-2, 3, 120)
        curve = theory.layernorm_jacobian_norm(torch.tensor(grid)[:, None] * u, eps=eps).numpy()
        fig, (a, b) = figure(P, ncols=2)
        a.loglog(grid, curve, color=color("pre"), label=r"$\sqrt{d}/\sqrt{\|x-\mu\|^2 + d\,\epsilon}$")
        a.loglog([norm], [measured], "o", color=color("post"), label=f"autograd: {measured:.3g}")
        a.axvline(np.sqrt(d), ls=":", color="#444444", lw=1, label=r"$\|x-\mu\| = \sqrt{d}$")
        a.set_xlabel(r"$\|x-\mu\|$")
        a.set_ylabel(r"$\|J_{LN}(x)\|_2$")
        a.set_title(f"d = {d}, eps = {eps:.0e}")
        a.legend(fontsize=8)
        b.plot(np.arange(1, d + 1), sv, ".", color=color("post"), ms=4)
        b.set_xlabel("index")
        b.set_ylabel("singular value of J")
        b.set_title(r"all $d$ singular values: $d-2$ equal $\sqrt{d}/s$", fontsize=9)
        b.set_ylim(bottom=-0.05 * max(sv.max(), 1e-12))

    controls = [
        control(W.IntSlider, "d", "width d", value=64, min=3, max=512, step=1, continuous_update=False),
        control(W.FloatLogSlider, "norm", "‖x − μ‖", value=8.0, base=10, min=-2, max=3, step=0.05,
                continuous_update=False),
        control(W.FloatLogSlider, "eps", "eps", value=1e-5, base=10, min=-8, max=1, step=0.5,
                continuous_update=False),
    ]
    return _panel(controls, run, live=True)


def gradients_at_init_explorer(P=None):
    """LN-3 … LN-5, on a button: a fresh encoder-only model at initialisation.

    Choose the placement (Post-LN, Pre-LN or both), the depth N and the weight whose
    gradient is shown. Left: ‖∂loss/∂W‖ per layer (one backward pass on one batch
    of the reverse task). Right: E‖x‖²/d of each layer's FFN residual sum (Post-LN:
    x^{post,5}; Pre-LN: the stream after l blocks) with Lemma 2's predictions."""
    import numpy as np

    from . import probes, theory
    from .data import synthetic
    from .plot import color, figure

    P = _ln_profile(P)
    task = synthetic("reverse", length=P.seq_len)

    def run(placement, depth, param):
        from .model import build_model

        places = ("post", "pre") if placement == "both" else (placement,)
        fig, (a, b) = figure(P, ncols=2)
        width = 0.8 / len(places)
        for k, pl in enumerate(places):
            m = build_model(n_enc=depth, n_dec=0, placement=pl, seed=0, src_vocab=task.src_vocab,
                            tgt_vocab=task.tgt_vocab, **P.model_kwargs())
            batch = task.batch(0, P.batch_size)
            g = probes.layer_grad_norms(m, batch, "encoder", param)
            st = probes.profile_stats(g)
            layers = np.arange(1, depth + 1)
            a.bar(layers + (k - (len(places) - 1) / 2) * width, g, width, color=color(pl),
                  label=f"{pl}-LN (Spearman {st['spearman']:+.2f}, top/bottom {st['last_over_first']:.2f})")
            h = probes.hidden_norms(m, batch)
            d = P.d_model
            b.plot(layers, h["ffn_sum"] / d, "o-", color=color(pl), ms=3, label=f"{pl}-LN measured")
            if pl == "pre":
                lo, hi = zip(*(theory.pre_ln_hidden_norm_sq_bounds(l, d, h["input"]) for l in layers))
                b.fill_between(layers, np.array(lo) / d, np.array(hi) / d, color=color(pl), alpha=0.15,
                               label="Lemma 2 bounds (Pre-LN)")
            else:
                b.axhline(theory.post_ln_hidden_norm_sq(d) / d, ls="--", color=color(pl), lw=1,
                          label="Lemma 2: 1.5 (Post-LN)")
        a.set_xlabel("layer l")
        a.set_ylabel(f"‖∂loss/∂ {param}‖")
        a.legend(fontsize=7)
        b.set_xlabel("layer l")
        b.set_ylabel("E‖x‖² / d of the FFN residual sum")
        b.legend(fontsize=7)

    controls = [
        control(W.Dropdown, "placement", "placement", options=["both", "post", "pre"], value="both"),
        control(W.IntSlider, "depth", "layers N", value=P.deep, min=2, max=24, step=1),
        control(W.Dropdown, "param", "weight", value="ffn.f.fc2.weight",
                options=["ffn.f.fc2.weight", "ffn.f.fc1.weight", "self_attn.f.v_proj.weight",
                         "self_attn.f.out_proj.weight", "self_attn.f.q_proj.weight"]),
    ]
    return _panel(controls, run, button="Measure")


# ============================================================== amplification / Admin explorers


def amplification_explorer(P=None):
    """GV-1, AM-1, AM-2, AD-1 on a button: a fresh model at initialisation.

    Choose the placement (Post-LN, Pre-LN or Admin) and the depth N. Left: the layer
    dependency β_{i,j} of an N-layer encoder (``probes.layer_dependency``; column 0 is
    the embedding). Middle: the output change ‖F(W) − F(W + δ)‖² under random noise
    (δ = 1e-2 × each matrix's std) for encoders of 1 … N layers, all three placements,
    the chosen one bold, with Theorem 2's shape (N or ln N) fitted to it. Right: the
    relative gradient norm of every sub-layer output of an N-layer encoder–decoder."""
    import numpy as np

    from . import probes, theory
    from .data import synthetic
    from .plot import color, figure, heatmap

    P = _ln_profile(P)
    task = synthetic("reverse", length=P.seq_len)
    batch = task.batch(0, P.batch_size)

    def run(placement, depth):
        fig, (a, b, c) = figure(P, ncols=3, width=13.5, height=3.6)
        m = probes.build_scheme(placement, task, depth, batch=batch, **P.model_kwargs())
        beta = probes.layer_dependency(m, batch)["encoder"]["beta"]
        heatmap(a, beta, title=f"β of a {depth}-layer {placement} encoder", xlabel="branch j (0: embedding)",
                ylabel="sub-layer output i", vmin=0, vmax=1)
        depths = sorted({1, max(1, depth // 4), max(1, depth // 2), depth})
        sweep = probes.output_change_sweep(task, depths, ("post", "pre", "admin"), seeds=1,
                                           batch_size=P.batch_size, **P.model_kwargs())
        N = np.array(depths, dtype=float)
        for sch in ("post", "pre", "admin"):
            y = sweep[sch].mean(1)
            b.plot(N, y, "o-", color=color(sch), lw=2.5 if sch == placement else 1, ms=4,
                   alpha=1 if sch == placement else 0.45, label=f"{sch}-LN" if sch != "admin" else "Admin")
        y = sweep[placement].mean(1)
        x = N if placement == "post" else np.log(N)
        if len(depths) >= 3:
            k, c0, r2 = theory.fit_linear(x, y)
            grid = np.linspace(1, depth, 100)
            form = "N" if placement == "post" else "ln N"
            b.plot(grid, k * (grid if placement == "post" else np.log(grid)) + c0, "--", color="#444444", lw=1,
                   label=f"fit against {form}: R² = {r2:.2f}")
        b.set_xlabel("layers N")
        b.set_ylabel("‖ΔF‖² per token (random δ)")
        b.legend(fontsize=7)
        ed = probes.build_scheme(placement, task, depth, batch=batch, n_dec=depth, **P.model_kwargs())
        g = probes.sublayer_grad_norms(ed, batch)
        for stack, mk in (("encoder", "o"), ("decoder", "s")):
            r = g[stack]
            c.semilogy(np.arange(1, len(r["relative"]) + 1), r["relative"], mk + "-", ms=3,
                       color=color(placement), alpha=1 if stack == "decoder" else 0.5, label=stack)
        c.set_xlabel("sub-layer i (bottom → top)")
        c.set_ylabel("relative ‖∂loss/∂x_i‖")
        c.set_title(f"{depth}+{depth}-layer encoder–decoder", fontsize=9)
        c.legend(fontsize=7)

    controls = [
        control(W.Dropdown, "placement", "placement", options=["post", "pre", "admin"], value="post"),
        control(W.IntSlider, "depth", "layers N", value=6, min=2, max=24, step=1),
    ]
    return _panel(controls, run, button="Measure")
