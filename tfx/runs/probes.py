"""What does a run record about its logits and its stream? The probes of ``TrainConfig.probes``.

    hist = train(model, task, steps=200, log_every=10, probes=True)
    hist.attn_logit_max   # [logged step][attention module]: max |q·k|/√d_h
    hist.attn_entropy     # [logged step][attention module][head]
    hist.stream_var       # [logged step][sub-layer, then each stack's output]

On each logged step, forward hooks (:func:`tfx.nn.hooks.attached`) watch the training
step's own forward pass and record, as 0-dim device tensors (nothing is read back, so the
step loop never waits for the device; the trainer reads the rows with its other numbers):

  attn_logit_max  per attention module, max |s_ij| over the pairs (i, j) its masks allow,
                  s = q·kᵀ/√d_h the pre-softmax scores (recomputed by
                  :func:`tfx.runs.diagnose._attention_logits`: SDPA never shows them). Their
                  growth precedes the divergence that QK-layernorm cures (wortsman2023proxies)
  attn_entropy    per attention module and head, the mean over real (non-PAD) queries of
                  H_i = −Σ_j p_ij log p_ij, p_i = softmax of the allowed s_ij (causal and key
                  padding): a head near 0 attends one key; collapse goes with unstable
                  training (zhai2023sigmareparam)
  stream_var      per residual sub-layer, the variance of the stream x_{i−1} entering it, over
                  the real tokens' entries; then the same for each stack's output: Pre-LN's
                  stream grows with depth
  dyt_saturated   per DyT norm (γ ⊙ tanh(αx) + β, zhu2025dyt), the share of its real inputs
                  with |tanh(αx)| > tfx.nn.blocks.DYT_SATURATED: where it passes no gradient

Real tokens are read from the ids entering each stack's embedding, so the hooks need
nothing from the trainer. Hooks run under ``torch.no_grad`` and draw no random numbers:
recording leaves the training step bit-identical.
"""
from __future__ import annotations

import contextlib

import torch

from ..nn.batch import PAD
from ..nn.blocks import Attention, allowed_pairs, dyt_saturated
from ..nn.hooks import attached
from .diagnose import _attention_logits

FIELDS = ("attn_logit_max", "attn_entropy", "stream_var", "dyt_saturated")


def is_dyt(module) -> bool:
    """A Dynamic Tanh norm γ ⊙ tanh(αx) + β (zhu2025dyt): a module of class ``DyT`` with a scalar ``alpha``."""
    return type(module).__name__ == "DyT" and hasattr(module, "alpha")


def attention_entropy(scores: torch.Tensor, allowed: torch.Tensor, real: torch.Tensor | None) -> torch.Tensor:
    """Per head: mean over real queries of H_i = −Σ_j p_ij log p_ij, p_i = softmax_j over the
    allowed keys of ``scores`` (B, h, Lq, Lk). ``real``: (B, Lq), True at non-PAD queries (None: all)."""
    logp = torch.log_softmax(scores.float().masked_fill(~allowed, float("-inf")), -1)
    h = -torch.where(allowed, logp.exp() * logp, 0.0).sum(-1)  # (B, h, Lq)
    w = torch.ones_like(h[:, 0]) if real is None else real.to(h.dtype)
    return (h * w[:, None]).sum((0, 2)) / w.sum().clamp(min=1)


def masked_mean(x: torch.Tensor, real: torch.Tensor | None) -> torch.Tensor:
    """Mean of the entries of ``x`` (B, L, d) at the real positions (``real`` (B, L); None: all)."""
    x = x.float()
    if real is None:
        return x.mean()
    w = real[..., None].to(x.dtype).expand_as(x)
    return (x * w).sum() / w.sum().clamp(min=1)


def masked_var(x: torch.Tensor, real: torch.Tensor | None) -> torch.Tensor:
    """Var x = E (x − E x)² over the entries of ``x`` (B, L, d) at the real positions."""
    x = x.float()
    return masked_mean((x - masked_mean(x, real)).square(), real)


