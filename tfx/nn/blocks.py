"""The residual block, the one place that decides where normalisation sits.

A Transformer stack is a chain of residual sub-layers x_i = combine(x_{i-1}, f_i),
where f_i is self-attention, cross-attention or a feed-forward network. The
papers differ only in ``combine`` (N = LayerNorm or RMSNorm):

  post      x_i = N(x_{i-1} + f_i(x_{i-1}))          Vaswani et al. 2017; Xu et al.'s "v1"
  pre       x_i = x_{i-1} + f_i(N(x_{i-1}))          Xiong et al. 2020; Xu et al.'s "v2"; final N after the stack
  admin     x_i = N(x_{i-1} · ω_i + f_i(x_{i-1}))     Liu et al. 2020, ω_i a trainable vector
  deepnorm  x_i = N(α · x_{i-1} + f_i(x_{i-1}))       Wang et al. 2022, α a constant set from depth
  rezero    x_i = x_{i-1} + α_i · f_i(x_{i-1})        Bachlechner et al. 2021, α_i a scalar, 0 at init
  none      x_i = x_{i-1} + f_i(x_{i-1})              no normalisation (T-Fixup, Huang et al. 2020)

Nothing about training, initialisation or plotting lives here.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def make_norm(kind: str, d: int, eps: float) -> nn.Module:
    """LayerNorm (Ba et al. 2016) or RMSNorm (Zhang & Sennrich 2019)."""
    return nn.LayerNorm(d, eps=eps) if kind == "layernorm" else nn.RMSNorm(d, eps=eps)


def _project(x, *linears):
    """[lin(x) for lin in linears], computed as one matrix product."""
    if len(linears) == 1:
        return [linears[0](x)]
    w = torch.cat([lin.weight for lin in linears])
    b = torch.cat([lin.bias for lin in linears])
    return F.linear(x, w, b).chunk(len(linears), dim=-1)


class Attention(nn.Module):
    """Multi-head attention softmax(QKᵀ/√d_h)V through ``F.scaled_dot_product_attention``.

    Separate ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` so that initialisers can
    scale the value and output projections alone (T-Fixup, DeepNorm).
    ``mask``: boolean, True where a query may attend a key, broadcastable to (B, h, Lq, Lk).
    ``causal``: query i attends keys j ≤ i only, whether or not ``mask`` is given
    (then the two are combined: mask ∧ tril).
    """

    def __init__(self, d: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads, self.dropout = n_heads, dropout
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def _heads(self, x):  # (B, L, d) -> (B, h, L, d/h)
        B, L, d = x.shape
        return x.view(B, L, self.n_heads, d // self.n_heads).transpose(1, 2)

    def forward(self, x, memory=None, mask=None, causal=False):
        if memory is None:  # self-attention: one matmul for Q, K, V (as torch.nn.MultiheadAttention does)
            q, k, v = _project(x, self.q_proj, self.k_proj, self.v_proj)
        else:
            (q,), (k, v) = _project(x, self.q_proj), _project(memory, self.k_proj, self.v_proj)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        if causal and mask is not None:  # SDPA takes a mask or is_causal, not both: fold the triangle in
            mask = mask & torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
            causal = False
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal,
            dropout_p=self.dropout if self.training else 0.0,
        )
        B, h, L, dh = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(B, L, h * dh))


class FeedForward(nn.Module):
    """FFN(x) = fc2(act(fc1(x))), with act ReLU or GELU."""

    def __init__(self, d: int, d_ffn: int, activation: str = "relu", dropout: float = 0.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, d_ffn), nn.Linear(d_ffn, d)
        self.act = F.relu if activation == "relu" else F.gelu
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.dropout(self.act(self.fc1(x))))


class Residual(nn.Module):
    """One residual sub-layer x_i = combine(x_{i-1}, f_i) for a given ``placement``.

    ``hook``: if set, called as ``hook(self, x, fx)`` with the residual stream x_{i-1}
    and the branch output f_i before they are combined. The probes (``tfx.nn.hooks``) and Admin's
    profiling pass use it (it may set ``omega``); it is None in normal use.
    """

    def __init__(self, f: nn.Module, d: int, placement: str, norm: str = "layernorm",
                 eps: float = 1e-5, dropout: float = 0.0, alpha: float = 1.0):
        super().__init__()
        self.f, self.placement = f, placement
        self.dropout = nn.Dropout(dropout)
        self.norm = make_norm(norm, d, eps) if placement in ("post", "pre", "admin", "deepnorm") else None
        if placement == "admin":
            self.omega = nn.Parameter(torch.ones(d))  # set by tfx.nn.init.admin
        if placement == "rezero":
            self.alpha = nn.Parameter(torch.zeros(()))
        if placement == "deepnorm":
            self.register_buffer("alpha", torch.tensor(float(alpha)))
        self.hook = None

    def forward(self, x, **ctx):
        fx = self.dropout(self.f(self.norm(x) if self.placement == "pre" else x, **ctx))
        if self.hook is not None:
            self.hook(self, x, fx)
        p = self.placement
        if p == "post":
            return self.norm(x + fx)
        if p == "pre":
            return x + fx
        if p == "admin":
            return self.norm(x * self.omega + fx)
        if p == "deepnorm":
            return self.norm(self.alpha * x + fx)
        if p == "rezero":
            return x + self.alpha * fx
        return x + fx  # none

    def extra_repr(self) -> str:
        return f"placement={self.placement!r}"


def _attention(cfg):
    return Attention(cfg.d_model, cfg.n_heads, cfg.attn_dropout)


def _ffn(cfg):
    return FeedForward(cfg.d_model, cfg.d_ffn, cfg.activation, cfg.act_dropout)


def _sublayer(f, cfg, placement, alpha):
    return Residual(f, cfg.d_model, placement, cfg.norm, cfg.norm_eps, cfg.dropout, alpha)


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each a residual sub-layer."""

    def __init__(self, cfg, placement: str, alpha: float = 1.0):
        super().__init__()
        self.self_attn = _sublayer(_attention(cfg), cfg, placement, alpha)
        self.ffn = _sublayer(_ffn(cfg), cfg, placement, alpha)

    def forward(self, x, mask=None, causal=False):
        return self.ffn(self.self_attn(x, mask=mask, causal=causal))


class DecoderLayer(nn.Module):
    """Causal self-attention, attention over the encoder's output, then FFN."""

    def __init__(self, cfg, placement: str, alpha: float = 1.0):
        super().__init__()
        self.self_attn = _sublayer(_attention(cfg), cfg, placement, alpha)
        self.cross_attn = _sublayer(_attention(cfg), cfg, placement, alpha)
        self.ffn = _sublayer(_ffn(cfg), cfg, placement, alpha)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        x = self.self_attn(x, mask=self_mask, causal=True)
        x = self.cross_attn(x, memory=memory, mask=memory_mask)
        return self.ffn(x)
