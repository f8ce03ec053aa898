"""K runs of one architecture trained together as one program: an ensemble.

    models = build_members(config, task, [cfg.replace(seed=s, lr=lr) for s, lr in ...])
    hists = train_ensemble(models, task, [m_cfg for ...])   # one History per member

Each member is the run :func:`tfx.runs.train.train` would make of it, and yields the History
that run would: its own initial weights (built by :func:`tfx.runs.train.build_for_run`, so the
same seed gives the same weights, Admin's profiling pass included), its own batches
(:func:`tfx.nn.optim.step_batch` of its own TrainConfig), learning rate and schedule, its own
optimiser (:func:`tfx.nn.optim.make_optimizer` of its own model: state, groups, weight decay),
its own gradient norm and clipping, outcome, evaluation and divergence. A member that diverges
leaves the ensemble at the step its single run stops: its parameters stop changing, its
History ends as that run's does (with the same diagnosis), and the others go on.

What is shared is the arithmetic of a step: the members' parameters are stacked into (K, …)
tensors and one forward and backward pass computes every member's loss and gradient, with
``torch.func.functional_call`` over the stacked parameters under ``torch.func.vmap``
(https://pytorch.org/docs/stable/func.api.html; the "model ensembling" recipe of
https://pytorch.org/tutorials/intermediate/ensembling.html). The stack is made afresh from the
members' own parameters each step (``torch.stack``, whose backward hands each member its
slice of the gradient), so the leaves the optimisers hold stay each member's ordinary
``nn.Parameter``\\ s: one optimiser step (:func:`tfx.nn.optim.take_step`, the one step in tfx)
over :class:`tfx.nn.optim.Members` steps every member's own optimiser, with the learning rate,
‖g‖ and its clipping per member. Attention runs on SDPA's math kernel inside ``vmap``: the
CPU's fused kernel has no batching rule and would be run once per member.

How exact: a member's step is its single run's step up to rounding (batched matrix products
sum in another order). In float64, after 12 steps of Post-LN, Pre-LN, Admin and a decoder-only
LM (tests/runs/test_ensemble.py), the parameters agree to ≤ 6e-12 × max |θ|, all of it in the
key biases (their gradient is zero but for rounding); elsewhere to ~1e-16. The History's
numbers are float32, as the trainer records them: lr, grad_norm, update_norm, acc and the
held-out loss equal to the bit there, loss and log Z to within 1–2 float32 roundings (≤ 2.5e-7
relative; the cross-entropy is computed in float32 and summed in another order). With dropout > 0 the members draw their masks in
one batched call (``vmap(randomness="different")``: every member its own masks, from the
global generator seeded with member 0's seed), so a member's masks are not its single run's:
the ensemble is then the same *kind* of run, not the same run. tfx.sweep groups only runs
without dropout (:func:`compatible`).

Not supported (each refused by name): ``compile``, ``probes``, ``watch_every``,
``max_tokens`` (members need batches of one shape), checkpoints, fp16 (a gradient scaler).
"""
from __future__ import annotations

import json
import math
import time

import torch
from torch.func import functional_call, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..nn.batch import PAD
from ..nn.config import ModelConfig, TrainConfig
from ..nn.optim import Members, lr_at, pick_device, take_step
from .outcome import judge
from .train import (DIVERGE_OVER_CHANCE, SNAPSHOT_EVERY, History, _bleu_probe, _dtype_name, _eval, _read_back, _rng_state, _Run,
                    _set_rng_state, build_for_run)

