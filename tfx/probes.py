"""What we measure: the probes behind every claim the book checks.

Each probe works on any tfx model (``tfx.model.Transformer``) and returns plain
numbers, numpy arrays or dicts, so a reader can point it at their own model.
The shared mechanism is ``record_branches``: it hooks every residual sub-layer
(``blocks.Residual.hook``) and keeps the residual stream x_{i-1} and the branch
output f_i(x_{i-1}) of one forward pass.
"""
from __future__ import annotations

import contextlib

import torch

from .blocks import Residual


@contextlib.contextmanager
def record_branches(model, detach: bool = True):
    """Within the block, every forward pass appends one record per residual sub-layer
    to the yielded dict: ``{stack: [{'name', 'x', 'f'}, …]}`` in forward order, with
    x = x_{i-1} (the stream entering the sub-layer) and f = f_i(x_{i-1}) (its branch)."""
    records = {name: [] for name in model.stacks()}
    hooked = []
    for stack_name, stack in model.stacks().items():
        for name, m in stack.named_modules():
            if isinstance(m, Residual):
                def hook(res, x, fx, stack_name=stack_name, name=name):
                    records[stack_name].append({"name": name, "x": x.detach() if detach else x,
                                                "f": fx.detach() if detach else fx})
                m.hook = hook
                hooked.append(m)
    try:
        yield records
    finally:
        for m in hooked:
            m.hook = None


# ============================================================== LayerNorm and gradients at init (LN-1 … LN-5)
# (section owned by the LN chapters)


# ============================================================== amplification and Admin (GV-1 … GV-3, AM-1, AM-2, AD-1, AD-2)
# (section owned by the amplification chapters)
