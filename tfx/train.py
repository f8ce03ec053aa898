"""The training loop: optimisers, learning-rate schedules, divergence detection, checkpoints.

    hist = train(model, task, TrainConfig(steps=200, lr=1e-3, warmup=0))
    hist.status   # 'ok', 'diverged' (non-finite or exploding loss) or 'stuck' (ended near chance)

Nothing raises when a run goes wrong: the history so far comes back with its status.
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field

import torch

from .config import TrainConfig

STATUSES = ("ok", "diverged", "stuck")


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


def make_optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    """Adam (Kingma & Ba 2015), AdamW, SGD with momentum, or RAdam (Liu et al. 2020)."""
    params = list(params)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    opt = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "radam": torch.optim.RAdam}[cfg.optimizer]
    return opt(params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay)


@dataclass
class History:
    """Everything a run recorded. Per step: loss, lr, grad_norm (before clipping),
    update_norm ‖θ_t − θ_{t−1}‖, acc. Per evaluation: eval_step, eval_loss, eval_acc."""

    status: str = "running"
    reason: str = ""
    steps_done: int = 0
    step: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    acc: list = field(default_factory=list)
    lr: list = field(default_factory=list)
    grad_norm: list = field(default_factory=list)
    update_norm: list = field(default_factory=list)
    eval_step: list = field(default_factory=list)
    eval_loss: list = field(default_factory=list)
    eval_acc: list = field(default_factory=list)
    chance_loss: float = float("nan")
    tokens: int = 0
    wall_time: float = 0.0
    device: str = ""
    model_config: dict = field(default_factory=dict)
    train_config: dict = field(default_factory=dict)
    task: str = ""

    def final_loss(self, fraction: float = 0.1) -> float:
        """Mean training loss over the last ``fraction`` of the recorded steps (nan if none)."""
        if not self.loss:
            return float("nan")
        k = max(1, int(len(self.loss) * fraction))
        return sum(self.loss[-k:]) / k

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.wall_time if self.wall_time else float("nan")

    def to_dict(self) -> dict:
        return asdict(self)

    def save(self, path: str):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f)

    @classmethod
    def load(cls, path: str) -> "History":
        with open(path) as f:
            return cls(**json.load(f))

    def __repr__(self) -> str:
        return (f"History(status={self.status!r}, steps_done={self.steps_done}, "
                f"final_loss={self.final_loss():.4g}, chance_loss={self.chance_loss:.4g}, device={self.device!r})")


@torch.no_grad()
def evaluate(model, batches, device, amp_dtype=None) -> tuple[float, float]:
    """Token-weighted mean loss and accuracy over ``batches``, in eval mode."""
    was = model.training
    model.eval()
    tot_loss = tot_acc = n = 0.0
    for b in batches:
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            out = model.loss(b.to(device))
        tot_loss += float(out["loss"]) * out["tokens"]
        tot_acc += float(out["acc"]) * out["tokens"]
        n += out["tokens"]
    model.train(was)
    return tot_loss / max(n, 1), tot_acc / max(n, 1)


def _amp_dtype(device, amp):
    if device.type != "cuda" or amp is False:
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def _rng_state(device):
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state, device):
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)


def train(model, task, cfg: TrainConfig | None = None, resume: bool = False, **kw) -> History:
    """Train ``model`` on ``task`` (any object with ``batch(step, batch_size)``,
    ``eval_batches`` and ``chance_loss``, see tfx.data) and return its History.

    Keyword arguments are TrainConfig fields: ``train(model, task, steps=200, lr=1e-3)``.
    ``resume=True`` continues from ``cfg.checkpoint_path`` if it exists; the result is
    the same as an uninterrupted run (data is a function of the step; RNG state is saved).
    """
    cfg = TrainConfig(**kw) if cfg is None else (cfg.replace(**kw) if kw else cfg)
    device = pick_device(cfg.device)
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, cfg)
    amp_dtype = _amp_dtype(device, cfg.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)
    vocab = model.cfg.tgt_vocab
    diverge_loss = cfg.diverge_loss or 3 * math.log(vocab)
    hist = History(chance_loss=float(task.chance_loss), device=str(device), task=getattr(task, "name", ""),
                   model_config=model.cfg.to_dict(), train_config=json.loads(json.dumps(cfg.to_dict())))
    torch.manual_seed(cfg.seed)  # dropout; the data depends on the step alone
    start = 0
    if resume and cfg.checkpoint_path and os.path.exists(cfg.checkpoint_path):
        ck = torch.load(cfg.checkpoint_path, map_location=device, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        scaler.load_state_dict(ck["scaler"])
        hist = History(**ck["history"])
        _set_rng_state(ck["rng"], device)
        start = ck["step"]
    eval_batches = task.eval_batches(cfg.batch_size, "valid", cfg.eval_batches)
    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps, initial=start, desc=getattr(task, "name", "train"), leave=False)
    t0 = time.perf_counter() - hist.wall_time
    for step in range(start + 1, cfg.steps + 1):
        lr = lr_at(step, cfg)
        for g in opt.param_groups:
            g["lr"] = lr
        batch = task.batch(step - 1, cfg.batch_size).to(device)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            out = model.loss(batch, cfg.label_smoothing)
        loss = out["loss"]
        loss_value = float(loss.detach())
        if not math.isfinite(loss_value) or loss_value > diverge_loss:
            hist.status = "diverged"
            hist.reason = f"step {step}: loss {loss_value:.4g} " + (
                "is not finite" if not math.isfinite(loss_value) else f"> diverge_loss {diverge_loss:.4g}")
            _record(hist, step, loss_value, float(out["acc"]), lr, float("nan"), float("nan"))
            break
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.clip or float("inf")))
        before = [p.detach().clone() for p in params] if cfg.record_updates else None
        scaler.step(opt)
        scaler.update()
        upd = float("nan")
        if before is not None:
            with torch.no_grad():
                upd = math.sqrt(sum(float((p - b).pow(2).sum()) for p, b in zip(params, before)))
        hist.tokens += out["tokens"]
        if step % cfg.log_every == 0 or step == cfg.steps:
            _record(hist, step, loss_value, float(out["acc"]), lr, grad_norm, upd)
        hist.steps_done = step
        if cfg.eval_every and step % cfg.eval_every == 0 and step != cfg.steps:
            _eval(hist, model, eval_batches, device, amp_dtype, step)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_value:.3f}")
        if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
            hist.wall_time = time.perf_counter() - t0
            save_checkpoint(cfg.checkpoint_path, model, opt, scaler, hist, step, device)
    if bar is not None:
        bar.close()
    if hist.status != "diverged":
        _eval(hist, model, eval_batches, device, amp_dtype, hist.steps_done)
        final = hist.final_loss()
        if final >= cfg.stuck_fraction * hist.chance_loss:
            hist.status = "stuck"
            hist.reason = (f"final loss {final:.4g} ≥ {cfg.stuck_fraction} × chance loss {hist.chance_loss:.4g} "
                           "(the model collapsed to, or never left, the best prediction that ignores its input)")
        else:
            hist.status = "ok"
    hist.wall_time = time.perf_counter() - t0
    return hist


def _record(hist, step, loss, acc, lr, grad_norm, update_norm):
    hist.step.append(step)
    hist.loss.append(loss)
    hist.acc.append(acc)
    hist.lr.append(lr)
    hist.grad_norm.append(grad_norm)
    hist.update_norm.append(update_norm)


def _eval(hist, model, batches, device, amp_dtype, step):
    loss, acc = evaluate(model, batches, device, amp_dtype)
    hist.eval_step.append(step)
    hist.eval_loss.append(loss)
    hist.eval_acc.append(acc)


def save_checkpoint(path, model, opt, scaler, hist, step, device):
    """Everything needed to continue exactly: weights, optimiser, scaler, history, RNG."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict(),
                "history": hist.to_dict(), "rng": _rng_state(device), "step": step}, tmp)
    os.replace(tmp, path)
