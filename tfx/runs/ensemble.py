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
‖g‖ and its clipping per member. Attention inside ``vmap`` runs, on a CPU, on SDPA's math kernel
(the CPU's fused kernel has no batching rule and would be run once per member); on CUDA, written
out (:data:`FUSED_ATTENTION`), where each of SDPA's kernels failed under ``vmap``.

How exact: a member's step is its single run's step up to rounding (batched matrix products
sum in another order). In float64, after 12 steps of Post-LN, Pre-LN, Admin and a decoder-only
LM (tests/runs/test_ensemble.py), the parameters agree to ≤ 6e-12 × max |θ|, all of it in the
key biases (their gradient is zero but for rounding); elsewhere to ~1e-16. The History's
numbers are float32, as the trainer records them: lr, grad_norm, update_norm, acc and the
held-out loss equal to the bit there, loss and log Z to within 1–2 float32 roundings (≤ 2.5e-7
relative; the cross-entropy is computed in float32 and summed in another order). Over a whole
float32 run that rounding grows as any does: of 80 book runs of warmup-fixes-rates (400 steps)
trained both ways on one CPU, 8 ended with another outcome, all at the edge (README). Ensembled
records are the same kind of run as single ones, not the same records.

Dropout (``dropout``, ``act_dropout``): each member draws its masks from a generator of its own,
seeded with its seed as its single run seeds the global one, in the same order and shapes: the
template's ``nn.Dropout`` modules are :class:`MemberDropout`, whose mask is one custom operator
(``tfx::member_keep_mask``) with a batching rule that draws member k's mask from member k's
generator. On a CPU this is the draw ``F.dropout`` makes (``bernoulli_(1 − p)``, ``÷ (1 − p)``),
so a member's masks are its single run's and the member is its single run, as without dropout
(tests/runs/test_ensemble.py). On CUDA ``F.dropout`` is a fused kernel that draws its own way:
a member there has its own stream, not its single run's masks (the same kind of run). SDPA's
attention dropout (``attn_dropout``) draws inside the kernel, out of a member's reach: refused.

Probes (``probes=True``): on a logged step, before the batched step, each member's own model
runs the step's forward pass with the probes attached (no gradient; its own dropout masks, drawn
from a copy of its generator's state), and the member records what its single run's probed step
records (:mod:`tfx.runs.probes`): one extra forward pass per member on a logged step.

Not supported (each refused by name): ``compile``, ``attn_dropout``, ``watch_every``,
``max_tokens`` (members need batches of one shape), checkpoints, fp16 (a gradient scaler).
"""
from __future__ import annotations

import copy
import json
import math
import time

import torch
from torch.func import functional_call, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..nn.batch import PAD
from ..nn.blocks import Attention
from ..nn.config import ModelConfig, TrainConfig
from ..nn.optim import Members, lr_at, pick_device, take_step
from .outcome import judge
from .probes import Probes
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
# ModelConfig settings an ensemble cannot honour, as UNSUPPORTED
UNSUPPORTED_MODEL = {
    "attn_dropout": (lambda v: not v, "0 (SDPA draws attention masks inside its kernel, where a member's own "
                                      "generator cannot reach: train it alone)"),
}
DROPOUT_FIELDS = ("dropout", "act_dropout")
# Attention inside vmap, per kind of device: True, SDPA's math kernel, which is batched (the CPU's
# fused kernel has no batching rule: vmap would call it once per member); False, the softmax written
# out (blocks.Attention.fused), batched matmuls only. On an H200 under vmap in bf16 autocast, SDPA's
# math kernel failed in its softmax backward ("expected input and grad types to match",
# 2026-11-30 01:47 UTC) and the memory-efficient one on its log-sum-exp's layout ("LSE is not
# correctly aligned (strideH)", 2026-11-30 18:41 UTC, results/gpu-bursts/2026-11-30T1841Z.log).
FUSED_ATTENTION = {"cpu": True}


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
    for what, first, rules in (("ModelConfig", first_m, UNSUPPORTED_MODEL), ("TrainConfig", first_t, UNSUPPORTED)):
        for name, (ok, allowed) in rules.items():
            if not ok(first[name]):
                return f"{what}.{name} = {first[name]!r} is not supported in an ensemble; allowed: {allowed}"
    return None


def check_members(model_configs, train_configs) -> None:
    """Raise :class:`EnsembleError` (naming the field) unless the runs can be one ensemble."""
    why = incompatibility(model_configs, train_configs)
    if why is not None:
        raise EnsembleError(why)


def compatible(model_configs, train_configs) -> bool:
    """Whether tfx.sweep may train these runs as one ensemble (:func:`incompatibility`)."""
    return incompatibility(model_configs, train_configs) is None


def build_members(model_configs, task, train_configs, init_batch_size: int | None = None) -> list:
    """Each member's model as its single run builds it (:func:`tfx.runs.train.build_for_run`);
    ``model_configs`` one ModelConfig for all, or one per member."""
    if isinstance(model_configs, ModelConfig):
        model_configs = [model_configs] * len(train_configs)
    check_members(model_configs, train_configs)
    return [build_for_run(m, task, t, init_batch_size) for m, t in zip(model_configs, train_configs)]


# The batched forward now running (set by _Ensemble._losses for the length of the call): the
# members' generators, in the order of its batch dimension, and per stack ("src", "tgt") the
# width the members' batches were padded to and each member's own width.
_DRAWING: dict = {}
STACKS = ("src", "tgt")


@torch.library.custom_op("tfx::member_keep_mask", mutates_args=())
def member_keep_mask(x: torch.Tensor, p: float, stack: int) -> torch.Tensor:
    """Dropout's scaled keep-mask for ``x`` (B, L, …) in stack ``STACKS[stack]``, one per member:
    runs only under the ensemble's vmap."""
    raise EnsembleError("tfx::member_keep_mask draws one mask per member: it runs inside an ensemble's vmap only")


@member_keep_mask.register_fake
def _(x, p, stack):
    return torch.empty_like(x)


def _member_keep_mask_batched(info, in_dims, x, p, stack):
    """Member k's mask from member k's generator, as its single run's ``F.dropout`` draws it on
    a CPU: ``empty(B, L_k, …).bernoulli_(1 − p) ÷ (1 − p)`` over the member's own length L_k (its
    batch unpadded: the same number of draws), then 1/(1 − p) on the padding (no real position
    reads a padded one)."""
    xs = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x.expand(info.batch_size, *x.shape)
    generators, (padded, widths) = _DRAWING["generators"], _DRAWING["widths"][STACKS[stack]]
    if len(generators) != info.batch_size:
        raise EnsembleError(f"{info.batch_size} members in the batched forward but {len(generators)} generators")
    masks = torch.full_like(xs, 1 / (1 - p))
    for k, g in enumerate(generators):
        length = xs.shape[2] - (padded - widths[k])
        masks[k, :, :length] = torch.empty_like(xs[k, :, :length]).bernoulli_(1 - p, generator=g).div_(1 - p)
    return masks, 0


torch.library.register_vmap("tfx::member_keep_mask", _member_keep_mask_batched)


class MemberDropout(torch.nn.Module):
    """``nn.Dropout(p)`` in the ensemble's template, in stack ``STACKS[stack]``: x · mask, the
    mask member k's own draw (:func:`member_keep_mask`)."""

    def __init__(self, p: float, stack: int):
        super().__init__()
        self.p, self.stack = p, stack

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        return x * member_keep_mask(x.detach(), self.p, self.stack)


def _member_template(model, device_type: str = "cpu"):
    """A copy of ``model`` whose ``nn.Dropout`` modules are :class:`MemberDropout` of their stack
    (the encoder's and its embedding's: "src"; the decoder's: "tgt"), and whose attention is
    fused or written out as :data:`FUSED_ATTENTION` says for ``device_type``. No parameter
    changes place: ``functional_call`` fills the copy with the members' tensors."""
    template = copy.deepcopy(model)
    for module in template.modules():
        if isinstance(module, Attention):
            module.fused = FUSED_ATTENTION.get(device_type, False)
    for name, module in list(template.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Dropout):
                top = f"{name}.{child_name}".lstrip(".").split(".")[0]
                setattr(module, child_name, MemberDropout(child.p, 0 if top in ("src_embed", "encoder") else 1))
    return template


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
        # its structure only: functional_call swaps in each member's tensors
        self.template = _LossOf(_member_template(models[0], device.type))
        self.params = [dict(_LossOf(m).named_parameters()) for m in models]
        self.buffers = [dict(_LossOf(m).named_buffers()) for m in models]
        self.dropout = any(getattr(models[0].cfg, f) > 0 for f in DROPOUT_FIELDS)
        # each member's dropout stream, seeded as its single run seeds the global generator
        self.generators = [torch.Generator(device).manual_seed(c.seed) for c in cfgs]
        # no dropout: vmap proves nothing draws; with it, the draws are member_keep_mask's own
        self.randomness = "same" if self.dropout else "error"
        self.probes = [Probes(m) for m in models] if self.cfg.probes else None

    def _losses(self, active, batches):
        """Per member (K,) loss, accuracy, mean log Z, mean (log Z)², max |log Z| (as ``loss_and_accuracy``)."""
        params = {n: torch.stack([self.params[k][n] for k in active]) for n in self.params[0]}
        buffers = {n: torch.stack([self.buffers[k][n] for k in active]) for n in self.buffers[0]}
        src, tgt, src_padded, tgt_padded = stack_batches(batches)
        smoothing = self.cfg.label_smoothing

        def member(p, b, src, tgt):
            return functional_call(self.template, (p, b), (src, tgt, smoothing, src_padded, tgt_padded))

        amp = self.amp
        _DRAWING.update(generators=[self.generators[k] for k in active], widths={
            "src": None if src is None else (src.shape[-1], [b.src.shape[1] for b in batches]),
            "tgt": (tgt.shape[-1], [b.tgt.shape[1] for b in batches])})
        try:
            with sdpa_kernel([SDPBackend.MATH]), torch.autocast(self.device.type, dtype=amp, enabled=amp is not None):
                return vmap(member, in_dims=(0, 0, None if src is None else 0, 0),
                            randomness=self.randomness)(params, buffers, src, tgt)
        finally:
            _DRAWING.clear()

    def as_member(self, k):
        """A context in which the global generator of this device is member ``k``'s dropout
        stream (a copy of it): its model, run alone, draws the masks the batched step draws."""
        return _Drawing(self.generators[k], self.device)

    def probe(self, active, batches):
        """Each member's probe row (:class:`tfx.runs.probes.Probes`) of this step's forward pass,
        run before the step on the member's own model, with the masks the step will draw."""
        rows = []
        for k, batch in zip(active, batches):
            run = self.runs[k]
            with torch.no_grad(), self.as_member(k), self.probes[k]:
                run.forward(batch, run.model.loss_and_accuracy, self.amp)
            rows.append(self.probes[k].row())
        return rows

    def step(self, step, active, record_update=False, probing=False):
        """One optimiser step of every member in ``active`` (indices). Returns (batches, lrs,
        (K, 6) records, probe rows): per member what :meth:`tfx.runs.train._Run.step` returns,
        and with ``probing`` its probe row (:meth:`probe`; else None)."""
        runs = [self.runs[k] for k in active]
        lrs = [lr_at(step, r.cfg) for r in runs]
        batches = [r.batch(step) for r in runs]
        probed = self.probe(active, batches) if probing else [None] * len(runs)
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
        return batches, lrs, rows, probed


class _Drawing:
    """The global generator of ``device`` set to a copy of ``generator``'s state, and put back on exit."""

    def __init__(self, generator, device):
        self.generator, self.device = generator, device

    def __enter__(self):
        self.saved = _rng_state(self.device)
        if self.device.type == "cuda":
            torch.cuda.set_rng_state(self.generator.get_state(), self.device)
        else:
            torch.set_rng_state(self.generator.get_state())
        return self

    def __exit__(self, *exc):
        _set_rng_state(self.saved, self.device)


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
    # the data depends on the step alone; dropout draws from each member's generator (_Ensemble)
    eval_batches = task.eval_batches(cfg.batch_size, "valid", cfg.eval_batches)
    bleus = [_bleu_probe(m, task, c, device, ens.amp) for m, c in zip(models, cfgs)]
    if ens.probes is not None:
        for hist, probes in zip(hists, ens.probes):
            hist.attn_names, hist.dyt_names = [name for name, *_ in probes.attention], probes.dyt_names
            hist.stream_names, hist.sublayers = probes.stream_names, hist.sublayers or probes.sublayers
    if cfg.diagnose:
        for k, r in enumerate(ens.runs):
            with ens.as_member(k):  # a snapshot holds the generator's state: the member's stream
                r.snapshot(0)
    active, pending = list(range(len(models))), [[] for _ in models]
    t0 = time.perf_counter()
    for step in range(1, cfg.steps + 1):
        if not active:
            break
        logged = step % cfg.log_every == 0 or step == cfg.steps
        batches, lrs, rows, probed = ens.step(step, active, record_update=logged and cfg.record_updates,
                                              probing=logged and ens.probes is not None)
        for j, k in enumerate(active):
            hists[k].tokens += batches[j].n_tokens
            pending[k].append((step, lrs[j], logged, rows[j], probed[j]))
        evaluating = cfg.eval_every and step % cfg.eval_every == 0 and step != cfg.steps
        if not (logged or evaluating):
            continue
        for k in list(active):
            hist, run = hists[k], ens.runs[k]
            bad = _read_back(hist, pending[k], limits[k], check_grads=True,
                             probes=None if ens.probes is None else ens.probes[k])
            if bad is not None:  # the member stops here, as its single run does; the others go on
                hist.status, hist.diverged_step, hist.reason = "diverged", bad[0], bad[1]
                hist.steps_done = bad[0] - 1
                active.remove(k)
                if cfg.diagnose:  # the replay draws from the member's stream, as its single run's does
                    with ens.as_member(k):
                        hist.diagnosis = run.diagnose(bad[0])
                continue
            hist.steps_done = step
            if cfg.diagnose and step >= run.snapshots[-1][0] + SNAPSHOT_EVERY:
                with ens.as_member(k):
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
