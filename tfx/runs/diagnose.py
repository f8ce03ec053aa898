"""Where did a run blow up? Per-sub-layer magnitudes, and the first sub-layer out of range.

    with Watch(model, grads=True) as w:     # hooks on every residual sub-layer's branch f_i
        model.loss(batch)["loss"].backward()
    w.table()          # {'output': [...], 'logit': [...], 'grad': [...]}, one number per sub-layer
    first_offender(w.table(), w.names, limit=torch.finfo(torch.float16).max)

For each sub-layer x_i = combine(x_{i-1}, f_i) (tfx.nn.blocks.Residual) a Watch records
  output  max |f_i(·)|                      the branch's output
  logit   max |S| over all pairs            attention sub-layers only (nan for FFNs): the scores
                                            S = q·kᵀ/√d_h as ``Attention.scores`` gives them (after
                                            QK-norm and soft-cap), because
                                            F.scaled_dot_product_attention never shows them
  grad    max |∂loss/∂f_i(·)|               when ``grads=True``
as 0-dim device tensors: recording reads nothing back, so it adds no host sync. A value that
is not finite, or beyond ``limit`` (the largest number of the autocast dtype: 65,504 for
fp16), marks the sub-layer. The trainer (tfx.train) replays a failing step under a Watch,
once in the run's dtype and once in fp32, and stores what it finds in ``History.diagnosis``.
"""
from __future__ import annotations

import contextlib
import math

import torch

from ..nn.blocks import Attention
from ..nn.hooks import attached

KINDS = ("output", "logit", "grad")


def _absmax(t: torch.Tensor) -> torch.Tensor:
    return t.detach().abs().amax().float()  # NaN propagates through amax: a NaN anywhere shows


def _attention_logits(attn: Attention, x, memory=None) -> torch.Tensor:
    """The pre-softmax scores (B, h, Lq, Lk) that ``attn``'s forward uses (``Attention.scores``)."""
    return attn.scores(x, memory)


class Watch:
    """Forward (and optionally backward) hooks on the branch f_i of every residual sub-layer
    of ``model`` (``model.residuals()`` order: encoder first, forward order). Each forward
    pass adds one row per kind; :meth:`table` reads one row back as floats."""

    def __init__(self, model, grads: bool = False, logits: bool = True):
        self.names = [name for name, _ in model.residuals()]
        self._modules = [res.f for _, res in model.residuals()]
        self.attention = [isinstance(f, Attention) for f in self._modules]
        self.grads, self.logits = grads, logits
        self.rows: dict[str, list[list]] = {k: [] for k in KINDS}
        self._hooks = contextlib.ExitStack()

    def __enter__(self):
        self._hooks.enter_context(attached([(f, self._hook(i)) for i, f in enumerate(self._modules)], "forward"))
        return self

    def __exit__(self, *exc):
        self._hooks.close()

    def _hook(self, i):
        def hook(module, args, kwargs, out):
            if i == 0:  # the first sub-layer: a new forward pass begins
                for kind in KINDS:
                    self.rows[kind].append([None] * len(self.names))
            self.rows["output"][-1][i] = _absmax(out)
            if self.logits and self.attention[i]:
                self.rows["logit"][-1][i] = _absmax(_attention_logits(module, args[0], kwargs.get("memory")))
            if self.grads and out.requires_grad:
                row = self.rows["grad"][-1]
                out.register_hook(lambda g: row.__setitem__(i, _absmax(g)))
        return hook

    def __len__(self) -> int:
        return len(self.rows["output"])

    def table(self, row: int = -1) -> dict:
        """{kind: [float per sub-layer]} of one forward pass (nan where nothing was recorded),
        read back from the device at once; ``attention``: which sub-layers attend."""
        out = {"attention": list(self.attention)}
        for kind in KINDS:
            if self.rows[kind]:
                vals = [torch.tensor(float("nan")) if v is None else v.cpu() for v in self.rows[kind][row]]
                out[kind] = torch.stack(vals).tolist()
        return out


def first_offender(table: dict, names: list, limit: float) -> dict | None:
    """The first sub-layer whose output or attention logits (in forward order), else whose
    gradient (in backward order: the last sub-layer first), is not finite or exceeds
    ``limit``. None when every recorded value is finite and within range."""
    def bad(v):
        return not math.isfinite(v) or abs(v) > limit

    for i, name in enumerate(names):
        if table["attention"][i] and "logit" in table and bad(table["logit"][i]):  # logits come before the output
            return {"sublayer": name, "what": "attention logits", "value": table["logit"][i], "limit": limit}
        if bad(table["output"][i]):
            return {"sublayer": name, "what": "output", "value": table["output"][i], "limit": limit}
    grads = table.get("grad")
    if grads is not None:
        for i in reversed(range(len(names))):
            if bad(grads[i]):
                return {"sublayer": names[i], "what": "gradient", "value": grads[i], "limit": limit}
    return None


def largest(table: dict, names: list, kind: str = "output") -> tuple[str, float]:
    """(sub-layer, value) with the largest finite ``kind`` magnitude ('', nan if none)."""
    vals = [(v, n) for v, n in zip(table.get(kind, []), names) if math.isfinite(v)]
    if not vals:
        return "", float("nan")
    v, n = max(vals)
    return n, v
