"""How one step is taken: the optimisers the papers compare and the learning-rate schedule.

Built from a :class:`tfx.nn.config.TrainConfig`. The trainer (:mod:`tfx.runs.train`)
loops over them; the theory (:mod:`tfx.theory.adam`, :mod:`tfx.theory.gradients`)
takes a few steps with them to measure the first updates (WU-3, GV-3).
"""
from __future__ import annotations

import math

import torch

from .config import TrainConfig


def pick_device(device: str | None = None) -> torch.device:
    """``device`` if given, else CUDA when present, else CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimiser step ``step`` = 1, 2, … (see TrainConfig)."""
    w = cfg.warmup
    if cfg.schedule == "inverse-sqrt":
        return cfg.lr * (min(step / w, math.sqrt(w / step)) if w else 1.0)
    warm = min(1.0, step / w) if w else 1.0
    if cfg.schedule == "linear-decay" and step > w:
        return cfg.lr * max(0.0, (cfg.steps - step) / max(1, cfg.steps - w))
    return cfg.lr * warm


def make_optimizer(params, cfg: TrainConfig, device: torch.device | None = None) -> torch.optim.Optimizer:
    """Adam (Kingma & Ba 2015), AdamW, SGD with momentum, or RAdam (Liu et al. 2020).
    ``weight_decay_mode="independent"`` (AdamW only): decay λ·(lr_t/lr) per step, whatever the peak lr.
    On CUDA and CPU, Adam and AdamW use the fused kernel (one launch updates every parameter;
    on a CPU it is also ~3× faster than the per-parameter loop)."""
    params = list(params)
    wd = cfg.weight_decay
    if cfg.weight_decay_mode == "independent":
        # wortsman2023proxies §3.2.2: AdamW decays θ ← θ − lr_t·λ'·θ (loshchilov2019adamw), so
        # λ' = λ / lr (the peak) gives θ ← θ − λ·(lr_t/lr)·θ: the schedule's shape, not its height
        wd = cfg.weight_decay / cfg.lr
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=wd)
    opt = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "radam": torch.optim.RAdam}[cfg.optimizer]
    kw = {"fused": True} if cfg.optimizer != "radam" and device is not None and device.type in ("cuda", "cpu") else {}
    return opt(params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=wd, **kw)
