"""The training loop: optimisers, learning-rate schedules, divergence detection, checkpoints.

    hist = train(model, task, TrainConfig(steps=200, lr=1e-3, warmup=0))
    hist.status      # 'learned', 'did not learn' or 'diverged': the book's one outcome rule
                     # (tfx.runs.outcome), from the held-out loss against chance and floor
    hist.diagnosis   # for a diverged run: the first sub-layer that went out of range (tfx.runs.diagnose)

Nothing raises when a run goes wrong: the history so far comes back with its status.

The loop never waits for the device between logged steps: loss, accuracy, the output's
log Z, the gradient and update norms (and, with ``probes=True``, the numbers of
tfx.runs.probes) stay on it and are read every ``log_every`` steps, so a non-finite or
exploding loss is caught at most ``log_every`` steps late, and is reported at the step
where it happened.

The objective is the cross-entropy plus ``z_loss`` · mean (log Z)² (chowdhery2022palm);
the recorded training and held-out losses are the cross-entropy alone, so runs compare
across z-loss weights.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import time
import zipfile
from dataclasses import asdict, dataclass, field

import torch

from ..nn.batch import repeated_ngram
from ..nn.config import AMP_DTYPES, ModelConfig, TrainConfig, autocast_dtype
from ..nn.model import build_model
from ..nn.optim import (DATA_STREAM, Composite, SpikeGuard, data_step, drop_state, lr_at,  # noqa: F401
                        make_optimizer, pick_device, qk_clip_, qk_logit_max, record_qk_logits, step_batch,
                        take_step)  # (re-exported)
from .diagnose import Watch, first_offender, largest
from .outcome import judge
from .probes import FIELDS as PROBE_FIELDS, Probes

# A divergence: a loss above the larger of DIVERGE_OVER_START × the loss at step 1 and
# DIVERGE_OVER_CHANCE × ln V (uniform guessing over a vocabulary of V), unless diverge_loss is set.
DIVERGE_OVER_START = 3.0
DIVERGE_OVER_CHANCE = 3.0
REPEATED_NGRAM = 4  # the n of inject='repeated-ngram'
MAX_ROLLBACKS = 5  # spike_guard='rollback' rolls a run back at most this often (then lets it be)


class UpdateNorm:
    """‖θ_t − θ_{t−1}‖ of the optimiser step just taken, read from the optimiser's state
    with multi-tensor (foreach) kernels, without keeping a copy of θ:

      Adam    Δ = −lr/(1−β₁ᵗ) · m_t / (√v_t / √(1−β₂ᵗ) + ε)        (Kingma & Ba 2015)
      AdamW   −(lr·u_t + lr·λ·θ_t) / (1 − lr·λ), u_t Adam's term above  (Loshchilov & Hutter 2019)
      SGD     Δ = −lr · b_t, the momentum buffer

    Other optimisers (RAdam, Adam-atan2, Muon, SGD without momentum) copy θ before the step
    instead; a :class:`tfx.nn.optim.Composite`'s norm is that of its optimisers' (disjoint) updates together.
    ``after()`` returns a 0-dim device tensor: nothing is read back.
    """

    def __init__(self, opt: torch.optim.Optimizer):
        self.opt, groups = opt, opt.param_groups
        self.parts = [UpdateNorm(o) for o in opt.optimizers.values()] if isinstance(opt, Composite) else None
        # AdamW subclasses Adam with decoupled_weight_decay=True from torch 2.6 on (the declared floor);
        # _adam_delta also reads the flag's absence as "AdamW" for older copies
        if isinstance(opt, torch.optim.Adam):
            self.kind = "adam" if not any(g["amsgrad"] or g["maximize"] for g in groups) else None
        elif isinstance(opt, torch.optim.SGD):
            ok = all(g["momentum"] > 0 and not g["nesterov"] and not g["dampening"] for g in groups)
            self.kind = "sgd" if ok else None
        else:
            self.kind = None
        self._before = None

    def _groups(self):
        for g in self.opt.param_groups:
            ps = [p for p in g["params"] if p.grad is not None]
            if ps:
                yield g, ps

    @torch.no_grad()
    def before(self):
        if self.parts is not None:
            for part in self.parts:
                part.before()
        elif self.kind is None:
            self._before = [[p.detach().clone() for p in ps] for _, ps in self._groups()]

    @torch.no_grad()
    def after(self) -> torch.Tensor:
        if self.parts is not None:  # ‖(Δ₁, Δ₂, …)‖ = (Σ_i ‖Δ_i‖²)^½
            device = self.opt.param_groups[0]["params"][0].device  # a part with no gradient gives a CPU zero
            return torch.linalg.vector_norm(torch.stack([part.after().to(device) for part in self.parts]))
        norms = []
        for i, (g, ps) in enumerate(self._groups()):
            if self.kind is None:
                delta = torch._foreach_sub(ps, self._before[i])
            elif self.kind == "sgd":
                delta = [self.opt.state[p]["momentum_buffer"] * g["lr"] for p in ps]
            else:
                delta = self._adam(g, ps)
            norms.extend(torch._foreach_norm(delta))
        self._before = None
        return torch.linalg.vector_norm(torch.stack(norms)) if norms else torch.zeros(())

    def _adam(self, g, ps):
        state = [self.opt.state[p] for p in ps]
        t = state[0]["step"]
        t = float(t) if t.device.type == "cpu" else t  # fused kernels keep the step count on the device
        return self._adam_delta(g, ps, state, t)

    def _adam_delta(self, g, ps, state, t):
        """Δ from the state; ``t``, the step count, a float or (fused on CUDA) a device tensor,
        read without a host sync."""
        (b1, b2), lr, wd = g["betas"], g["lr"], g["weight_decay"]
        if isinstance(t, float) and t == 0:
            return [torch.zeros_like(p) for p in ps]  # no step yet: a gradient scaler skipped it
        denom = torch._foreach_sqrt([s["exp_avg_sq"] for s in state])
        torch._foreach_div_(denom, (1 - b2 ** t) ** 0.5)
        torch._foreach_add_(denom, g["eps"])
        delta = torch._foreach_div([s["exp_avg"] for s in state], denom)
        torch._foreach_mul_(delta, lr / (1 - b1 ** t) if isinstance(t, float) else lr / (1 - b1 ** t).clamp(min=1e-30))
        if wd and g.get("decoupled_weight_decay", isinstance(self.opt, torch.optim.AdamW)):
            # θ_t = (1 − lr·λ)·θ_{t−1} − lr·u, so θ_{t−1} − θ_t = (lr·u + lr·λ·θ_t) / (1 − lr·λ)
            torch._foreach_add_(delta, ps, alpha=lr * wd)
            torch._foreach_div_(delta, 1 - lr * wd)
        return delta


@dataclass
class History:
    """Everything a run recorded. Per logged step: loss (the cross-entropy, without the z-loss),
    lr, grad_norm (before clipping), update_norm ‖θ_t − θ_{t−1}‖, acc, log_z (the mean over
    real tokens of the output's log partition function log Z = logsumexp(logits)) and
    log_z_absmax (its largest |log Z|). With ``probes=True``, per logged step (probe_step,
    tfx.runs.probes): attn_logit_max [attention module] (named by attn_names), attn_entropy
    [attention module][head], stream_var [sub-layer, then each stack's output] (stream_names)
    and dyt_saturated [DyT norm] (dyt_names). Per evaluation: eval_step, eval_loss, eval_acc, and
    bleu (translation tasks: greedy BLEU on the first ``bleu_sentences`` validation
    sentences). Every ``watch_every`` steps: watch_step, and per sub-layer (``sublayers``)
    act_max (largest |branch output|) and logit_max (largest |attention logit|).
    With ``qk_clip`` or ``record_qk_logits``, per logged step: qk_logit_max, the largest
    |attention logit| of the step's forward over every attention module and head (before
    QK-clip's rescale; tfx.nn.optim.qk_clip_); else it stays empty.
    A diverged run has ``diverged_step`` and ``diagnosis`` (see tfx.runs.diagnose).
    ``steps_clipped``: the steps whose gradient norm was clipped (by ``clip`` or a spike guard),
    ``steps_skipped``: the steps a 'skip-zscore' guard left without an update; ``interventions``:
    each skip and rollback, as {"step", "what", …} (SZ-2). A rollback truncates the per-step
    lists to the step it went back to: they hold the steps the final weights were trained on."""

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
    floor_loss: float = 0.0  # the best loss any model can reach on the task (0 where unknown)
    start_loss: float = float("nan")  # the loss at step 1, measured before the first update
    tokens: int = 0
    wall_time: float = 0.0
    device: str = ""
    model_config: dict = field(default_factory=dict)
    train_config: dict = field(default_factory=dict)
    task: str = ""
    amp_dtype: str = ""  # 'bf16', 'fp16' or 'fp32': the precision the forward pass ran in
    bleu: list = field(default_factory=list)
    diverged_step: int = 0
    diagnosis: dict = field(default_factory=dict)
    sublayers: list = field(default_factory=list)
    watch_step: list = field(default_factory=list)
    act_max: list = field(default_factory=list)
    logit_max: list = field(default_factory=list)
    log_z: list = field(default_factory=list)
    log_z_absmax: list = field(default_factory=list)
    probe_step: list = field(default_factory=list)
    attn_names: list = field(default_factory=list)
    stream_names: list = field(default_factory=list)
    dyt_names: list = field(default_factory=list)
    attn_logit_max: list = field(default_factory=list)
    attn_entropy: list = field(default_factory=list)
    stream_var: list = field(default_factory=list)
    dyt_saturated: list = field(default_factory=list)
    qk_logit_max: list = field(default_factory=list)
    steps_clipped: int = 0
    steps_skipped: int = 0
    interventions: list = field(default_factory=list)

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
    """Token-weighted mean loss and accuracy over ``batches``, in eval mode (one read of the device)."""
    was = model.training
    model.eval()
    total, n = torch.zeros(2, dtype=torch.float64, device=device), 0
    for b in batches:
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            out = model.loss(b.to(device))
        total += torch.stack([out["loss"], out["acc"]]).double() * out["tokens"]
        n += out["tokens"]
    model.train(was)
    loss, acc = (total / max(n, 1)).tolist()
    return loss, acc


def _amp_dtype(device, cfg: TrainConfig):
    """The autocast dtype (None: fp32): ``cfg.amp_dtype`` if set, else bf16 (fp16 where the
    GPU lacks bf16) on CUDA unless ``amp=False``, else fp32."""
    if cfg.amp_dtype is not None:
        return autocast_dtype(cfg.amp_dtype)
    if device.type != "cuda" or cfg.amp is False:
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def _dtype_name(dtype) -> str:
    """The precision's name in :data:`tfx.nn.config.AMP_DTYPES` of an autocast dtype (None: fp32)."""
    return {autocast_dtype(name): name for name in AMP_DTYPES}[dtype]


def _rng_state(device):
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state, device):
    torch.set_rng_state(state["cpu"].cpu())
    if "cuda" in state and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"].cpu(), device)


def _clone(tree):
    """A copy of a (nested) state dict, tensors cloned where they are."""
    return torch.utils._pytree.tree_map(lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x, tree)


SNAPSHOT_EVERY = 8  # steps between the states a divergence replay can start from


class _Run:
    """One run's moving parts: the optimiser step, the snapshots a replay starts from, the replay."""

    def __init__(self, model, task, cfg: TrainConfig, device):
        self.model, self.task, self.cfg, self.device = model, task, cfg, device
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.opt = make_optimizer(model, cfg, device)  # μP's per-group rates: tfx.nn.mup.param_groups
        self.amp = _amp_dtype(device, cfg)
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.amp == torch.float16)
        self.loss_fn = torch.compile(model.loss_and_accuracy) if cfg.compile else model.loss_and_accuracy
        self.updates = UpdateNorm(self.opt)
        if cfg.qk_clip is not None and model.cfg.qk_norm:
            raise ValueError(f"qk_clip={cfg.qk_clip} rescales W_q and W_k, which the model's QK-norm (qk_norm=True) "
                             "undoes: the clip would change nothing; use one of them")
        if cfg.qk_clip is not None or cfg.record_qk_logits:  # else the forward is untouched
            record_qk_logits(model)
        self.snapshots = []  # [(step, state)]: the two latest, oldest first
        self.guard = SpikeGuard.of(cfg)
        self.skipped_batches = 0  # batches a rollback jumped over: step t then reads batch t + this
        self.clipped = None  # steps clipped at the fixed ``clip`` (a device count: nothing read back)
        self.guard_clipped = self.guard_skipped = 0
        self.skips = []  # the skip-step guard's decisions, for History.interventions

    def state_dict(self) -> dict:
        """What a checkpoint needs of the run beyond model and optimiser: the guard's statistics,
        the batches rollbacks skipped, the counts of clipped and skipped steps (plain values)."""
        g = self.guard
        return {"guard": None if g is None else {"values": list(g.values), "mean": g.mean, "var": g.var},
                "skipped_batches": self.skipped_batches, "skips": list(self.skips),
                "clipped": None if self.clipped is None else int(self.clipped),
                "guard_clipped": self.guard_clipped, "guard_skipped": self.guard_skipped}

    def load_state_dict(self, state: dict) -> None:
        if state.get("guard") is not None and self.guard is not None:
            self.guard.values.extend(state["guard"]["values"])
            self.guard.mean, self.guard.var = state["guard"]["mean"], state["guard"]["var"]
        self.skipped_batches, self.skips = state["skipped_batches"], list(state["skips"])
        self.clipped = None if state["clipped"] is None else torch.tensor(state["clipped"], device=self.device)
        self.guard_clipped, self.guard_skipped = state["guard_clipped"], state["guard_skipped"]

    def data_position(self, step: int) -> int:
        """Where in its data stream step ``step`` reads: the step itself, unless a rollback
        jumped batches or a 'data-reset' injection started the stream again."""
        if self.cfg.inject == "data-reset" and step >= self.cfg.inject_step:
            return step - self.cfg.inject_step + 1
        return step + self.skipped_batches

    def batch(self, step):
        """The data of optimiser step ``step`` = 1, 2, …: a function of the step alone (and of
        the injections and rollbacks, :meth:`data_position`)."""
        batch = step_batch(self.task, self.data_position(step), self.cfg)
        if self.cfg.inject == "repeated-ngram" and step == self.cfg.inject_step:
            batch = repeated_ngram(batch, REPEATED_NGRAM)
        return batch.to(self.device)

    def lr(self, step: int) -> float:
        """The schedule's rate, × ``inject_lr_factor`` during an 'lr-bump' injection."""
        lr = lr_at(step, self.cfg)
        c = self.cfg
        if c.inject == "lr-bump" and c.inject_step <= step < c.inject_step + c.inject_length:
            lr *= c.inject_lr_factor
        return lr

    def forward(self, batch, loss_fn, amp):
        with torch.autocast(self.device.type, dtype=amp, enabled=amp is not None):
            return loss_fn(batch.src, batch.tgt, self.cfg.label_smoothing, batch.src_padded, batch.tgt_padded)

    def step(self, step, eager=False, record_update=False):
        """One optimiser step on cross-entropy + z_loss · mean (log Z)², then QK-clip with
        ``qk_clip``. Returns (batch, lr, [loss, acc, grad norm, update norm, mean log Z,
        max |log Z|]) with the six numbers in one device tensor (loss: the cross-entropy; update
        norm nan unless ``record_update``: the optimiser's step, without QK-clip's rescale), and a
        seventh, the largest attention logit before the clip, with ``qk_clip`` or ``record_qk_logits``."""
        lr = self.lr(step)
        batch = self.batch(step)
        if self.cfg.inject == "fresh-moments" and step == self.cfg.inject_step:
            drop_state(self.opt)
        loss, acc, log_z, log_z_sq, log_z_absmax = self.forward(
            batch, self.model.loss_and_accuracy if eager else self.loss_fn, self.amp)
        objective = loss + self.cfg.z_loss * log_z_sq if self.cfg.z_loss else loss
        scale = None

        def before_update():  # θ_{t−1}, and the loss scale, as the step finds them
            nonlocal scale
            self.updates.before()
            scale = self.scaler._scale.clone() if self.scaler.is_enabled() else None

        norm_guard = self.guard if self.guard is not None and self.guard.rule != "rollback" else None
        grad_norm = take_step(self.opt, objective, lr=lr, clip=self.cfg.clip, grad_norm=True, scaler=self.scaler,
                              before_update=before_update if record_update else None, guard=norm_guard).float()
        if self.cfg.clip:
            over = (grad_norm > self.cfg.clip).long()
            self.clipped = over if self.clipped is None else self.clipped + over
        if norm_guard is not None and norm_guard.last is not None:
            if norm_guard.last[0] == "clip":
                self.guard_clipped += 1
            else:
                self.guard_skipped += 1
                self.skips.append({"step": step, "what": "skip", "z": norm_guard.last[1]})
        upd = torch.full_like(grad_norm, float("nan"))
        if record_update and self.skips and self.skips[-1]["step"] == step:  # no update was made
            upd = torch.zeros_like(grad_norm)
        elif record_update:
            upd = self.updates.after().float()
            if scale is not None:  # update() lowers the scale exactly when it skipped a step (inf gradients)
                upd = upd * (self.scaler._scale >= scale)
        numbers = [loss.detach().float(), acc.float(), grad_norm, upd, log_z.float(), log_z_absmax.float()]
        if self.cfg.qk_clip is not None:  # after the update norm was read: it is the optimiser's step alone
            numbers.append(qk_clip_(self.model, self.cfg.qk_clip).float())
        elif self.cfg.record_qk_logits:
            numbers.append(qk_logit_max(self.model).float())
        return batch, lr, torch.stack(numbers)

    def snapshot(self, step):
        state = {"model": _clone(self.model.state_dict()), "optimizer": _clone(self.opt.state_dict()),
                 "scaler": self.scaler.state_dict(), "rng": _rng_state(self.device)}
        self.snapshots = (self.snapshots + [(step, state)])[-2:]

    def _restore(self, state):
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(_clone(state["optimizer"]))
        if state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        _set_rng_state(state["rng"], self.device)

    def diagnose(self, bad_step: int) -> dict:
        """Replay from the older snapshot up to ``bad_step``, recording every sub-layer's largest
        output and attention logit on the way, then the failing step's forward and backward
        under a full Watch: in the run's dtype and, with the same weights, data and dropout, in fp32."""
        start, state = self.snapshots[0]
        self._restore(state)
        names = Watch(self.model).names
        before = {"step": [], "act_max": [], "logit_max": []}
        for t in range(start + 1, bad_step):
            with Watch(self.model) as w:
                self.step(t, eager=True)
            table = w.table()
            before["step"].append(t)
            before["act_max"].append(table["output"])
            before["logit_max"].append(table["logit"])
        batch, rng = self.batch(bad_step), _rng_state(self.device)
        replays = {}
        for amp in dict.fromkeys((self.amp, None)):  # the run's dtype, then fp32 (once if they are the same)
            _set_rng_state(rng, self.device)
            with Watch(self.model, grads=True) as w:
                loss, *_ = self.forward(batch, self.model.loss_and_accuracy, amp)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
            table = w.table()
            limit = torch.finfo(amp or torch.float32).max
            replays[_dtype_name(amp)] = {"loss": float(loss.detach()), "first": first_offender(table, names, limit),
                                         "output": table["output"], "logit": table["logit"], "grad": table["grad"]}
        self.opt.zero_grad(set_to_none=True)
        dtype = _dtype_name(self.amp)
        run = replays[dtype]
        out = {"step": bad_step, "dtype": dtype, "sublayers": names, "first": run["first"], "loss": run["loss"],
               "act_max": run["output"], "logit_max": run["logit"], "grad_max": run["grad"], "before": before}
        if dtype != "fp32":
            out["fp32"] = {"loss": replays["fp32"]["loss"], "first": replays["fp32"]["first"]}
        out["summary"] = _summary(out, run)
        return out


