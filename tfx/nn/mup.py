"""μP for Adam: which weights scale how with the width d (Tensor Programs V, yang2022tp5).

Yang et al. (2022, arXiv 2203.03466) show that under the standard parameterisation the best
learning rate moves as the model widens, and that under the *maximal update
parameterisation* (μP) it stays, so a rate tuned at a small ``base_width`` transfers. With
the width multiplier r = d / base_width (``width_multiplier``), μP for Adam (their Table 3
in the base-width form of their Table 8 and of ``microsoft/mup``) is, in tfx:

  =====================  ==========================  ==========================================
  parameter              initialisation              Adam learning rate
  =====================  ==========================  ==========================================
  hidden matrices        as ``cfg.init`` (Xavier:    lr / r   (``lr_scales``: "hidden")
  (q, k, v, out_proj,    variance 2/(fan_in+fan_out)
  fc1, fc2)              ∝ 1/fan_in, d_ffn ∝ d)
  token embeddings       as ``cfg.init``             lr / √r with ``embed_scale`` (the √d
                                                     multiplier makes an Adam step of size lr
                                                     move x_0 by √d·lr), else lr
  vectors: biases, norm  as ``cfg.init``             lr
  gains, positions, ω, α
  readout (out_proj of   as ``cfg.init``; its        lr
  the model)             logits × 1/r (``readout_multiplier``, mup's MuReadout)
  =====================  ==========================  ==========================================

and attention logits QKᵀ · √(d_h,base)/d_h (``attention_scale``): 1/d_h, not 1/√d_h, with the
constant that matches 1/√d_h at the base width (the heads keep their number; d_h = d / n_heads
grows). At d = base_width every factor is exactly 1: the model, its initial weights and its
optimiser are the standard ones, to the bit.

Weight decay keeps the same strength per step in every group (mup's ``MuAdam``/``MuAdamW``/
``MuSGD``, microsoft/mup; yang2022tp5): a group whose rate is lr·s (s its ``lr_scale`` above)
gets λ/s, so its decay lr·s·λ/s = lr·λ is the standard one (under AdamW a hidden matrix has rate
lr/r and decay λ·r; the embedding with ``embed_scale``, which mup has no rule for, λ·√r).
Without it a hidden matrix would decay r times more slowly, and the decay tuned at the base
width would not transfer. ``tfx.nn.optim.group_decay`` gives the formula, with the independent
form too.

The readout keeps its initial draw and has its logits multiplied by 1/r (mup's MuReadout): its
effective init variance then falls faster than 1/fan_in², which μP allows (a readout initialised
at zero is the limit of the same choice). The learning-rate factors are applied in one place: the optimiser's
parameter groups (``param_groups``), which ``tfx.nn.optim.make_optimizer`` builds from a model
and ``tfx.nn.optim.set_lr`` keeps (each group's rate is the schedule's × its ``lr_scale``).
"""
from __future__ import annotations

import math

from torch import nn

from .config import PARAMETER_KINDS, ModelConfig  # noqa: F401 (PARAMETER_KINDS: what parameter_kind returns)


def width_multiplier(cfg: ModelConfig) -> float:
    """r = d_model / base_width under μP; 1 under the standard parameterisation."""
    return cfg.d_model / cfg.base_width if cfg.parameterization == "mup" else 1.0


def attention_scale(cfg: ModelConfig) -> float:
    """The factor on QKᵀ: 1/√d_h (Vaswani et al. 2017), or under μP √(d_h,base)/d_h =
    (1/√d_h)·(1/√r): ∝ 1/d_h (yang2022tp5 §J), equal to 1/√d_h at the base width."""
    d_h = cfg.d_model // cfg.n_heads
    r = width_multiplier(cfg)
    return d_h**-0.5 if r == 1.0 else d_h**-0.5 / math.sqrt(r)


def readout_multiplier(cfg: ModelConfig) -> float:
    """The factor on the output logits: 1, or 1/r = base_width/d under μP (yang2022tp5)."""
    return 1.0 / width_multiplier(cfg)


def parameter_kind(model, name: str, p) -> str:
    """'hidden', 'embedding', 'vector' or 'readout' (this module's table) for ``model``'s
    parameter ``name``: the readout is ``model.out_proj.weight``; a 2-D weight of any other
    ``nn.Linear`` is hidden; an ``nn.Embedding``'s table is an embedding; the rest are vectors.
    The one place tfx decides what a parameter is: μP's rates and decay (:func:`param_groups`)
    and ``TrainConfig.optimizer_by_kind`` (:func:`kind_groups`) both read it."""
    if p is getattr(getattr(model, "out_proj", None), "weight", None):
        return "readout"
    module = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
    if isinstance(module, nn.Linear) and p is module.weight:
        return "hidden"
    if isinstance(module, nn.Embedding):
        return "embedding"
    return "vector"


def lr_scales(model) -> dict:
    """{parameter kind: its Adam learning-rate factor} for ``model`` (this module's table)."""
    cfg = model.cfg
    r = width_multiplier(cfg)
    return {"hidden": 1.0 / r, "embedding": 1.0 / math.sqrt(r) if cfg.embed_scale else 1.0,
            "vector": 1.0, "readout": 1.0}


def params_by_kind(model) -> dict:
    """{kind: [its trainable parameters, in ``model.parameters()`` order]} for the kinds
    ``model`` has (:func:`parameter_kind`), in the order of :data:`PARAMETER_KINDS`."""
    groups = {kind: [] for kind in PARAMETER_KINDS}
    for n, p in model.named_parameters():
        if p.requires_grad:
            groups[parameter_kind(model, n, p)].append(p)
    return {kind: ps for kind, ps in groups.items() if ps}


def kind_groups(model) -> list:
    """One optimiser parameter group per kind of parameter ``model`` has,
    ``{"params": [...], "lr_scale": s, "kind": kind}``, s its μP rate factor (1 under the
    standard parameterisation)."""
    scales = lr_scales(model)
    return [{"params": ps, "lr_scale": scales[kind], "kind": kind} for kind, ps in params_by_kind(model).items()]


def param_groups(model):
    """The trainable parameters of ``model`` as the optimiser takes them: under the standard
    parameterisation one plain list (as ``model.parameters()``); under μP :func:`kind_groups`,
    one group per kind with its learning-rate factor."""
    if model.cfg.parameterization == "standard":
        return [p for p in model.parameters() if p.requires_grad]
    return kind_groups(model)