# Members may differ in these ModelConfig fields only: they choose the initial weights, not
# the function the weights compute, so one template module computes every member.
INIT_ONLY_MODEL_FIELDS = ("init", "admin_profiling")
# ... and in these TrainConfig fields only: each member has its own optimiser, schedule and data.
MEMBER_TRAIN_FIELDS = ("seed", "data_seed", "lr", "warmup", "schedule", "weight_decay")
# TrainConfig settings an ensemble cannot honour: field → (is it allowed?, what is allowed).
UNSUPPORTED = {
    "compile": (lambda v: not v, "False"),
    "probes": (lambda v: not v, "False"),
    "watch_every": (lambda v: not v, "0"),
    "max_tokens": (lambda v: v is None, "None (members need batches of one shape: use batch_size)"),
    "checkpoint_every": (lambda v: not v, "0"),
    "checkpoint_path": (lambda v: v is None, "None"),
    "amp_dtype": (lambda v: v != "fp16", "'bf16', 'fp32' or None (fp16 needs a gradient scaler)"),
    "spike_guard": (lambda v: v == "none", "'none' (a guard reads each member's norm on the host: train alone)"),
    "inject": (lambda v: v == "none", "'none' (injections change one run's step: train it alone)"),
    "qk_clip": (lambda v: v is None, "None (QK-clip rescales a run's own attention: train it alone)"),
    "record_qk_logits": (lambda v: not v, "False"),
}
DROPOUT_FIELDS = ("dropout", "attn_dropout", "act_dropout")
# SDPA's kernels inside vmap: the math one is batched; the CPU's fused one has no batching rule
# (vmap would call it once per member)
ATTENTION_KERNELS = [SDPBackend.MATH]


class EnsembleError(ValueError):
    """Runs that cannot be trained as one ensemble; the message names the field."""


def incompatibility(model_configs, train_configs) -> str | None:
    """Why these runs (member k: ``model_configs[k]``, ``train_configs[k]``) cannot be one
    ensemble, naming the first field that stops them; None when they can."""
    if not model_configs or len(model_configs) != len(train_configs):
        return (f"an ensemble needs one ModelConfig and one TrainConfig per member, got {len(model_configs)} "
                f"and {len(train_configs)}")
    first_m, first_t = model_configs[0].to_dict(), train_configs[0].to_dict()
    for k, (m, t) in enumerate(zip(model_configs, train_configs)):
        for what, mine, first, free in (("ModelConfig", m.to_dict(), first_m, INIT_ONLY_MODEL_FIELDS),
                                        ("TrainConfig", t.to_dict(), first_t, MEMBER_TRAIN_FIELDS)):
            for name in first:
                if name not in free and mine.get(name) != first[name]:
                    return (f"member {k}'s {what}.{name} = {mine.get(name)!r} differs from member 0's "
                            f"{first[name]!r}; members may differ only in {what} fields {', '.join(free)}")
    for name, (ok, allowed) in UNSUPPORTED.items():
        if not ok(first_t[name]):
            return f"TrainConfig.{name} = {first_t[name]!r} is not supported in an ensemble; allowed: {allowed}"
    return None


def check_members(model_configs, train_configs) -> None:
    """Raise :class:`EnsembleError` (naming the field) unless the runs can be one ensemble."""
    why = incompatibility(model_configs, train_configs)
    if why is not None:
        raise EnsembleError(why)


def compatible(model_configs, train_configs) -> bool:
    """Whether tfx.sweep may train these runs as one ensemble: they can be one
    (:func:`incompatibility`), and with no dropout, so each member is exactly its single run."""
    return (incompatibility(model_configs, train_configs) is None
            and all(getattr(m, f) == 0 for m in model_configs for f in DROPOUT_FIELDS))


def build_members(model_configs, task, train_configs, init_batch_size: int | None = None) -> list:
    """Each member's model as its single run builds it (:func:`tfx.runs.train.build_for_run`);
    ``model_configs`` one ModelConfig for all, or one per member."""
    if isinstance(model_configs, ModelConfig):
        model_configs = [model_configs] * len(train_configs)
    check_members(model_configs, train_configs)
    return [build_for_run(m, task, t, init_batch_size) for m, t in zip(model_configs, train_configs)]