def _summary(d: dict, run: dict) -> str:
    """One paragraph a reader can act on: where, what, and whether fp32 would have survived."""
    names, dtype, first = d["sublayers"], d["dtype"], d["first"]
    if first is not None:
        v = first["value"]
        verb = "are" if first["what"] == "attention logits" else "is"
        how = f"{verb} not finite" if not math.isfinite(v) else f"reached {v:.3g}, beyond {dtype}'s largest {first['limit']:.3g}"
        text = f"step {d['step']}: the {first['what']} of {first['sublayer']} {how} (first in forward order)"
    else:
        act = largest(run, names, "output")
        logit = largest(run, names, "logit")
        text = (f"step {d['step']}: no sub-layer's output, attention logits or gradient left {dtype}'s range "
                f"on a replay (loss {d['loss']:.4g}); largest output {act[1]:.3g} at {act[0]}, "
                f"largest attention logit {logit[1]:.3g} at {logit[0]}")
    if "fp32" in d:
        f32 = d["fp32"]
        if f32["first"] is None and math.isfinite(f32["loss"]):
            text += (f"; replayed in fp32 the same step stays finite (loss {f32['loss']:.4g}): "
                     f"{dtype}'s range or precision gave out, not the model")
        elif f32["first"] is not None:
            text += f"; in fp32 too ({f32['first']['what']} of {f32['first']['sublayer']})"
    if d["before"]["step"]:
        rows = d["before"]["logit_max"]
        last = rows[-1]
        i = max(range(len(names)), key=lambda j: last[j] if math.isfinite(last[j]) else -1.0)
        if math.isfinite(last[i]):
            text += (f"; over steps {d['before']['step'][0]}–{d['before']['step'][-1]} the largest attention logit "
                     f"went {rows[0][i]:.3g} → {last[i]:.3g} at {names[i]}")
    return text


