"""The residual block, the one place that decides where normalisation sits.

A Transformer stack is a chain of residual sub-layers x_i = combine(x_{i-1}, f_i),
where f_i is self-attention, cross-attention or a feed-forward network. The
papers differ only in ``combine`` (N = LayerNorm, RMSNorm or DyT, ``make_norm``):

  post         x_i = N(x_{i-1} + f_i(x_{i-1}))           Vaswani et al. 2017; Xu et al.'s "v1"
  pre          x_i = x_{i-1} + f_i(N(x_{i-1}))           Xiong et al. 2020; Xu et al.'s "v2"; final N after the stack
  admin        x_i = N(x_{i-1} · ω_i + f_i(x_{i-1}))      Liu et al. 2020, ω_i a trainable vector
  deepnorm     x_i = N(α · x_{i-1} + f_i(x_{i-1}))        Wang et al. 2022, α a constant set from depth
  rezero       x_i = x_{i-1} + α_i · f_i(x_{i-1})         Bachlechner et al. 2021, α_i a scalar, 0 at init
  none         x_i = x_{i-1} + f_i(x_{i-1})               no normalisation (T-Fixup, Huang et al. 2020)
  peri-ln      x_i = x_{i-1} + N_out(f_i(N_in(x_{i-1})))  Kim et al. 2025 (kim2025periln); final N
  output-norm  x_i = x_{i-1} + N(f_i(x_{i-1}))            OLMo 2 2025 (olmo2025); final N
  sub-ln       x_i = x_{i-1} + f_i(N(x_{i-1})), f_i with  Wang et al. 2022, Magneto (wang2022magneto);
               a norm inside: before out_proj and fc2     torchscale's ``subln``; final N

With ``ln_scaling`` (Sun et al. 2025, sun2025curse) the N(x_{i-1}) that a branch reads
(pre, peri-ln, sub-ln) is multiplied by 1/√ℓ in layer ℓ = 1, 2, ….

Nothing about training, initialisation or plotting lives here.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import INNER_NORM, OUT_NORM, PRE_NORM, SUM_NORM
from .mup import attention_scale


class DyT(nn.Module):
    """Dynamic Tanh (Zhu, Chen, He, LeCun, Liu 2025, zhu2025dyt), a norm without statistics:

        DyT(x) = γ ⊙ tanh(α x) + β

    α a learnable scalar (``alpha``, ``alpha_init`` at initialisation, 0.5 by default),
    γ = ``weight`` (ones) and β = ``bias`` (zeros), vectors over the last dimension d."""

    def __init__(self, d: int, alpha: float = 0.5):
        super().__init__()
        self.alpha_init = float(alpha)
        self.alpha = nn.Parameter(torch.empty(()))
        self.weight, self.bias = nn.Parameter(torch.empty(d)), nn.Parameter(torch.empty(d))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        self.alpha.fill_(self.alpha_init)
        nn.init.ones_(self.weight)
        nn.init.zeros_(self.bias)

    def forward(self, x):
        return self.weight * torch.tanh(self.alpha * x) + self.bias

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, alpha_init={self.alpha_init}"


DYT_SATURATED = 0.99  # |tanh(αx)| beyond this: DyT's derivative is below 2 % of its largest value


def dyt_saturated(x: torch.Tensor, alpha, threshold: float = DYT_SATURATED) -> torch.Tensor:
    """Where DyT(x) = γ ⊙ tanh(α x) + β saturates: the boolean ``|tanh(α x)| > threshold``, i.e.
    ``|x| > artanh(threshold)/|α|``. A device tensor in, a device tensor out (no host read), so
    a training probe can use it (``tfx.runs.probes``) as well as the theory (``tfx.theory.norms``)."""
    return torch.tanh(alpha * x).abs() > threshold


NORM_TYPES = (nn.LayerNorm, nn.RMSNorm, DyT)


def make_norm(kind: str, d: int, eps: float = 1e-5, dyt_alpha: float = 0.5) -> nn.Module:
    """LayerNorm (Ba et al. 2016), RMSNorm (Zhang & Sennrich 2019, zhang2019rmsnorm) or
    DyT (zhu2025dyt; ``eps`` unused, ``dyt_alpha`` its initial α) over the last dimension d."""
    if kind == "layernorm":
        return nn.LayerNorm(d, eps=eps)
    if kind == "rmsnorm":
        return nn.RMSNorm(d, eps=eps)
    if kind == "dyt":
        return DyT(d, dyt_alpha)
    raise ValueError(f"norm={kind!r} is not allowed; choose one of: 'layernorm', 'rmsnorm', 'dyt'")


def softcap(x, cap: float):
    """Soft-capping cap · tanh(x / cap) (Gemma 2, gemma2024): ≈ x for |x| ≪ cap, within ±cap."""
    return cap * torch.tanh(x / cap)


def _project(x, *linears):
    """[lin(x) for lin in linears], computed as one matrix product."""
    if len(linears) == 1:
        return [linears[0](x)]
    w = torch.cat([lin.weight for lin in linears])
    b = torch.cat([lin.bias for lin in linears])
    return F.linear(x, w, b).chunk(len(linears), dim=-1)


class Attention(nn.Module):
    """Multi-head attention softmax(S)V with scores S = QKᵀ/√d_h, d_h = d / n_heads.

    Separate ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` so that initialisers can
    scale the value and output projections alone (T-Fixup, DeepNorm, Sub-LN).
    ``mask``: boolean, True where a query may attend a key, broadcastable to (B, h, Lq, Lk).
    ``causal``: query i attends keys j ≤ i only, whether or not ``mask`` is given
    (then the two are combined: mask ∧ tril).

    Options (each None: off):
      ``q_norm``, ``k_norm``  QK-layernorm (dehghani2023vit22b, wortsman2023proxies): norms over
                              d_h applied to every head's queries / keys, one set of weights
                              shared by all heads; S = N_q(Q) N_k(K)ᵀ/√d_h.
      ``softcap``             S ← c · tanh(S / c) (gemma2024); then the softmax is computed
                              here from :meth:`scores`, else by ``F.scaled_dot_product_attention``.
      ``inner_norm``          a norm over d on the concatenated heads, before ``out_proj``
                              (Sub-LN, wang2022magneto).
      ``scale``               the factor on QKᵀ in place of 1/√d_h (μP's ∝ 1/d_h,
                              ``tfx.nn.mup.attention_scale``, yang2022tp5).
    :meth:`scores` returns S exactly as the forward uses it (both go through ``_qkv``).

    ``record_logit_max`` (False; QK-clip's, ``tfx.nn.optim.record_qk_logits``): each forward
    also sets ``logit_max``, every head's largest |S| (h,), a detached device tensor; off, the
    forward is the one above, op for op.

    ``fused`` (True): without a soft-cap, softmax(S)V is one ``F.scaled_dot_product_attention``
    call; False: written out here as with a soft-cap (S, the masks, a softmax in at least float32,
    then ·V), the same numbers up to rounding. An ensemble on CUDA sets it
    (``tfx.runs.ensemble.FUSED_ATTENTION``): SDPA's kernels fail there under ``vmap``.
    """

    def __init__(self, d: int, n_heads: int, dropout: float = 0.0, q_norm: nn.Module | None = None,
                 k_norm: nn.Module | None = None, softcap: float | None = None,
                 inner_norm: nn.Module | None = None, scale: float | None = None):
        super().__init__()
        self.n_heads, self.dropout, self.softcap = n_heads, dropout, softcap
        self.scale = (d // n_heads) ** -0.5 if scale is None else float(scale)
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))
        self.q_norm, self.k_norm, self.inner_norm = q_norm, k_norm, inner_norm
        self.record_logit_max, self.logit_max = False, None
        self.fused = True

    def _heads(self, x):  # (B, L, d) -> (B, h, L, d/h)
        B, L, d = x.shape
        return x.view(B, L, self.n_heads, d // self.n_heads).transpose(1, 2)

    def _qkv(self, x, memory=None):
        """Q, K, V as (B, h, L, d_h), the queries and keys through ``q_norm`` / ``k_norm``."""
        if memory is None:  # self-attention: one matmul for Q, K, V (as torch.nn.MultiheadAttention does)
            q, k, v = _project(x, self.q_proj, self.k_proj, self.v_proj)
        else:
            (q,), (k, v) = _project(x, self.q_proj), _project(memory, self.k_proj, self.v_proj)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        return q, k, v

    def _scores(self, q, k):
        s = q @ k.transpose(-1, -2) * self.scale
        return s if self.softcap is None else softcap(s, self.softcap)

    def scores(self, x, memory=None):
        """The pre-softmax scores S (B, h, Lq, Lk) the forward uses: after the QK-norm, the
        1/√d_h scale and the soft-cap; no mask applied."""
        q, k, _ = self._qkv(x, memory)
        return self._scores(q, k)

    @torch.no_grad()
    def head_logit_max(self, q, k, mask=None, causal=False) -> torch.Tensor:
        """Each head's largest |S| (h,): S = QKᵀ · scale before any soft-cap (what W_q and W_k set,
        and QK-clip rescales), the max over the batch and the (query, key) pairs the masks allow
        (as the probes' ``attn_logit_max``, tfx.runs.probes, which is this max over heads when there
        is no soft-cap). One (B, h, Lq, Lk) product: SDPA never shows S."""
        s = (q @ k.transpose(-1, -2) * self.scale).float()
        allowed = allowed_pairs(mask, causal, s.shape[-2], s.shape[-1], s.device)
        return torch.where(allowed, s.abs(), 0.0).amax(dim=(0, 2, 3))

    def forward(self, x, memory=None, mask=None, causal=False):
        q, k, v = self._qkv(x, memory)
        lq, lk = q.shape[-2], k.shape[-2]
        if causal and mask is not None:  # SDPA takes a mask or is_causal, not both: fold the triangle in
            mask, causal = allowed_pairs(mask, True, lq, lk, q.device), False
        if self.record_logit_max:
            self.logit_max = self.head_logit_max(q, k, mask, causal)
        dropout = self.dropout if self.training else 0.0
        if self.softcap is None and self.fused:  # the fused kernel computes the same S = QKᵀ · scale inside
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                                 dropout_p=dropout, scale=self.scale)
        else:
            s = self._scores(q, k)
            if causal or mask is not None:
                s = s.masked_fill(~allowed_pairs(mask, causal, lq, lk, s.device), float("-inf"))
            # the softmax from a float32 (or float64) S, as autocast computes it, and back to V's
            # dtype for ·V, as autocast casts it: a bf16 S would reach a half-to-float softmax
            # whose backward vmap cannot batch (H200, 2026-11-30)
            p = s.to(torch.promote_types(s.dtype, torch.float32)).softmax(-1).to(v.dtype)
            out = F.dropout(p, self.dropout, self.training) @ v
        B, h, L, dh = out.shape
        out = out.transpose(1, 2).reshape(B, L, h * dh)
        return self.out_proj(out if self.inner_norm is None else self.inner_norm(out))


def allowed_pairs(mask, causal: bool, lq: int, lk: int, device) -> torch.Tensor:
    """Which (query, key) pairs an attention may use: ``mask`` (True = allowed, broadcastable
    to (B, h, Lq, Lk); None: all) and, when ``causal``, key j ≤ query i. The one place the
    forward pass and the probes (``tfx.runs.probes``) combine the two."""
    allowed = torch.ones(lq, lk, dtype=torch.bool, device=device)
    if causal:
        allowed = allowed.tril()
    return allowed if mask is None else mask & allowed


class FeedForward(nn.Module):
    """FFN(x) = fc2(act(fc1(x))), with act ReLU or GELU; with an ``inner_norm`` (over d_ffn,
    Sub-LN, wang2022magneto) fc2(N(act(fc1(x))))."""

    def __init__(self, d: int, d_ffn: int, activation: str = "relu", dropout: float = 0.0,
                 inner_norm: nn.Module | None = None):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, d_ffn), nn.Linear(d_ffn, d)
        self.act = F.relu if activation == "relu" else F.gelu
        self.dropout = nn.Dropout(dropout)
        self.inner_norm = inner_norm

    def forward(self, x):
        h = self.dropout(self.act(self.fc1(x)))
        return self.fc2(h if self.inner_norm is None else self.inner_norm(h))


class Residual(nn.Module):
    """One residual sub-layer x_i = combine(x_{i-1}, f_i) for a given ``placement``.

    ``norm``: which norm (``make_norm``). ``self.norm`` sits on the branch's input (pre,
    peri-ln, sub-ln) or on the sum (post, admin, deepnorm), ``self.out_norm`` on the branch's
    output (peri-ln, output-norm); each is None where the placement has none
    (``config.PRE_NORM``, ``SUM_NORM``, ``OUT_NORM``). ``ln_scale``: the factor on N(x_{i-1})
    (1/√ℓ with ``ln_scaling``). ``branch_scale``: the factor on the branch's term (1/√L with
    ``depth_mup``, set by the stack, which knows L). The norm *inside* a Sub-LN branch belongs to f.

    ``hook``: if set, called as ``hook(self, x, fx)`` with the residual stream x_{i-1}
    and the branch's term fx before they are combined (with its output norm, if any, and
    dropout). The probes (``tfx.nn.hooks``) and Admin's profiling pass use it (it may set
    ``omega``); it is None in normal use.
    """

    def __init__(self, f: nn.Module, d: int, placement: str, norm: str = "layernorm",
                 eps: float = 1e-5, dropout: float = 0.0, alpha: float = 1.0,
                 dyt_alpha: float = 0.5, ln_scale: float = 1.0):
        super().__init__()
        self.f, self.placement, self.ln_scale = f, placement, float(ln_scale)
        self.branch_scale = 1.0  # depth-μP's 1/√L: set by the stack (tfx.nn.model.Stack)
        self.dropout = nn.Dropout(dropout)
        has_norm = placement in PRE_NORM or placement in SUM_NORM
        self.norm = make_norm(norm, d, eps, dyt_alpha) if has_norm else None
        self.out_norm = make_norm(norm, d, eps, dyt_alpha) if placement in OUT_NORM else None
        if placement == "admin":
            self.omega = nn.Parameter(torch.ones(d))  # set by tfx.nn.init.admin
        if placement == "rezero":
            self.alpha = nn.Parameter(torch.zeros(()))
        if placement == "deepnorm":
            self.register_buffer("alpha", torch.tensor(float(alpha)))
        self.hook = None

    def branch(self, x, **ctx):
        """The term f_i adds to the stream: f_i reads N(x_{i-1}) (× 1/√ℓ with ``ln_scaling``) where
        the placement has a norm on the branch's input, else x_{i-1}; its output goes through
        N_out where the placement has one (peri-ln, output-norm); then dropout; then × 1/√L
        with ``depth_mup``."""
        h = x
        if self.placement in PRE_NORM:
            h = self.norm(x)
            if self.ln_scale != 1.0:
                h = self.ln_scale * h
        fx = self.f(h, **ctx)
        fx = self.dropout(fx if self.out_norm is None else self.out_norm(fx))
        return fx if self.branch_scale == 1.0 else self.branch_scale * fx

    def forward(self, x, **ctx):
        fx = self.branch(x, **ctx)  # first: Admin's profiling hook sets ω before it is used
        if self.hook is not None:
            self.hook(self, x, fx)
        p = self.placement
        if p == "post":
            return self.norm(x + fx)
        if p == "admin":
            return self.norm(x * self.omega + fx)
        if p == "deepnorm":
            return self.norm(self.alpha * x + fx)
        if p == "rezero":
            return x + self.alpha * fx
        return x + fx  # pre, peri-ln, output-norm, sub-ln (their norms are in the branch), none

    def extra_repr(self) -> str:
        scaled = "" if self.ln_scale == 1.0 else f", ln_scale={self.ln_scale:.4g}"
        scaled += "" if self.branch_scale == 1.0 else f", branch_scale={self.branch_scale:.4g}"
        return f"placement={self.placement!r}{scaled}"


def _norm(cfg, d):
    return make_norm(cfg.norm, d, cfg.norm_eps, cfg.dyt_alpha)


def _inner_norm(cfg, placement, d):
    """The norm inside a branch (Sub-LN): decided here, from the placement, for every block."""
    return _norm(cfg, d) if placement in INNER_NORM else None


def _attention(cfg, placement, cross=False):
    """Self- or cross-attention. As torchscale's ``subln``, cross-attention has no inner norm."""
    d_h = cfg.d_model // cfg.n_heads
    return Attention(
        cfg.d_model, cfg.n_heads, cfg.attn_dropout,
        q_norm=_norm(cfg, d_h) if cfg.qk_norm else None, k_norm=_norm(cfg, d_h) if cfg.qk_norm else None,
        softcap=cfg.attn_softcap, inner_norm=None if cross else _inner_norm(cfg, placement, cfg.d_model),
        scale=attention_scale(cfg),
    )


def _ffn(cfg, placement):
    return FeedForward(cfg.d_model, cfg.d_ffn, cfg.activation, cfg.act_dropout,
                       inner_norm=_inner_norm(cfg, placement, cfg.d_ffn))


def _sublayer(f, cfg, placement, alpha, layer):
    ln_scale = layer**-0.5 if cfg.ln_scaling else 1.0  # layer ℓ = 1, 2, … (sun2025curse)
    return Residual(f, cfg.d_model, placement, cfg.norm, cfg.norm_eps, cfg.dropout, alpha,
                    dyt_alpha=cfg.dyt_alpha, ln_scale=ln_scale)


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each a residual sub-layer; ``layer``: ℓ = 1, 2, … in its stack."""

    def __init__(self, cfg, placement: str, alpha: float = 1.0, layer: int = 1):
        super().__init__()
        self.self_attn = _sublayer(_attention(cfg, placement), cfg, placement, alpha, layer)
        self.ffn = _sublayer(_ffn(cfg, placement), cfg, placement, alpha, layer)

    def forward(self, x, mask=None, causal=False):
        return self.ffn(self.self_attn(x, mask=mask, causal=causal))


class DecoderLayer(nn.Module):
    """Causal self-attention, attention over the encoder's output, then FFN."""

    def __init__(self, cfg, placement: str, alpha: float = 1.0, layer: int = 1):
        super().__init__()
        self.self_attn = _sublayer(_attention(cfg, placement), cfg, placement, alpha, layer)
        self.cross_attn = _sublayer(_attention(cfg, placement, cross=True), cfg, placement, alpha, layer)
        self.ffn = _sublayer(_ffn(cfg, placement), cfg, placement, alpha, layer)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        x = self.self_attn(x, mask=self_mask, causal=True)
        x = self.cross_attn(x, memory=memory, mask=memory_mask)
        return self.ffn(x)
