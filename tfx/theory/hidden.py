"""How large does the hidden state grow at initialisation? (LN-2, LN-3; Xiong et al. 2020)

Lemma 1 (``E||ReLU(X)||^2 = sigma^2 d / 2``) and Lemma 2 (the squared norm of the
residual stream: 1.5 d in Post-LN whatever the depth, growing linearly with depth
in Pre-LN) as formulas and ``sympy`` derivations; :func:`hidden_norms` measures the
same vectors in any tfx model, and :func:`xiong_simplified` with
:func:`gaussian_inputs` puts a model in the lemma's setting. How these norms set
the gradients' scale is :mod:`tfx.theory.gradients`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import sympy as sp
import torch
from torch import nn

from ..nn.config import SEED_STRIDE
from ..nn.hooks import loss_on, mode, record_branches, stack_name


# ----------------------------------------------------------------- LN-2: Lemma 1
def relu_norm_sq_expectation(d: int, sigma: float) -> float:
    """E ||ReLU(X)||^2 for X ~ N(0, sigma^2 I_d) (LN-2; Xiong et al. Lemma 1)::

        E ||ReLU(X)||^2 = sigma^2 d / 2

    Each coordinate is symmetric about 0, so ReLU keeps exactly the half of
    the second moment that lives on x > 0; the d coordinates add up
    (:func:`derive_relu_norm_sq`). This is the "1/2" that makes an FFN
    sub-layer add d/2 to the squared hidden norm in Lemma 2.
    """
    return sigma**2 * d / 2


class ReluDerivation(NamedTuple):
    integrand: sp.Expr
    per_coordinate: sp.Expr    # sigma^2 / 2
    total: sp.Expr             # sigma^2 d / 2


def derive_relu_norm_sq() -> ReluDerivation:
    """sympy: the 1-D integral behind Lemma 1 (LN-2)::

        E[ReLU(X)^2] = int_0^inf x^2 phi_sigma(x) dx = sigma^2 / 2,
        phi_sigma(x) = exp(-x^2/(2 sigma^2)) / (sigma sqrt(2 pi)),

    and by linearity over independent coordinates ``E||ReLU(X)||^2 = d sigma^2/2``.
    """
    x = sp.Symbol("x", real=True)
    sigma = sp.Symbol("sigma", positive=True)
    d = sp.Symbol("d", positive=True, integer=True)
    phi = sp.exp(-x**2 / (2 * sigma**2)) / (sigma * sp.sqrt(2 * sp.pi))
    integrand = x**2 * phi
    per = sp.simplify(sp.integrate(integrand, (x, 0, sp.oo)))
    return ReluDerivation(integrand=integrand, per_coordinate=per, total=d * per)


# ----------------------------------------------------------------- LN-3: Lemma 2, predicted
_LEMMA2_SETTING = """
    Simplified setting of the lemma (Xiong et al. §3.3): single-head attention;
    all of W^Q, W^K, W^V, W^1, W^2 are d x d; W^Q = W^K = 0 so every query
    attends uniformly and the attention output is (1/n) sum_j LN-input_j W^V;
    weights Xavier-normal, i.e. N(0, 2/(d+d)) = N(0, 1/d); biases 0; LayerNorm
    gamma = 1, beta = 0, eps = 0; input vectors Gaussian. Expectations are over
    the input and the initialisation.
