"""What constants do the fixes choose? The numbers each fix sets from the depth or the sizes.

One place for each: :mod:`tfx.nn.init` and :mod:`tfx.nn.model` read them here, and the
chapters derive them (:mod:`tfx.theory.bounds` for T-Fixup and Lipschitz init,
:mod:`tfx.theory.scaling` for DeepNorm, :mod:`tfx.theory.dependency` for Admin's ω).

* Admin's profiling-free ω (Liu et al. 2020, the ``admin-torch`` package; AD-1);
* the Lipschitz-constrained init's half-widths (Xu et al. 2020, LP-3);
* T-Fixup's multipliers (Huang et al. 2020, TF-2);
* DeepNorm's α and β (Wang et al. 2022), in the paper's and the authors' code's
  convention;
* Sub-LN's init gain γ (Magneto, Wang et al. 2022, wang2022magneto).
"""
from __future__ import annotations

import math

import numpy as np


# ----------------------------------------------------------------- Admin (AD-1)
def admin_omega_profiling_free(n) -> float:
    """Profiling-free Admin shortcut scale of the authors' ``admin-torch``::

        omega = sqrt( (n + 1) / ln(n + 1) - 1 )

    n is the total number of residual sub-layers (2 per encoder layer, 3 per
    decoder layer). This is the package's default ("O(logn)" output change),
    used instead of the profiling pass of §4.3 (AD-1); n must be >= 1.
    """
    n = np.asarray(n, dtype=float)
    if np.any(n < 1):
        raise ValueError("n must be >= 1")
    out = np.sqrt((n + 1) / np.log(n + 1) - 1)
    return float(out) if out.ndim == 0 else out


# ----------------------------------------------------------------- Lipschitz init (LP-3)
def lipschitz_embedding_bound(esize: int, vsize: int) -> float:
    """e = sqrt(2 / (esize + vsize)): embeddings ~ U(-e, e) (Xu et al. §4, LP-3); esize the
    embedding width, vsize the vocabulary size."""
    return math.sqrt(2.0 / (esize + vsize))


def lipschitz_linear_bound(isize: int) -> float:
    """l = sqrt(1 / isize): linear weights ~ U(-l, l) (Xu et al. §4, LP-3); isize the layer's
    input width."""
    return math.sqrt(1.0 / isize)


def lipschitz_init_bounds(esize: int, vsize: int, isize: int) -> tuple[float, float]:
    """Uniform-init half-widths of Xu et al. §4 (LP-3)::

        e = sqrt(2 / (esize + vsize))    embeddings  ~ U(-e, e)
        l = sqrt(1 / isize)              linear weights ~ U(-l, l)

    esize: embedding width, vsize: vocabulary size, isize: input width of the
    linear layer. Returns ``(e, l)``: :func:`lipschitz_embedding_bound` and
    :func:`lipschitz_linear_bound`, which ``tfx.nn.init.lipschitz`` draws from.
    """
    return lipschitz_embedding_bound(esize, vsize), lipschitz_linear_bound(isize)


# ----------------------------------------------------------------- T-Fixup (TF-2)
def tfixup_scale_factors(n_enc: int, n_dec: int) -> dict:
    """T-Fixup multipliers applied after Xavier init (TF-2; Huang et al.).

    Encoder (N_e blocks): value / output projections and FFN weights x
    ``0.67 N_e^(-1/4)``, input embeddings x ``(9 N_e)^(-1/4)``. Decoder (N_d
    blocks): value / output projections, FFN weights and embeddings x
    ``(9 N_d)^(-1/4)``. Embeddings start from N(0, d^(-1/2)). A side with
    0 blocks is omitted.
    """
    out = {}
    if n_enc:
        out["encoder"] = {"weights": 0.67 * n_enc ** -0.25, "embedding": (9 * n_enc) ** -0.25}
    if n_dec:
        f = (9 * n_dec) ** -0.25
        out["decoder"] = {"weights": f, "embedding": f}
    return out