def build_for_run(config: ModelConfig, task, train_cfg: TrainConfig, init_batch_size: int | None = None):
    """The model a run starts from: ``config`` with initial weights from ``train_cfg.seed``;
    initialisers that look at data (Admin's profiling pass) get ``task.batch(0, …)`` of
    ``init_batch_size`` sequences (default: the training batch size). ``tfx.train(model,
    task, train_cfg)`` on it is then exactly the recorded run."""
    return build_model(config, batch=task.batch(0, init_batch_size or train_cfg.batch_size), seed=train_cfg.seed)


def train(model, task, cfg: TrainConfig | None = None, resume: bool = False, **kw) -> History:
    """Train ``model`` on ``task`` (any object with ``batch(step, batch_size)``,
    ``eval_batches`` and ``chance_loss``, see tfx.runs.data) and return its History.

    Keyword arguments are TrainConfig fields: ``train(model, task, steps=200, lr=1e-3)``.
    ``resume=True`` continues from ``cfg.checkpoint_path`` if it exists; the result is
    the same as an uninterrupted run (data is a function of the step; RNG state is saved).
    A checkpoint that cannot be resumed from raises :class:`CheckpointError`.
    """
    cfg = TrainConfig(**kw) if cfg is None else (cfg.replace(**kw) if kw else cfg)
    device = pick_device(cfg.device)
    model.to(device).train()
    run = _Run(model, task, cfg, device)
    diverge_loss = cfg.diverge_loss or DIVERGE_OVER_CHANCE * math.log(model.cfg.tgt_vocab)
    hist = History(chance_loss=float(task.chance_loss), floor_loss=float(getattr(task, "floor_loss", 0.0)),
                   device=str(device), task=getattr(task, "name", ""),
                   model_config=model.cfg.to_dict(), train_config=json.loads(json.dumps(cfg.to_dict())),
                   amp_dtype=_dtype_name(run.amp))
    torch.manual_seed(cfg.seed)  # dropout; the data depends on the step alone
    start = 0
    if resume and cfg.checkpoint_path and os.path.exists(cfg.checkpoint_path):
        hist, start = load_checkpoint(cfg.checkpoint_path, model, run.opt, run.scaler, device, run)
    eval_batches = task.eval_batches(cfg.batch_size, "valid", cfg.eval_batches)
    bleu = _bleu_probe(model, task, cfg, device, run.amp)
    if cfg.diagnose or (run.guard is not None and run.guard.rule == "rollback"):
        run.snapshot(start)
    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps, initial=start, desc=getattr(task, "name", "train"), leave=False)
    probes = Probes(model) if cfg.probes else None
    if probes is not None:
        hist.attn_names, hist.dyt_names = [name for name, *_ in probes.attention], probes.dyt_names
        hist.stream_names, hist.sublayers = probes.stream_names, hist.sublayers or probes.sublayers
    pending = []  # (step, lr, logged, device record, device probe row or None) not yet read back
    t0 = time.perf_counter() - hist.wall_time
    rollback = run.guard is not None and run.guard.rule == "rollback"
    step = start
    while step < cfg.steps:
        step += 1
        logged = step % cfg.log_every == 0 or step == cfg.steps
        record_update = logged and cfg.record_updates
        probing = probes is not None and logged  # hooks see eager modules: a probed step is not compiled
        with contextlib.ExitStack() as hooks:
            w = hooks.enter_context(Watch(model)) if cfg.watch_every and step % cfg.watch_every == 0 else None
            if probing:
                hooks.enter_context(probes)
            batch, lr, rec = run.step(step, eager=w is not None or probing, record_update=record_update)
        if w is not None:
            _record_watch(hist, step, w)
        hist.tokens += batch.n_tokens  # every token trained on, a rolled-back step's too
        pending.append((step, lr, logged, rec, probes.row() if probing else None))
        if rollback and len(hist.interventions) < MAX_ROLLBACKS and run.snapshots:
            z = run.guard.on_loss(float(rec[0]))  # a host read each step: a rollback decides on every loss
            if z is not None and math.isfinite(z):
                back_to, state = run.snapshots[0]
                run._restore(state)
                run.skipped_batches += step - back_to  # PaLM: go back, and skip the batches since
                hist.interventions.append({"step": step, "what": "rollback", "to": back_to, "z": z,
                                           "loss": float(rec[0])})
                pending = [p for p in pending if p[0] <= back_to]
                _truncate(hist, back_to)
                run.snapshots = run.snapshots[:1]
                step = back_to
                continue
        evaluating = cfg.eval_every and step % cfg.eval_every == 0 and step != cfg.steps
        saving = cfg.checkpoint_every and step % cfg.checkpoint_every == 0
        if bar is not None:
            bar.update(1)
        if not (logged or evaluating or saving):
            continue
        bad = _read_back(hist, pending, diverge_loss, check_grads=not run.scaler.is_enabled(), probes=probes)
        if bad is not None:
            hist.status, hist.diverged_step, hist.reason = "diverged", bad[0], bad[1]
            hist.steps_done = bad[0] - 1
            if cfg.diagnose:
                hist.diagnosis = run.diagnose(bad[0])
            break
        hist.steps_done = step
        if bar is not None:
            bar.set_postfix(loss=f"{hist.loss[-1]:.3f}" if hist.loss else "")
        if (cfg.diagnose or rollback) and step >= run.snapshots[-1][0] + SNAPSHOT_EVERY:
            run.snapshot(step)
        if evaluating:
            _eval(hist, model, eval_batches, bleu, device, run.amp, step)
        if saving:
            hist.wall_time = time.perf_counter() - t0
            save_checkpoint(cfg.checkpoint_path, model, run.opt, run.scaler, hist, step, device, run)
    if bar is not None:
        bar.close()
    hist.steps_clipped = run.guard_clipped + (int(run.clipped) if run.clipped is not None else 0)
    hist.steps_skipped = run.guard_skipped
    hist.interventions = sorted(hist.interventions + run.skips, key=lambda e: e["step"])
    if hist.status != "diverged":
        _eval(hist, model, eval_batches, bleu, device, run.amp, hist.steps_done)
        verdict = judge(hist)
        hist.status, hist.reason = verdict.verdict, verdict.reason
    hist.wall_time = time.perf_counter() - t0
    if cfg.qk_clip is not None or cfg.record_qk_logits:
        record_qk_logits(model, False)  # the model's forward as it was
    return hist