"""


def post_ln_hidden_norm_sq(d: int) -> float:
    """E ||x_l^{post,5}||^2 = 1.5 d in a Post-LN Transformer at init (LN-3).

    Which vector. In Xiong et al.'s Table 1 a Post-LN layer l computes
    ``x^{post,3} = LN(x + Attn(x))``, then ``x^{post,4} = FFN(x^{post,3})``,
    then ``x^{post,5} = x^{post,3} + x^{post,4}`` and finally
    ``x_{l+1} = LN(x^{post,5})``. So 1.5 d is the squared norm of the
    *FFN residual sum*, the input of the LayerNorm that closes layer l. It is
    not about ``x_{l+1}`` itself, whose squared norm is exactly d (a LayerNorm
    output with eps = 0 always has ``||y||^2 = d``); and it is the same for
    every l because the preceding LN resets the scale.

    Derivation sketch. ``||x^{post,3}||^2 = d`` exactly. Given it,
    ``x^{post,3} W^1`` has i.i.d. ``N(0, ||x^{post,3}||^2/d) = N(0, 1)``
    coordinates, so ``E||ReLU(.)||^2 = d/2`` (Lemma 1); multiplying by a fresh
    ``W^2 ~ N(0, 1/d)`` keeps the expected squared norm, so
    ``E||x^{post,4}||^2 = d/2``. The cross term ``2<x^{post,3}, x^{post,4}>``
    has mean 0 (W^2 is zero-mean and independent). Total: d + d/2 = 1.5 d.
    """
    return 1.5 * d


if post_ln_hidden_norm_sq.__doc__:  # absent under python -OO
    post_ln_hidden_norm_sq.__doc__ += _LEMMA2_SETTING


def pre_ln_hidden_norm_sq_bounds(l: int, d: int, input_norm_sq: float | None = None
                                 ) -> tuple[float, float]:
    """Bounds on E ||x_l^{pre}||^2 in a Pre-LN Transformer at init (LN-3)::

        (1 + l/2) d  <=  E ||x_l^{pre}||^2  <=  (1 + 3l/2) d

    Here ``l`` is the number of Pre-LN blocks the vector has gone through and
    the input has ``E||x_0||^2 = d`` (unit-variance coordinates). Xiong et al.
    index layers so that block l maps x_l to x_{l+1} and call x_0 the
    embedding, which is off by one for l >= 1; the bounds are right when read
    as "after l blocks". If the input norm differs, pass ``input_norm_sq``:
    the bounds become ``input_norm_sq + (l/2) d`` and
    ``input_norm_sq + (3l/2) d``.

    Derivation sketch. A block adds two residual branches to the stream,
    ``x <- x + a + f`` with ``a = mean_j LN(x_j) W^V`` (uniform attention) and
    ``f = FFN(LN(x + a))``. Both branches end in a fresh zero-mean weight
    matrix, so every cross term has mean 0 and squared norms add.
    ``E||f||^2 = d/2`` exactly (an LN output has norm^2 d, then Lemma 1).
    ``E||a||^2 = E||mean_j LN(x_j)||^2``, which lies between 0 (the LN outputs
    cancel) and d (they all coincide; convexity of the norm). So each block
    adds between d/2 and 3d/2. The norm grows *linearly* in depth, which is
    what makes the final LN shrink gradients by 1/sqrt(L) (LN-4).
    """
    if l < 0:
        raise ValueError("l must be >= 0")
    base = d if input_norm_sq is None else input_norm_sq
    return base + 0.5 * l * d, base + 1.5 * l * d


if pre_ln_hidden_norm_sq_bounds.__doc__:  # absent under python -OO
    pre_ln_hidden_norm_sq_bounds.__doc__ += _LEMMA2_SETTING



# ----------------------------------------------------------------- LN-3: Lemma 2, measured
def _sq(v):
    """Mean over tokens of the squared norm over the last dimension."""
    return float((v.double() ** 2).sum(-1).mean())


@torch.no_grad()
def hidden_norms(model, inputs, stack: str | None = None) -> dict:
    """Mean squared norms (over tokens) of the vectors Lemma 2 is about, per layer (LN-3).

    ``inputs``: a Batch (the model runs on it from its embeddings) or a tensor
    (B, n, d) fed straight into the stack as x_0 (e.g. :func:`gaussian_inputs`,
    the lemma's Gaussian input). Returns numpy arrays over layers l = 1 … N:

    * ``'input'``: ‖x_0‖², the vector entering the stack (a float);
    * ``'attn_sum'``: the attention sub-layer's residual sum x + f;
    * ``'ffn_sum'``: the FFN sub-layer's residual sum x + f. For Post-LN this is
      Xiong et al.'s x_l^{post,5}, the input of the LayerNorm that closes the layer
      (Lemma 2: 1.5 d); for Pre-LN it is the stream after l blocks, x^{pre} "after
      l blocks" (Lemma 2: between (1 + l/2) d and (1 + 3l/2) d);
    * ``'output'``: the layer's output x_l (d for Post-LN, = ffn_sum for Pre-LN).
    Only encoder-type layers (self-attention + FFN) are supported for tensors."""
    name = stack_name(model, stack)
    st = model.stacks()[name]
    with mode(model), record_branches(model) as rec:
        if isinstance(inputs, torch.Tensor):
            x = inputs.to(next(model.parameters()).device)
            for layer in st.layers:  # the stack without its final norm
                x = layer(x)
        else:
            loss_on(model, inputs)
    recs = rec[name]
    per = len(recs) // len(st.layers)
    out = {"input": _sq(recs[0]["x"]), "attn_sum": [], "ffn_sum": [], "output": []}
    for l in range(len(st.layers)):
        layer_recs = recs[l * per:(l + 1) * per]
        attn, ffn = layer_recs[0], layer_recs[-1]
        s = ffn["x"] + ffn["f"]
        out["attn_sum"].append(_sq(attn["x"] + attn["f"]))
        out["ffn_sum"].append(_sq(s))
        res = st.layers[l].ffn
        out["output"].append(_sq(res.norm(s)) if res.placement == "post" else _sq(s))
    return {k: (v if k == "input" else np.array(v)) for k, v in out.items()}


def gaussian_inputs(batch: int, length: int, d: int, seed: int = 0, std: float = 1.0) -> torch.Tensor:
    """x_0 ~ N(0, std² I_d) for every token: (batch, length, d). E‖x_0‖² = std² d.

    The generator's seed is salted: ``torch.manual_seed(seed)`` followed by weight
    draws would otherwise produce these very numbers, and an input equal to the
    first layer's weights is not independent of them."""
    g = torch.Generator().manual_seed(SEED_STRIDE * (seed + 1) + 17)
    return std * torch.randn(batch, length, d, generator=g)


@torch.no_grad()
def xiong_simplified(model, seed: int | None = 0):
    """Put ``model`` in the setting of Xiong et al.'s Lemma 2, in place; returns it.

    Every attention's W_Q and W_K (and their biases) are set to 0, so every query
    attends uniformly and attention returns the mean of the values (with several
    heads this is the same function as one head: each head averages its own slice);
    every other linear weight in the stacks is re-drawn Xavier-normal
    N(0, 2/(fan_in + fan_out)); biases 0; LayerNorm γ = 1, β = 0. For the lemma's
    d×d FFN build the model with ``d_ffn = d_model``. Embeddings and the output
    projection are left alone; feed :func:`gaussian_inputs` to the stack for the
    lemma's Gaussian input."""
    from ..nn.blocks import Attention

    if seed is not None:
        torch.manual_seed(seed)
    for st in model.stacks().values():
        for m in st.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
                nn.init.ones_(m.weight)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        for m in st.modules():
            if isinstance(m, Attention):
                for lin in (m.q_proj, m.k_proj):
                    lin.weight.zero_()
                    if lin.bias is not None:
                        lin.bias.zero_()
    return model



def post_ln_sum_norm(r: float) -> float:
    """Lemma 2 redone for Xavier d×rd and rd×d FFN weights: E‖x^{post,5}‖²/d = 1 + 2r/(1+r)²."""
    if r <= 0:
        raise ValueError(f"r={r} (the FFN's width over d) must be > 0")
    return 1 + 2 * r / (1 + r) ** 2


def within_pre_ln_bounds(layers, means) -> list:
    """Per layer, whether a Pre-LN mean E‖x‖²/d (input norm d) lies inside Lemma 2's bounds."""
    return [lo <= v <= hi for l, v in zip(layers, means)
            for lo, hi in [pre_ln_hidden_norm_sq_bounds(l, 1)]]


def post_ln_sum_norms(model, batch) -> dict:
    """The squared centred norm ‖z − μ1‖²/d of every residual sum z = x_{i-1} + f_i that a
    Post-LN model's LayerNorms read, averaged over the tokens of ``batch`` (one forward pass,
    eval mode): ``{kind: array over the sub-layers of that kind, bottom first}``, kinds
    'self-attn', 'cross-attn' and 'ffn', the encoder's before the decoder's."""
    from ..nn.hooks import sublayer_kind

    out = {}
    with record_branches(model) as rec, mode(model), torch.no_grad():
        loss_on(model, batch)
    for recs in rec.values():
        for r in recs:
            z = r["x"] + r["f"]
            c = z - z.mean(-1, keepdim=True)
            out.setdefault(sublayer_kind(r["name"]), []).append(
                float(c.pow(2).sum(-1).mean()) / z.shape[-1])
    return {k: np.array(v) for k, v in out.items()}


def post_ln_sum_gains(sums: dict) -> dict:
    """:func:`post_ln_sum_norms` summed up: the mean per kind (``ffn``, ``self``, ``cross``),
    the smallest and largest sub-layer (``lo``, ``hi``) and the LayerNorm gains √d/‖z − μ‖
    they give (``gain_lo`` from the largest input, ``gain_hi`` from the smallest)."""
    import math

    every = np.concatenate(list(sums.values()))
    lo, hi = float(every.min()), float(every.max())
    return {"ffn": float(sums["ffn"].mean()), "self": float(sums["self-attn"].mean()),
            "cross": float(sums["cross-attn"].mean()), "lo": lo, "hi": hi,
            "gain_lo": 1 / math.sqrt(hi), "gain_hi": 1 / math.sqrt(lo)}


def lemma2_summary(norms: dict, layers, r: float) -> dict:
    """LN-3 read off ``norms`` ({(setting, placement): (seeds, layers) array of E‖x‖²/d},
    settings 'simplified' and 'real'): the Post-LN means against :func:`post_ln_sum_norm` at
    FFN width ``r``·d, the Pre-LN growth per block (a straight-line fit) in both settings, and
    per layer whether the simplified Pre-LN mean is inside Lemma 2's bounds (``inside``)."""
    from .fit import fit_linear

    slope = {s: float(fit_linear(layers, norms[s, "pre"].mean(0))[0])
             for s in ("simplified", "real")}
    return {"post_simp": float(norms["simplified", "post"].mean()),
            "post_real": float(norms["real", "post"].mean()),
            "post_real_pred": post_ln_sum_norm(r), "pre_slope_simp": slope["simplified"],
            "pre_slope_real": slope["real"],
            "inside": within_pre_ln_bounds(layers, norms["simplified", "pre"].mean(0))}


def post_ln_width_norms(task, widths, depth: int, batch_size: int, **model_kw) -> dict:
    """E‖x^{post,5}‖²/d of a Post-LN encoder (seed 0) with FFN width r·d, per r in ``widths``,
    measured on ``task.batch(0, batch_size)`` (:func:`hidden_norms`); ``model_kw`` holds d_model."""
    from ..nn.model import build_model

    d, out = model_kw["d_model"], {}
    for r in widths:
        m = build_model(n_enc=depth, n_dec=0, placement="post", src_vocab=task.src_vocab,
                        tgt_vocab=task.tgt_vocab, seed=0, **{**model_kw, "d_ffn": r * d})
        out[r] = float(hidden_norms(m, task.batch(0, batch_size))["ffn_sum"].mean() / d)
    return out