# ----------------------------------------------------------------- DeepNorm
DEEPNORM_CONVENTIONS = ("paper", "torchscale")


def deepnorm_constants(n_enc: int, n_dec: int, convention: str = "paper") -> dict:
    """DeepNorm's residual up-scale alpha and init down-scale beta.

    DeepNorm computes ``x <- LN(alpha x + f(x))`` and multiplies the init of
    the FFN weights and the value / output projections (v_proj, out_proj, fc1,
    fc2) by beta. With N = ``n_enc`` encoder and M = ``n_dec`` decoder layers:

    * encoder-only (M = 0):  alpha = (2N)^(1/4),  beta = (8N)^(-1/4);
    * decoder-only (N = 0):  alpha = (2M)^(1/4),  beta = (8M)^(-1/4);
    * encoder-decoder:
        encoder  alpha = 0.81 (N^4 M)^(1/16),  beta = 0.87 (N^4 M)^(-1/16);
        decoder  alpha = (3M)^(1/4),           beta = (12M)^(-1/4).

    ``convention``: ``"paper"`` (Wang et al. 2022, what tfx builds) as above;
    ``"torchscale"`` (the authors' code, microsoft/torchscale
    ``architecture/encoder.py``: the weights are divided by (N^4 M)^(1/16) / 1.15)
    differs only for the encoder of an encoder-decoder: beta = 1.15 (N^4 M)^(-1/16),
    alpha as above.

    Returns ``{"encoder": {"alpha", "beta"}, "decoder": {...}}`` with only the
    sides that exist.
    """
    if convention not in DEEPNORM_CONVENTIONS:
        raise ValueError(f"convention={convention!r} is not allowed; choose one of: "
                         f"{', '.join(map(repr, DEEPNORM_CONVENTIONS))}")
    N, M = n_enc, n_dec
    if N < 0 or M < 0 or (N == 0 and M == 0):
        raise ValueError("need at least one layer")
    if M == 0:
        return {"encoder": {"alpha": (2 * N) ** 0.25, "beta": (8 * N) ** -0.25}}
    if N == 0:
        return {"decoder": {"alpha": (2 * M) ** 0.25, "beta": (8 * M) ** -0.25}}
    enc_beta = 1.15 if convention == "torchscale" else 0.87
    return {
        "encoder": {"alpha": 0.81 * (N**4 * M) ** (1 / 16), "beta": enc_beta * (N**4 * M) ** (-1 / 16)},
        "decoder": {"alpha": (3 * M) ** 0.25, "beta": (12 * M) ** -0.25},
    }


# ----------------------------------------------------------------- Sub-LN (Magneto)
def subln_gain(n_enc: int, n_dec: int) -> dict:
    """Sub-LN's init up-scale γ (Magneto, Wang et al. 2022, wang2022magneto), which
    multiplies the Xavier-drawn v_proj, out_proj, fc1 and fc2 weights. With N = ``n_enc``
    encoder and M = ``n_dec`` decoder layers, as microsoft/torchscale's ``subln``
    (``architecture/encoder.py``, ``decoder.py``):

    * encoder-only (M = 0):  γ = sqrt(log 2N);
    * decoder-only (N = 0):  γ = sqrt(log 2M);
    * encoder-decoder:
        encoder  γ = sqrt(log(3M) · log(2N) / 3),
        decoder  γ = sqrt(log 3M)  (cross-attention not scaled: torchscale skips it).

    Returns ``{"encoder": γ, "decoder": γ}`` with only the sides that exist.
    """
    N, M = n_enc, n_dec
    if N < 0 or M < 0 or (N == 0 and M == 0):
        raise ValueError("need at least one layer")
    if M == 0:
        return {"encoder": math.sqrt(math.log(2 * N))}
    if N == 0:
        return {"decoder": math.sqrt(math.log(2 * M))}
    return {"encoder": math.sqrt(math.log(3 * M) * math.log(2 * N) / 3), "decoder": math.sqrt(math.log(3 * M))}