# History's per-step lists, by the list of steps they are aligned with (what a rollback truncates)
_ALIGNED = {"step": ("loss", "acc", "lr", "grad_norm", "update_norm", "log_z", "log_z_absmax", "qk_logit_max"),
            "eval_step": ("eval_loss", "eval_acc", "bleu"),
            "probe_step": ("attn_logit_max", "attn_entropy", "stream_var", "dyt_saturated"),
            "watch_step": ("act_max", "logit_max")}


def _truncate(hist: History, last_step: int) -> None:
    """Drop every per-step entry of ``hist`` after ``last_step`` (a rollback went back there)."""
    for steps, fields in _ALIGNED.items():
        keep = sum(1 for t in getattr(hist, steps) if t <= last_step)
        for name in (steps,) + fields:
            values = getattr(hist, name)
            if len(values) >= keep:
                setattr(hist, name, values[:keep])
    hist.steps_done = min(hist.steps_done, last_step)


def _read_back(hist, pending, diverge_loss, check_grads, probes=None):
    """Read the pending steps' numbers (and probe rows) from the device; record the logged ones.
    Returns (step, reason) for the first step whose loss is not finite, or (after the first
    update) exceeds the larger of ``diverge_loss`` and DIVERGE_OVER_START × the loss at step 1
    (or whose gradient is not finite, unless a gradient scaler skips those). Step 1's loss is
    measured before any update: it is where the run starts, never a divergence."""
    rows = torch.stack([rec for *_, rec, _ in pending]).tolist()
    probed = [(step, row) for step, *_, row in pending if row is not None]
    values = torch.stack([row for _, row in probed]).tolist() if probed else []
    probed = {step: v for (step, _), v in zip(probed, values)}  # step → that step's probe values
    meta = [(step, lr, logged) for step, lr, logged, *_ in pending]
    pending.clear()
    for (step, lr, logged), (loss, acc, grad_norm, upd, log_z, log_z_absmax, *qk) in zip(meta, rows):
        why = None
        if step == 1:
            hist.start_loss = loss
        limit = max(diverge_loss, DIVERGE_OVER_START * hist.start_loss)
        if not math.isfinite(loss):
            why = f"step {step}: loss {loss:.4g} is not finite"
        elif step > 1 and loss > limit:
            why = (f"step {step}: loss {loss:.4g} > {limit:.4g} (the larger of diverge_loss {diverge_loss:.4g} "
                   f"and {DIVERGE_OVER_START:g} × the starting loss {hist.start_loss:.4g})")
        elif check_grads and not math.isfinite(grad_norm):
            why = f"step {step}: gradient norm {grad_norm:.4g} is not finite"
        if why is not None:
            _record(hist, step, loss, acc, lr, grad_norm if math.isfinite(loss) else float("nan"), float("nan"),
                    log_z, log_z_absmax, qk)
            return step, why
        if logged:
            _record(hist, step, loss, acc, lr, grad_norm, upd, log_z, log_z_absmax, qk)
            if step in probed:
                _record_probes(hist, step, probes.unpack(probed[step]))
    return None


