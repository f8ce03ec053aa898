"""Small, cheap demonstrations of the four training tricks (chapter 1).

* ``ffn_stack(depth, d, kind)``: a deep stack of tfx feed-forward blocks (no
  attention) wired as ``plain`` (x ← f(x): no residual connection), ``residual``
  (x ← x + f(x): no normalisation), ``post`` (x ← LN(x + f(x))) or ``pre``
  (x ← x + f(LN(x)), final LN). Built from ``tfx.nn.blocks`` so the wiring is the
  book's ``Residual``.
* ``signal_profile(stack, x)``: per-layer activation norms and weight-gradient
  norms of one forward/backward pass: what vanishes and what explodes.
* ``first_step(model, batch, lr)``: what one optimiser step at initialisation does
  to the weights and to the output, with Adam or SGD: why early steps must be small
  (warmup) and why Adam evens out unbalanced gradients.
"""
from __future__ import annotations

import copy
import math

import torch
from torch import nn

from ..nn.blocks import FeedForward, Residual, make_norm
from ..nn.config import TrainConfig
from ..nn.init import xavier_linear_
from ..nn.optim import make_optimizer, take_step

STACK_KINDS = ("plain", "residual", "post", "pre")


class Plain(nn.Module):
    """x ← f(x): a layer with no residual connection."""

    def __init__(self, f: nn.Module):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


class FFNStack(nn.Module):
    """``depth`` feed-forward blocks; ``layers[l]`` maps x_l to x_{l+1}."""

    def __init__(self, depth: int, d: int, kind: str, d_ffn: int | None = None, activation: str = "relu"):
        super().__init__()
        if kind not in STACK_KINDS:
            raise ValueError(f"kind={kind!r} is not allowed; choose one of: {', '.join(map(repr, STACK_KINDS))}")
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth={depth!r} must be an integer ≥ 1")
        self.kind, self.d = kind, d
        d_ffn = d_ffn or 4 * d

        def block():
            f = FeedForward(d, d_ffn, activation)
            if kind == "plain":
                return Plain(f)
            return Residual(f, d, {"residual": "none", "post": "post", "pre": "pre"}[kind])

        self.layers = nn.ModuleList(block() for _ in range(depth))
        self.final_norm = make_norm("layernorm", d, 1e-5) if kind == "pre" else None
        for m in self.modules():  # tfx's default initialisation
            if isinstance(m, nn.Linear):
                xavier_linear_(m)

    def forward(self, x, return_all: bool = False):
        xs = [x]
        for layer in self.layers:
            x = layer(x)
            xs.append(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return (x, xs) if return_all else x


def ffn_stack(depth: int, d: int = 64, kind: str = "post", seed: int | None = 0, **kw) -> FFNStack:
    """A deep stack of feed-forward blocks wired as ``kind`` (see module docstring)."""
    if seed is not None:
        torch.manual_seed(seed)
    return FFNStack(depth, d, kind, **kw)


def signal_profile(stack: FFNStack, x: torch.Tensor) -> dict:
    """One forward and backward pass of ``stack`` on ``x`` (tokens × d). The loss is
    ⟨output, g⟩/tokens for a fixed Gaussian g (seed 0), so the gradient arriving at
    the top is g whatever the output is: we only look at how signals travel.

    Returns numpy-free lists, index l = 0 … depth:
      ``act_rms``:  RMS of x_l (per coordinate; x_0 is the input)
      ``grad_rms``: for l ≥ 1, RMS of the gradient of layer l's first weight matrix (fc1)
    """
    stack.zero_grad(set_to_none=True)
    out, xs = stack(x, return_all=True)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(0)).to(out)
    loss = (out * g).sum() / x.shape[0]
    loss.backward()
    act = [float(v.detach().pow(2).mean().sqrt()) for v in xs]
    grads = [float(layer.f.fc1.weight.grad.pow(2).mean().sqrt()) for layer in stack.layers]
    return {"act_rms": act, "grad_rms": grads}


def _logits(model, batch):
    if model.cfg.kind == "encoder":
        return model(src=batch.src)
    return model(src=batch.src, tgt_in=batch.tgt[:, :-1])


def first_step(model, batch, lr: float, optimizer: str = "adam", betas=(0.9, 0.98), eps: float = 1e-8) -> dict:
    """Take one optimiser step from ``model``'s current weights on ``batch`` (on a copy;
    ``model`` is not changed) and report

      ``grad_rms``, ``update_rms``: {parameter name: RMS of its gradient / of its change},
                                    for every weight matrix (2-D parameter)
      ``output_change``: mean over target tokens of ‖Δ logits‖² (the change in the
                         model's output caused by this one step)
      ``output_norm``: mean over target tokens of ‖logits‖² before the step (the scale)
      ``update_norm``: ‖θ₁ − θ₀‖ over all parameters
    """
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer={optimizer!r} is not allowed; choose 'adam' or 'sgd'")
    m = copy.deepcopy(model)
    m.train()
    with torch.no_grad():
        before = _logits(m, batch).detach()
    params = dict(m.named_parameters())
    old = {k: p.detach().clone() for k, p in params.items()}
    opt = make_optimizer(params.values(), TrainConfig(optimizer=optimizer, lr=lr, betas=tuple(betas), eps=eps,
                                                      momentum=0.0))
    grad_rms = {}

    def read_grads():  # RMS of each weight matrix's gradient, before the update
        grad_rms.update({k: float(p.grad.pow(2).mean().sqrt()) for k, p in params.items()
                         if p.dim() == 2 and p.grad is not None})

    take_step(opt, m.loss(batch)["loss"], before_update=read_grads)
    with torch.no_grad():
        after = _logits(m, batch)
        change = float((after - before).pow(2).sum(-1).mean())
        upd = {k: float((p - old[k]).pow(2).mean().sqrt()) for k, p in params.items() if k in grad_rms}
        norm = math.sqrt(sum(float((p - old[k]).pow(2).sum()) for k, p in params.items()))
    return {"grad_rms": grad_rms, "update_rms": upd, "output_change": change,
            "output_norm": float(before.pow(2).sum(-1).mean()), "update_norm": norm}