class _LossOf(torch.nn.Module):
    """``model.loss_and_accuracy`` as a module's forward, for ``functional_call``."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, src, tgt, label_smoothing, src_padded, tgt_padded):
        return self.model.loss_and_accuracy(src, tgt, label_smoothing, src_padded, tgt_padded)


def _pad_to(t: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(t, (0, width - t.shape[1]), value=PAD)


def stack_batches(batches):
    """The members' batches as (K, B, L) tensors, right-padded with PAD to the longest (a
    padded position carries no loss and no key: the same losses and gradients), and whether
    any is padded (None where a batch does not know)."""
    def flag(values, widened):
        return None if None in values else any(values) or widened

    tgt_width = max(b.tgt.shape[1] for b in batches)
    tgt = torch.stack([_pad_to(b.tgt, tgt_width) for b in batches])
    tgt_padded = flag([b.tgt_padded for b in batches], any(b.tgt.shape[1] < tgt_width for b in batches))
    if batches[0].src is None:
        return None, tgt, None, tgt_padded
    src_width = max(b.src.shape[1] for b in batches)
    src = torch.stack([_pad_to(b.src, src_width) for b in batches])
    src_padded = flag([b.src_padded for b in batches], any(b.src.shape[1] < src_width for b in batches))
    return src, tgt, src_padded, tgt_padded


class _Ensemble:
    """The members' runs (:class:`tfx.runs.train._Run`: optimiser, update norm, snapshots,
    replay) and the one batched step over the members still training."""

    def __init__(self, models, task, cfgs, device):
        self.runs = [_Run(m, task, c, device) for m, c in zip(models, cfgs)]
        self.cfg, self.device, self.amp = cfgs[0], device, self.runs[0].amp
        self.template = _LossOf(models[0])  # its structure only: functional_call swaps in each member's tensors
        self.params = [dict(_LossOf(m).named_parameters()) for m in models]
        self.buffers = [dict(_LossOf(m).named_buffers()) for m in models]
        dropout = any(getattr(models[0].cfg, f) > 0 for f in DROPOUT_FIELDS)
        self.randomness = "different" if dropout else "error"  # no dropout: vmap proves nothing draws

    def _losses(self, active, batches):
        """Per member (K,) loss, accuracy, mean log Z, mean (log Z)², max |log Z| (as ``loss_and_accuracy``)."""
        params = {n: torch.stack([self.params[k][n] for k in active]) for n in self.params[0]}
        buffers = {n: torch.stack([self.buffers[k][n] for k in active]) for n in self.buffers[0]}
        src, tgt, src_padded, tgt_padded = stack_batches(batches)
        smoothing = self.cfg.label_smoothing

        def member(p, b, src, tgt):
            return functional_call(self.template, (p, b), (src, tgt, smoothing, src_padded, tgt_padded))

        amp = self.amp
        with sdpa_kernel(ATTENTION_KERNELS), torch.autocast(self.device.type, dtype=amp, enabled=amp is not None):
            return vmap(member, in_dims=(0, 0, None if src is None else 0, 0),
                        randomness=self.randomness)(params, buffers, src, tgt)

    def step(self, step, active, record_update=False):
        """One optimiser step of every member in ``active`` (indices). Returns (batches, lrs,
        (K, 6) records): per member what :meth:`tfx.runs.train._Run.step` returns."""
        runs = [self.runs[k] for k in active]
        lrs = [lr_at(step, r.cfg) for r in runs]
        batches = [r.batch(step) for r in runs]
        loss, acc, log_z, log_z_sq, log_z_absmax = self._losses(active, batches)
        objective = loss + self.cfg.z_loss * log_z_sq if self.cfg.z_loss else loss
        # Σ_k objective_k: member k's parameters see the gradient of its own objective alone

        def before_update():
            for r in runs:
                r.updates.before()

        grad_norm = take_step(Members([r.opt for r in runs]), objective.sum(), lr=lrs, clip=self.cfg.clip,
                              grad_norm=True, before_update=before_update if record_update else None).float()
        upd = torch.full_like(grad_norm, float("nan"))
        if record_update:
            upd = torch.stack([r.updates.after().float().to(grad_norm.device) for r in runs])
        rows = torch.stack([loss.detach().float(), acc.float(), grad_norm, upd, log_z.float(),
                            log_z_absmax.float()], dim=1)
        return batches, lrs, rows


def train_ensemble(models, task, cfgs) -> list[History]:
    """Train ``models`` (member k: ``models[k]`` with ``cfgs[k]``, e.g. from
    :func:`build_members`) on ``task`` as one program; returns each member's History, the one
    ``tfx.train(models[k], task, cfgs[k])`` would return (see the module docstring for how
    exactly). ``wall_time`` is the ensemble's time shared equally among its members."""
    cfgs = list(cfgs)
    check_members([m.cfg for m in models], cfgs)
    cfg = cfgs[0]
    device = pick_device(cfg.device)
    for m in models:
        m.to(device).train()
    ens = _Ensemble(models, task, cfgs, device)
    hists = [History(chance_loss=float(task.chance_loss), floor_loss=float(getattr(task, "floor_loss", 0.0)),
                     device=str(device), task=getattr(task, "name", ""), model_config=m.cfg.to_dict(),
                     train_config=json.loads(json.dumps(c.to_dict())), amp_dtype=_dtype_name(ens.amp))
             for m, c in zip(models, cfgs)]
    limits = [c.diverge_loss or DIVERGE_OVER_CHANCE * math.log(m.cfg.tgt_vocab) for m, c in zip(models, cfgs)]
    torch.manual_seed(cfg.seed)  # dropout (one batched draw for all members); the data depends on the step alone
    eval_batches = task.eval_batches(cfg.batch_size, "valid", cfg.eval_batches)
    bleus = [_bleu_probe(m, task, c, device, ens.amp) for m, c in zip(models, cfgs)]
    if cfg.diagnose:
        for r in ens.runs:
            r.snapshot(0)
    active, pending = list(range(len(models))), [[] for _ in models]
    t0 = time.perf_counter()
    for step in range(1, cfg.steps + 1):
        if not active:
            break
        logged = step % cfg.log_every == 0 or step == cfg.steps
        batches, lrs, rows = ens.step(step, active, record_update=logged and cfg.record_updates)
        for j, k in enumerate(active):
            hists[k].tokens += batches[j].n_tokens
            pending[k].append((step, lrs[j], logged, rows[j], None))
        evaluating = cfg.eval_every and step % cfg.eval_every == 0 and step != cfg.steps
        if not (logged or evaluating):
            continue
        for k in list(active):
            hist, run = hists[k], ens.runs[k]
            bad = _read_back(hist, pending[k], limits[k], check_grads=True)
            if bad is not None:  # the member stops here, as its single run does; the others go on
                hist.status, hist.diverged_step, hist.reason = "diverged", bad[0], bad[1]
                hist.steps_done = bad[0] - 1
                active.remove(k)
                if cfg.diagnose:
                    rng = _rng_state(device)  # the replay draws; the others' dropout stream goes on unchanged
                    hist.diagnosis = run.diagnose(bad[0])
                    _set_rng_state(rng, device)
                continue
            hist.steps_done = step
            if cfg.diagnose and step >= run.snapshots[-1][0] + SNAPSHOT_EVERY:
                run.snapshot(step)
            if evaluating:
                _eval(hist, models[k], eval_batches, bleus[k], device, ens.amp, step)
    for k, hist in enumerate(hists):
        if hist.status != "diverged":
            _eval(hist, models[k], eval_batches, bleus[k], device, ens.amp, hist.steps_done)
            verdict = judge(hist)
            hist.status, hist.reason = verdict.verdict, verdict.reason
    wall = time.perf_counter() - t0
    for hist in hists:
        hist.wall_time = wall / len(hists)
    return hists