def _record(hist, step, loss, acc, lr, grad_norm, update_norm, log_z, log_z_absmax, qk_logit_max=()):
    hist.step.append(step)
    hist.loss.append(loss)
    hist.acc.append(acc)
    hist.lr.append(lr)
    hist.grad_norm.append(grad_norm)
    hist.update_norm.append(update_norm)
    hist.log_z.append(log_z)
    hist.log_z_absmax.append(log_z_absmax)
    hist.qk_logit_max.extend(qk_logit_max)  # () unless qk_clip or record_qk_logits


def _record_probes(hist, step, values: dict):
    hist.probe_step.append(step)
    for name in PROBE_FIELDS:
        getattr(hist, name).append(values[name])


def _record_watch(hist, step, watch):
    table = watch.table()
    hist.sublayers = watch.names
    hist.watch_step.append(step)
    hist.act_max.append(table["output"])
    hist.logit_max.append(table["logit"])


def _bleu_probe(model, task, cfg, device, amp):
    """For a translation task: a function giving greedy BLEU on the first ``cfg.bleu_sentences``
    validation sentences (a fixed subset, so successive values compare); else None."""
    if not cfg.bleu_sentences or model.cfg.kind != "encoder-decoder" or not hasattr(task, "references"):
        return None
    from .corpus import bleu

    n = min(cfg.bleu_sentences, task.size("valid"))
    src = task.eval_batches(n, "valid", 1)[0].src.to(device)
    refs = task.references("valid")[:n]

    def probe() -> float:
        was = model.training
        model.eval()
        with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
            ids = model.greedy(src).cpu()
        model.train(was)
        return bleu([task.decode(row) for row in ids], refs)

    return probe


