"""How do we see inside one forward pass? Hooks, modes and names shared by every probe.

A probe attaches a function to some modules, runs one forward pass of the training
objective with dropout off, and detaches everything again, whatever happens in
between. :func:`attached` is that pattern, once; :func:`record_branches` is its most
used form: it keeps, for every residual sub-layer, the residual stream x_{i-1} and the
branch output f_i(x_{i-1}) (``blocks.Residual.hook``).
"""
from __future__ import annotations

import contextlib

import numpy as np

HOOK_KINDS = ("branch", "forward", "forward_pre")


@contextlib.contextmanager
def attached(hooks, kind: str):
    """Attach each ``(module, fn)`` of ``hooks`` for the duration of the block; every
    one is detached afterwards, also when the block raises.

    ``kind``:

    * ``"branch"``: ``fn(residual, x, fx)`` as a ``blocks.Residual``'s ``hook``, called
      with the stream x_{i-1} and the branch output f_i before they are combined;
    * ``"forward"``: ``fn(module, args, kwargs, out)``, a torch forward hook;
    * ``"forward_pre"``: ``fn(module, args, kwargs)``, a torch forward pre-hook.

    The torch hooks see the keyword arguments too (e.g. an attention's ``memory``)."""
    if kind not in HOOK_KINDS:
        raise ValueError(f"kind={kind!r}: choose one of {', '.join(map(repr, HOOK_KINDS))}")
    detach = []
    try:
        for module, fn in hooks:
            if kind == "branch":
                module.hook = fn
                detach.append(lambda m=module: setattr(m, "hook", None))
            elif kind == "forward":
                detach.append(module.register_forward_hook(fn, with_kwargs=True).remove)
            else:
                detach.append(module.register_forward_pre_hook(fn, with_kwargs=True).remove)
        yield
    finally:
        for undo in detach:
            undo()


@contextlib.contextmanager
def mode(model, training: bool = False):
    """``model`` in eval mode (dropout off), or in training mode with ``training=True``,
    for the duration of the block; its own mode is restored afterwards."""
    was = model.training
    model.train(training)
    try:
        yield model
    finally:
        model.train(was)


def loss_on(model, batch) -> dict:
    """One forward pass of the training objective on ``batch`` (moved to the model's
    device), no update: ``model.loss``'s dict."""
    return model.loss(batch.to(next(model.parameters()).device))


@contextlib.contextmanager
def record_branches(model, detach: bool = True):
    """Within the block, every forward pass appends one record per residual sub-layer
    to the yielded dict: ``{stack: [{'name', 'x', 'f'}, …]}`` in forward order, with
    x = x_{i-1} (the stream entering the sub-layer) and f = f_i(x_{i-1}) (its branch)."""
    records = {name: [] for name in model.stacks()}

    def keep(stack_name, name):
        def hook(res, x, fx):
            records[stack_name].append({"name": name, "x": x.detach() if detach else x,
                                        "f": fx.detach() if detach else fx})
        return hook

    hooks = [(m, keep(s, name)) for s, stack in model.stacks().items() for name, m in stack.residuals()]
    with attached(hooks, "branch"):
        yield records


def stack_name(model, stack: str | None) -> str:
    """``stack`` checked against the model's stacks; None: the stack that produces the
    outputs (the decoder when there is one)."""
    stacks = model.stacks()
    if stack is None:
        return "decoder" if "decoder" in stacks else "encoder"
    if stack not in stacks:
        raise ValueError(f"stack={stack!r}: this model has {', '.join(stacks)}")
    return stack


def sublayer_kind(name: str) -> str:
    """'self-attn', 'cross-attn' or 'ffn' from a sub-layer's name (``layers.3.cross_attn``)."""
    last = name.rsplit(".", 1)[-1]
    return {"self_attn": "self-attn", "cross_attn": "cross-attn", "ffn": "ffn"}.get(last, last)


def sublayer_labels(names: list) -> dict:
    """``{"names", "kinds", "layer"}`` of sub-layers named like ``layers.3.ffn``: the labels a
    probe's per-sub-layer arrays come with (``layer`` counts from 1; 0 for a name outside the
    layers)."""
    return {"names": list(names), "kinds": [sublayer_kind(n) for n in names],
            "layer": np.array([int(n.split(".")[1]) + 1 if n.startswith("layers.") else 0 for n in names])}
