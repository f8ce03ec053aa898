"""Logits that grow: what bounds an attention logit, and what the output's log Z is free to do (chapter 15).

**Attention logits.** Head h scores query i against key j with z_ij = q_i·k_j / √d_h, q = W_Q x,
k = W_K x: the logit is *bilinear* in (W_Q, W_K), so when both matrices grow by a factor s the
logits grow by s². Adam moves every coordinate by about the learning rate per step, whatever
its gradient (chapter 11), so at a high learning rate the matrices, and the logits with them,
can grow fast. As the logits of a row grow, its softmax goes one-hot and its entropy falls from
ln n towards 0: *attention entropy collapse* (Zhai et al. 2023, zhai2023sigmareparam), the
instability Dehghani et al. (2023, dehghani2023vit22b) met in ViT-22B and Wortsman et al.
(2023, wortsman2023proxies) reproduced in small models at high learning rates.

* **QK-norm** normalises q and k over the head's d_h features before the product. A LayerNorm
  or RMSNorm output with gain g has norm at most √d_h · max|g|, so by Cauchy–Schwarz
  |z_ij| ≤ √d_h · max|g_q| · max|g_k| (:func:`qk_norm_logit_bound`): √d_h at initialisation,
  and only the gains can raise it.
* **Soft-capping** (Gemma 2, gemma2024) maps z to c·tanh(z/c): |z| < c whatever the weights.

**Output logits.** The cross-entropy −y_t + log Z, log Z = log Σ_v exp(y_v), does not change when
every logit moves by the same constant (:func:`derive_logit_shift`), so nothing in the loss holds
log Z anywhere: it can drift far from 0, the output-logit divergence of Wortsman et al. The
z-loss of PaLM (Chowdhery et al. 2022, chowdhery2022palm), c·(log Z)², adds the gradient
2c·log Z·softmax(y) to the logits: a pull on the common level of the logits towards log Z = 0
that leaves their differences, and so the predicted distribution, to the cross-entropy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp
import torch

from ..nn.blocks import softcap  # c·tanh(z/c), the one the model uses (Gemma 2)

__all__ = ["softmax_entropy", "qk_norm_logit_bound", "softcap", "LogitShift", "derive_logit_shift",
           "bound_cap_zloss"]


def softmax_entropy(logits: torch.Tensor) -> torch.Tensor:
    """H(softmax(z)) = −Σ p log p over the last axis (nats): ln n for equal logits, → 0 as one dominates."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def qk_norm_logit_bound(d_head: int, gain_q: float = 1.0, gain_k: float = 1.0) -> float:
    """The largest |q̂·k̂|/√d_h with q̂, k̂ normalised over d_h features (gains at most ``gain_q``,
    ``gain_k`` in absolute value, no bias): ‖q̂‖ ≤ √d_h·g_q, ‖k̂‖ ≤ √d_h·g_k, so the bound is
    √d_h · g_q · g_k (Cauchy–Schwarz; equality when q̂ and k̂ are parallel)."""
    if not isinstance(d_head, int) or d_head < 1:
        raise ValueError(f"d_head={d_head!r} must be an integer ≥ 1")
    return math.sqrt(d_head) * abs(gain_q) * abs(gain_k)


@dataclass
class LogitShift:
    """What a common shift c of every output logit does (sympy, V symbolic logits y_v, target 0)."""

    d_ce_d_shift: sp.Expr  # ∂/∂c of the cross-entropy at y + c: simplifies to 0
    d_zloss_d_y0: sp.Expr  # ∂(log Z)²/∂y_0, as sympy differentiates it
    zloss_formula: sp.Expr  # the claimed form 2·log Z·p_0
    zloss_matches: bool  # the two agree (their difference simplifies to 0)


def derive_logit_shift(V: int = 3) -> LogitShift:
    """Derive with sympy: the cross-entropy −(y_0 + c) + log Σ_v exp(y_v + c) does not depend on
    a common shift c (so log Z is free to drift), and the z-loss (log Z)² has gradient
    2·log Z·softmax(y)_v on logit v."""
    y = sp.symbols(f"y0:{V}", real=True)
    c = sp.Symbol("c", real=True)
    ce = -(y[0] + c) + sp.log(sum(sp.exp(v + c) for v in y))
    z = sum(sp.exp(v) for v in y)
    d_z = sp.diff(sp.log(z) ** 2, y[0])
    formula = 2 * sp.log(z) * sp.exp(y[0]) / z
    return LogitShift(d_ce_d_shift=sp.simplify(sp.diff(ce, c)), d_zloss_d_y0=d_z, zloss_formula=formula,
                      zloss_matches=sp.simplify(d_z - formula) == 0)


def bound_cap_zloss(d_head: int = 64, cap: float = 50.0, log_z: float = 7.0, ce: float = 5.0,
                    coef: float = 1e-4) -> dict:
    """QK-norm's bound √d_h at ``d_head`` (``bound``), what a soft-cap at ``cap`` takes off a
    logit that size (``cap``), and the z-loss coef·(log Z)² at ``log_z`` (``zloss``), in % of a
    ``ce``-nat cross-entropy (``zloss-share``)."""
    bound = qk_norm_logit_bound(d_head)
    return {"bound": bound, "cap": bound - float(softcap(torch.tensor(bound), cap)),
            "zloss": coef * log_z**2, "zloss-share": 100 * coef * log_z**2 / ce}