def _eval(hist, model, batches, bleu, device, amp_dtype, step):
    loss, acc = evaluate(model, batches, device, amp_dtype)
    hist.eval_step.append(step)
    hist.eval_loss.append(loss)
    hist.eval_acc.append(acc)
    if bleu is not None:
        hist.bleu.append(bleu())


# --------------------------------------------------------------------------- checkpoints
CHECKPOINT_KEYS = ("model", "optimizer", "scaler", "history", "rng", "step")


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from: truncated, corrupt, unsafe, or another model's."""


def save_checkpoint(path, model, opt, scaler, hist, step, device, run=None):
    """Everything needed to continue exactly: weights, optimiser, scaler, history, RNG, and
    ``run``'s own state (:meth:`_Run.state_dict`: spike guards, rollbacks) — tensors and plain
    Python values only, so :func:`load_checkpoint` can read it with
    ``torch.load(weights_only=True)``. Written to a temporary file, then renamed (atomic)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"  # this process's own: two writers never rename each other's
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict(),
                "history": hist.to_dict(), "rng": _rng_state(device), "step": step,
                **({} if run is None else {"run": run.state_dict()})}, tmp)
    os.replace(tmp, path)


def load_checkpoint(path, model, opt, scaler, device, run=None) -> tuple[History, int]:
    """Restore ``model``, ``opt``, ``scaler`` (and ``run``'s own state, when the checkpoint
    has it) from ``path``; returns (History, step).

    Loads with ``torch.load(weights_only=True)``: a checkpoint from elsewhere cannot run
    code. Raises :class:`CheckpointError`, naming the file and the problem, when it is
    truncated or corrupt, holds anything but tensors and plain values, is not a tfx
    checkpoint, or was written for another model."""
    def fail(what):
        return CheckpointError(f"checkpoint {path} {what}; nothing was resumed (delete it to start over)")

    def first_line(e):  # some loaders raise with an empty message
        return (str(e).strip().splitlines() or [type(e).__name__])[0]

    if os.path.getsize(path) == 0:
        raise fail("is empty (0 bytes): a write that never finished")
    if not zipfile.is_zipfile(path):  # torch.save writes a zip archive; a cut-off one loses its directory
        raise fail("is truncated or corrupt: not a whole torch.save archive")
    try:
        ck = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as e:
        if "weights only" in str(e).lower() or "weights_only" in str(e):
            raise fail("holds objects other than tensors and plain Python values, which could run code when "
                       f"loaded, so torch.load(weights_only=True) refused it ({first_line(e)})") from e
        raise fail(f"is truncated or corrupt: torch.load could not read it ({first_line(e)})") from e
    except Exception as e:  # noqa: BLE001 - a damaged file fails in many ways (zip, pickle, storage)
        raise fail(f"is truncated or corrupt: torch.load could not read it ({first_line(e)})") from e
    missing = [k for k in CHECKPOINT_KEYS if not isinstance(ck, dict) or k not in ck]
    if missing:
        raise fail(f"is not a tfx training checkpoint (missing {', '.join(missing)})")
    saved = ck["history"].get("model_config", {}) if isinstance(ck["history"], dict) else {}
    here = model.cfg.to_dict()
    diff = [f"{k}={saved.get(k)!r} there, {here.get(k)!r} here" for k in here if saved.get(k) != here.get(k)]
    if diff:
        raise fail("was written for another model: " + "; ".join(diff))
    try:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        scaler.load_state_dict(ck["scaler"])
        hist = History(**ck["history"])
        _set_rng_state(ck["rng"], device)
        if run is not None and "run" in ck:
            run.load_state_dict(ck["run"])
    except (RuntimeError, ValueError, KeyError, TypeError) as e:
        raise fail(f"does not fit this model and optimiser ({first_line(e)})") from e
    return hist, int(ck["step"])