class Probes:
    """Hooks on ``model`` that record :data:`FIELDS` on every forward pass within ``with probes:``.
    :meth:`row` gives the last pass's numbers as one device tensor; :meth:`unpack` turns its
    values, read back, into one step's entry of each field."""

    def __init__(self, model):
        stacks = model.stacks()
        residuals = [(f"{s}.{n}", s, m) for s, stack in stacks.items() for n, m in stack.residuals()]
        self.sublayers = [name for name, _, _ in residuals]
        self.attention = [(name, s, res.f) for name, s, res in residuals if isinstance(res.f, Attention)]
        self.stream_names = self.sublayers + [f"{s}.output" for s in stacks]
        self.dyt = [(f"{s}.{n}", s, m) for s, stack in stacks.items() for n, m in stack.named_modules() if is_dyt(m)]
        self.dyt_names = [name for name, _, _ in self.dyt]
        self.n_heads = model.cfg.n_heads
        embeds = {"encoder": getattr(model, "src_embed", None), "decoder": getattr(model, "tgt_embed", None)}
        n = len(residuals)
        self._before = ([(embeds[s], self._real_tokens(s)) for s in stacks]  # forward pre-hooks: inputs
                        + [(res, self._stream(s, i)) for i, (_, s, res) in enumerate(residuals)])
        self._after = ([(stack, self._output(s, n + j)) for j, (s, stack) in enumerate(stacks.items())]  # forward hooks
                       + [(f, self._scores(s, i)) for i, (_, s, f) in enumerate(self.attention)]
                       + [(m, self._saturated(s, i)) for i, (_, s, m) in enumerate(self.dyt)])
        self.real: dict = {}  # stack → (B, L) True at real tokens, set as each stack's ids are embedded
        self._clear()
        self._attached = contextlib.ExitStack()

    def _clear(self):
        nan = float("nan")
        a = len(self.attention)
        self.values = {"attn_logit_max": [nan] * a, "attn_entropy": [[nan] * self.n_heads] * a,
                       "stream_var": [nan] * len(self.stream_names), "dyt_saturated": [nan] * len(self.dyt)}

    def __enter__(self):
        self._attached.enter_context(attached(self._before, "forward_pre"))
        self._attached.enter_context(attached(self._after, "forward"))
        return self

    def __exit__(self, *exc):
        self._attached.close()

    # -- hooks (under no_grad; device tensors only)
    def _real_tokens(self, stack):
        def hook(module, args, kwargs):
            self.real[stack] = args[0] != PAD
        return hook

    def _stream(self, stack, i):
        @torch.no_grad()
        def hook(module, args, kwargs):
            self.values["stream_var"][i] = masked_var(args[0].detach(), self.real.get(stack))
        return hook

    def _output(self, stack, i):
        @torch.no_grad()
        def hook(module, args, kwargs, out):
            self.values["stream_var"][i] = masked_var(out.detach(), self.real.get(stack))
        return hook

    def _scores(self, stack, i):
        @torch.no_grad()
        def hook(attn, args, kwargs, out):
            s = _attention_logits(attn, args[0].detach(), kwargs.get("memory")).float()
            allowed = allowed_pairs(kwargs.get("mask"), kwargs.get("causal", False), s.shape[-2], s.shape[-1], s.device)
            allowed = allowed.expand_as(s)
            self.values["attn_logit_max"][i] = torch.where(allowed, s.abs(), 0.0).amax()
            self.values["attn_entropy"][i] = attention_entropy(s, allowed, self.real.get(stack))
        return hook

    def _saturated(self, stack, i):
        @torch.no_grad()
        def hook(m, args, kwargs, out):
            saturated = dyt_saturated(args[0].detach().float(), m.alpha)
            self.values["dyt_saturated"][i] = masked_mean(saturated, self.real.get(stack))
        return hook

    # -- reading
    def row(self) -> torch.Tensor:
        """The last forward pass's numbers, flattened into one device tensor (nan where unrecorded)."""
        v = self.values
        parts = [*v["attn_logit_max"], *v["attn_entropy"], *v["stream_var"], *v["dyt_saturated"]]
        self._clear()
        if not parts:
            return torch.zeros(0)
        device = next((p.device for p in parts if isinstance(p, torch.Tensor)), None)
        return torch.cat([torch.as_tensor(p, dtype=torch.float32, device=device).reshape(-1) for p in parts])

    def unpack(self, values: list) -> dict:
        """One step's entry of each field from a :meth:`row` read back as floats."""
        a, h, s = len(self.attention), self.n_heads, len(self.stream_names)
        ent = values[a: a + a * h]
        return {"attn_logit_max": values[:a], "attn_entropy": [ent[i * h:(i + 1) * h] for i in range(a)],
                "stream_var": values[a + a * h: a + a * h + s], "dyt_saturated": values[a + a * h + s:]}
