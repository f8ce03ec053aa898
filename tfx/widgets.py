"""The explorers: ipywidgets that let a reader change a setting and see the result.

Each explorer is one function returning a widget to display; it computes its
default state when built, so the HTML book (which saves widget state) shows that
state, and Jupyter/Colab recompute live. Heavy work runs on a button press.
"""
from __future__ import annotations

import ipywidgets as W
import matplotlib.pyplot as plt
from IPython.display import display


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
