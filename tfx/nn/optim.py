"""How one step is taken: the optimisers the papers compare, the learning-rate schedule,
the data each step reads, and the step itself.

Built from a :class:`tfx.nn.config.TrainConfig`. :func:`take_step` is the one optimiser
step in tfx: the trainer (:mod:`tfx.runs.train`) takes it every step, the theory
(:mod:`tfx.theory.adam`, :mod:`tfx.theory.gradients`, :mod:`tfx.theory.change`) a few times
to measure the first updates (WU-3, GV-3, AM-1), the book's toy and the bench once a step.
"""
from __future__ import annotations

import math
from collections import deque

import torch

from .blocks import Attention
from .config import SEED_STRIDE, TrainConfig
from .mup import kind_groups, param_groups


# Batches of one data seed: task.batch(data_seed · DATA_STREAM + step − 1), DATA_STREAM the prime
# config.SEED_STRIDE (why a prime: there). Runs are far shorter than a million steps, so streams
# never meet.
DATA_STREAM = SEED_STRIDE


def data_step(step: int, cfg: TrainConfig) -> int:
    """The task's batch index for optimiser step ``step`` = 1, 2, …: the stream of the run's
    data seed (``cfg.data_seed``, default ``cfg.seed``), so seeds differ in data order as well
    as in weights, and a resumed run reads the same batches as an uninterrupted one."""
    if not 1 <= step <= DATA_STREAM:
        raise ValueError(f"step={step} must be in [1, {DATA_STREAM}] (one data seed's stream)")
    data_seed = cfg.seed if cfg.data_seed is None else cfg.data_seed
    return data_seed * DATA_STREAM + step - 1


def step_batch(task, step: int, cfg: TrainConfig):
    """The batch optimiser step ``step`` = 1, 2, … reads: ``task.batch(data_step(step, cfg), …)``
    of ``cfg.batch_size`` sequences, or of about ``cfg.max_tokens`` tokens when that is set."""
    if cfg.max_tokens:
        return task.batch(data_step(step, cfg), max_tokens=cfg.max_tokens)
    return task.batch(data_step(step, cfg), cfg.batch_size)


def pick_device(device: str | None = None) -> torch.device:
    """``device`` if given, else CUDA when present, else CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimiser step ``step`` = 1, 2, … (the schedules: TrainConfig's docstring)."""
    w = cfg.warmup
    if cfg.schedule == "inverse-sqrt":
        return cfg.lr * (min(step / w, math.sqrt(w / step)) if w else 1.0)
    if step < w:  # lr·(t/w) as t/w, then lr: the float arithmetic of the records made before these schedules
        return cfg.lr * (step / w)
    if cfg.schedule == "linear-decay":
        return cfg.lr * max(0.0, (cfg.steps - step) / max(1, cfg.steps - w))
    if cfg.schedule == "cosine":  # from lr at the end of warmup to final_lr_fraction · lr at the last step
        u = min(1.0, (step - w) / max(1, cfg.steps - w))
        f = cfg.final_lr_fraction
        return cfg.lr * (f + (1 - f) * 0.5 * (1 + math.cos(math.pi * u)))
    if cfg.schedule in ("wsd-linear", "wsd-sqrt"):  # stable, then the cooldown over the last steps to 0
        cooldown = max(1, round(cfg.cooldown_fraction * cfg.steps))
        v = min(1.0, max(0.0, (step - (cfg.steps - cooldown)) / cooldown))
        return cfg.lr * (1 - v if cfg.schedule == "wsd-linear" else 1 - math.sqrt(v))
    return cfg.lr


class AdamAtan2(torch.optim.Optimizer):
    """Adam-atan2 (Everett et al. 2024, "Scaling exponents across parameterizations and
    optimizers", arXiv 2407.05872, everett2024scaling): Adam without ε.

        m_t = β₁ m_{t−1} + (1 − β₁) g_t,    v_t = β₂ v_{t−1} + (1 − β₂) g_t²
        m̂_t = m_t / (1 − β₁ᵗ),              v̂_t = v_t / (1 − β₂ᵗ)
        θ_t = θ_{t−1}·(1 − lr·λ) − lr · a · atan2(m̂_t, b·√v̂_t)

    atan2(y, x) = arctan(y/x) for x > 0, so where |m̂| ≪ √v̂ the step is Adam's lr·m̂/√v̂
    with ε = 0; it is bounded by lr·a·π/2 and, unlike m̂/(√v̂ + ε), does not change when every
    gradient is multiplied by a constant, however small: there is no ε to tune, which is the
    point. ``a`` = ``b`` = 1 by default. λ = ``weight_decay``, decoupled as AdamW's
    (loshchilov2019adamw)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), weight_decay: float = 0.0,
                 a: float = 1.0, b: float = 1.0):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay, a=a, b=b))

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter with a gradient (the formula in the class docstring)."""
        for group in self.param_groups:
            (b1, b2), lr, wd = group["betas"], group["lr"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"], state["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(p.grad, 1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                if wd:
                    p.mul_(1 - lr * wd)
                m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
                p.add_(torch.atan2(m_hat, group["b"] * v_hat.sqrt()), alpha=-lr * group["a"])


# Jordan's quintic Newton–Schulz coefficients (jordan2024muon): chosen to push every singular value
# of the normalised matrix towards 1 in five steps, trading exactness (they land in about
# [0.7, 1.2], not at 1) for speed.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def newton_schulz(G: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """An approximate U·Vᵀ of G = U·Σ·Vᵀ (the nearest semi-orthogonal matrix) by the quintic
    Newton–Schulz iteration of Jordan 2024 (jordan2024muon), in float32:

        X₀ = G / (‖G‖_F + ε),    X ← a·X + (b·A + c·A²)·X,  A = X·Xᵀ,  (a, b, c) = NS_COEFFICIENTS

    Each step maps every singular value σ of X to a·σ + b·σ³ + c·σ⁵ (U and V stay), so ``steps``
    steps send σ ∈ (0, 1] (the Frobenius normalisation puts them there) near 1, not exactly:
    roughly into [0.7, 1.2]. Computed on the wide orientation (rows ≤ cols), so A is the smaller
    Gram matrix; the result has G's shape."""
    a, b, c = NS_COEFFICIENTS
    X = G.float()
    tall = X.size(-2) > X.size(-1)
    if tall:
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        A = X @ X.mT
        X = a * X + (b * A + c * A @ A) @ X
    return (X.mT if tall else X).to(G.dtype)


class Muon(torch.optim.Optimizer):
    """Muon (Jordan 2024, jordan2024muon), with the weight decay and AdamW-matched update size
    of Liu et al. 2025 ("Muon is scalable for LLM training", arXiv 2502.16982, liu2025muon),
    for 2-D matrices only (the hidden matrices: ``TrainConfig.optimizer_by_kind={"hidden": "muon"}``;
    embeddings, readout and vectors get another optimiser). For each m×n matrix θ:

        b_t = β·b_{t−1} + (1 − β)·g_t                  momentum (β = ``momentum``)
        u_t = (1 − β)·g_t + β·b_t                      Nesterov (``nesterov=False``: u_t = b_t)
        O_t = newton_schulz(u_t) ≈ U·Vᵀ of u_t         every singular value ≈ 1
        θ_t = θ_{t−1}·(1 − lr·λ) − lr · 0.2·√max(m, n) · O_t

    An m×n matrix with singular values 1 has RMS √(min(m, n)/(m·n)) = 1/√max(m, n); the factor
    0.2·√max(m, n) makes the update's RMS about 0.2, AdamW's typical update RMS (liu2025muon), so
    AdamW's learning rate and weight decay λ (decoupled, as AdamW's: loshchilov2019adamw) carry
    over. Newton–Schulz runs in float32 (Jordan's runs it in bfloat16 on the GPU)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.95, weight_decay: float = 0.0,
                 nesterov: bool = True, ns_steps: int = 5):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov,
                                      ns_steps=ns_steps))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon orthogonalises 2-D matrices; got a parameter of shape {tuple(p.shape)} "
                                     "(give vectors and embeddings another optimiser: TrainConfig.optimizer_by_kind)")

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter with a gradient (the formula in the class docstring)."""
        for group in self.param_groups:
            beta, lr, wd = group["momentum"], group["lr"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"]
                buf.lerp_(p.grad, 1 - beta)
                u = p.grad.lerp(buf, beta) if group["nesterov"] else buf
                o = newton_schulz(u, group["ns_steps"])
                if wd:
                    p.mul_(1 - lr * wd)
                p.add_(o, alpha=-lr * 0.2 * max(p.shape) ** 0.5)


def record_qk_logits(model, on: bool = True) -> None:
    """Every attention module of ``model`` keeps (``on``) or stops keeping each head's largest
    |logit| of its last forward (``Attention.logit_max``), what :func:`qk_clip_` reads."""
    for m in model.modules():
        if isinstance(m, Attention):
            m.record_logit_max, m.logit_max = on, None


def qk_logit_max(model) -> torch.Tensor | None:
    """The largest |attention logit| of the last forward, over every attention module and head
    that recorded one (:func:`record_qk_logits`): a 0-dim device tensor (no read back), or None."""
    maxes = [m.logit_max.max() for m in model.modules() if isinstance(m, Attention) and m.logit_max is not None]
    return torch.stack(maxes).max() if maxes else None


@torch.no_grad()
def qk_clip_(model, tau: float) -> torch.Tensor | None:
    """QK-clip (Kimi K2, kimi2025k2), after an optimiser step: for each attention head h whose
    largest |logit| S_max,h in the last forward (``Attention.logit_max``, recorded by
    :func:`record_qk_logits`: S = QKᵀ · scale before any soft-cap, over the batch and the pairs
    the masks allow) exceeded τ = ``tau``, with γ_h = τ / S_max,h,

        W_q[h rows] ← √γ_h · W_q[h rows],    W_k[h rows] ← √γ_h · W_k[h rows]

    and the same for the head's entries of the q and k biases: head h's queries and keys are then
    √γ_h times what they were, so its logits are exactly γ_h · S and the largest is τ (for the
    forward's input; the step just taken moves it a little). K2 rescales the weights (its
    attention has no q/k biases); scaling W alone would leave the biases' part of S unscaled, and
    the largest logit above τ. Other heads are multiplied by exactly 1 (unchanged to the bit).
    Computed on the device (no host sync). Returns the largest S_max,h before the clip (0-dim),
    or None when no module recorded one. Moot under a QK-norm, which undoes any scale of W_q x."""
    for m in model.modules():
        if isinstance(m, Attention) and m.logit_max is not None:
            s = m.logit_max
            gamma = torch.where(torch.isfinite(s) & (s > tau), tau / s, 1.0)  # not finite: the run diverged
            root = gamma.sqrt().repeat_interleave(m.q_proj.out_features // m.n_heads)  # one per row of W_q, W_k
            for lin in (m.q_proj, m.k_proj):
                lin.weight.mul_(root.to(lin.weight.dtype).unsqueeze(1))
                if lin.bias is not None:
                    lin.bias.mul_(root.to(lin.bias.dtype))
    return qk_logit_max(model)


def group_decay(cfg: TrainConfig, lr_scale: float = 1.0) -> float:
    """The weight-decay coefficient λ_g of a parameter group whose rate is lr_t·s, s its
    ``lr_scale`` (μP's factor, :mod:`tfx.nn.mup`; 1 under the standard parameterisation),
    λ = ``cfg.weight_decay``, lr the peak ``cfg.lr``:

      coupled      λ_g = λ / s          so a step decays θ by lr_t·s·λ_g = lr_t·λ
      independent  λ_g = λ / (lr·s)     so a step decays θ by lr_t·s·λ_g = λ·lr_t/lr

    the same in every group, whatever its rate factor. The coupled form is what the mup package
    does (microsoft/mup, ``MuAdam``, ``MuAdamW``, ``MuSGD``: λ·r for a hidden matrix whose rate
    is lr/r; Yang et al. 2022, Tensor Programs V, yang2022tp5), so λ tuned at the base width
    transfers; the independent form is wortsman2023proxies §3.2.2's: AdamW decays
    θ ← θ − lr_t·λ_g·θ (loshchilov2019adamw), as do Adam-atan2 and Muon. Adam's and SGD's coupled
    decay is an L2 term λ_g·θ in the gradient, which their step multiplies by the group's rate too
    (Adam after its normalisation), as in mup's ``MuAdam`` and ``MuSGD``."""
    if cfg.weight_decay_mode == "independent":
        return cfg.weight_decay / (cfg.lr * lr_scale)
    return cfg.weight_decay / lr_scale


def _torch_optimizer(name: str, params, cfg: TrainConfig, device) -> torch.optim.Optimizer:
    """The torch optimiser ``name`` (:data:`tfx.nn.config.OPTIMIZERS`) over ``params`` (a list
    of tensors, or groups whose ``lr_scale`` sets their rate and decay)."""
    params = [{**p, "lr": cfg.lr * p["lr_scale"], "weight_decay": group_decay(cfg, p["lr_scale"])}
              if isinstance(p, dict) and "lr_scale" in p else p for p in params]
    wd = group_decay(cfg)
    if name == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=wd)
    if name == "adam-atan2":  # no ε
        return AdamAtan2(params, lr=cfg.lr, betas=cfg.betas, weight_decay=wd)
    if name == "muon":  # the hidden matrices only (TrainConfig refuses it for other kinds)
        return Muon(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=wd)
    opt = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "radam": torch.optim.RAdam}[name]
    kw = {"fused": True} if name != "radam" and device is not None and device.type in ("cuda", "cpu") else {}
    return opt(params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=wd, **kw)


def make_optimizer(params, cfg: TrainConfig, device: torch.device | None = None):
    """Adam (Kingma & Ba 2015), AdamW, SGD with momentum, RAdam (Liu et al. 2020), Adam-atan2
    (:class:`AdamAtan2`, everett2024scaling) or, for the hidden matrices, Muon (:class:`Muon`,
    jordan2024muon, liu2025muon); with ``cfg.optimizer_by_kind``, a :class:`Composite`
    of them, one per optimiser named, each over its kinds of parameter (``params`` must then be
    the model: :func:`tfx.nn.mup.parameter_kind` tells the kinds).

    ``params``: parameters, parameter groups, or a model: a model's parameters come in
    :func:`tfx.nn.mup.param_groups` (one plain list under the standard parameterisation; under
    μP a group per learning-rate factor ``lr_scale``, yang2022tp5), the one place where a
    parameter's rate differs from the schedule's: each group starts at ``cfg.lr · lr_scale``
    and :func:`set_lr` keeps the factor; its weight decay is :func:`group_decay`'s, so every
    group decays alike.
    ``weight_decay_mode="independent"`` (AdamW only): decay λ·(lr_t/lr) per step, whatever the peak lr.
    On CUDA and CPU, Adam and AdamW use the fused kernel (one launch updates every parameter;
    on a CPU it is also ~3× faster than the per-parameter loop)."""
    if cfg.optimizer_by_kind:
        if not isinstance(params, torch.nn.Module):
            raise ValueError(f"optimizer_by_kind={cfg.optimizer_by_kind} needs the model, not a list of "
                             "parameters: make_optimizer(model, cfg) (tfx.nn.mup.parameter_kind tells the kinds)")
        by_optimizer = {}  # optimiser name → its kinds' groups, in PARAMETER_KINDS order
        for group in kind_groups(params):
            by_optimizer.setdefault(cfg.optimizer_for(group["kind"]), []).append(group)
        missing = set(cfg.optimizer_by_kind) - {g["kind"] for gs in by_optimizer.values() for g in gs}
        if missing:
            raise ValueError(f"optimizer_by_kind={cfg.optimizer_by_kind} names {sorted(missing)}, which this model "
                             f"has no trainable parameters of; it has {[g['kind'] for g in kind_groups(params)]}")
        return Composite({name: _torch_optimizer(name, groups, cfg, device) for name, groups in by_optimizer.items()})
    if isinstance(params, torch.nn.Module):
        params = param_groups(params)
    return _torch_optimizer(cfg.optimizer, params, cfg, device)


class Composite:
    """Several torch optimisers over disjoint sets of parameters, taken as one: what
    ``TrainConfig.optimizer_by_kind`` builds (e.g. SGD for the hidden matrices, AdamW for
    the rest), so the one step (:func:`take_step`) steps them all, once.

    ``param_groups`` is their groups, concatenated (the very dicts: :func:`set_lr`, clipping
    and the update norm read and write through it); ``step``, ``zero_grad`` go to each;
    ``state_dict`` is ``{name: that optimiser's state_dict}`` and ``load_state_dict`` takes
    one with the same names (a checkpoint of another recipe is refused)."""

    def __init__(self, optimizers: dict):
        self.optimizers = dict(optimizers)
        seen = set()
        for name, opt in self.optimizers.items():
            ids = {id(p) for g in opt.param_groups for p in g["params"]}
            if ids & seen:
                raise ValueError(f"Composite: optimiser {name!r} shares parameters with another; "
                                 "each parameter must have one optimiser")
            seen |= ids

    @property
    def param_groups(self) -> list:
        return [g for opt in self.optimizers.values() for g in opt.param_groups]

    def step(self, closure=None):
        if closure is not None:  # a closure would re-evaluate the loss once per optimiser
            raise ValueError("Composite.step takes no closure")
        for opt in self.optimizers.values():
            opt.step()

    def zero_grad(self, set_to_none: bool = True):
        for opt in self.optimizers.values():
            opt.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        return {name: opt.state_dict() for name, opt in self.optimizers.items()}

    def load_state_dict(self, state: dict):
        if not isinstance(state, dict) or set(state) != set(self.optimizers):
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"this state is of optimisers {got}, not of this Composite's {sorted(self.optimizers)}")
        for name, opt in self.optimizers.items():
            opt.load_state_dict(state[name])

    def __repr__(self):
        return f"Composite({', '.join(f'{n}: {type(o).__name__}' for n, o in self.optimizers.items())})"


class Members:
    """The optimisers of K runs trained together as one program (an ensemble,
    :mod:`tfx.runs.ensemble`), taken as one by :func:`take_step`: each member keeps the very
    optimiser its single run builds (:func:`make_optimizer` of its own model and TrainConfig),
    so its state, groups and weight decay are that run's. What :func:`take_step` does per
    member, not over the stack: the learning rate (``lr`` a sequence, one per member), the
    gradient norm and its clipping (a member's ‖g‖ is its own parameters' alone, as in its
    single run). ``param_groups`` is the members' groups, concatenated; ``step`` and
    ``zero_grad`` go to each member."""

    def __init__(self, optimizers):
        self.members = list(optimizers)
        if not self.members:
            raise ValueError("Members needs at least one optimiser (one per member of the ensemble)")

    @property
    def param_groups(self) -> list:
        return [g for opt in self.members for g in opt.param_groups]

    def step(self, closure=None):
        if closure is not None:
            raise ValueError("Members.step takes no closure")
        for opt in self.members:
            opt.step()

    def zero_grad(self, set_to_none: bool = True):
        for opt in self.members:
            opt.zero_grad(set_to_none=set_to_none)

    def __repr__(self):
        return f"Members({len(self.members)} × {type(self.members[0]).__name__})"


def set_lr(opt: torch.optim.Optimizer, lr) -> None:
    """Every parameter group's learning rate to ``lr`` (the schedule's value for this step)
    times the group's ``lr_scale`` (μP's per-group factor, :func:`make_optimizer`; 1 if absent).
    For :class:`Members`, ``lr`` may be a sequence: member k's groups get ``lr[k]``."""
    if isinstance(opt, Members) and not isinstance(lr, (int, float)):
        if len(lr) != len(opt.members):
            raise ValueError(f"lr has {len(lr)} values for {len(opt.members)} members: give one per member")
        for member, member_lr in zip(opt.members, lr):
            set_lr(member, member_lr)
        return
    for group in opt.param_groups:
        group["lr"] = lr * group["lr_scale"] if "lr_scale" in group else lr


GUARD_MIN_STEPS = 10  # a guard acts once it has seen this many steps (statistics of fewer mean little)


class SpikeGuard:
    """What the one step does about a spike (SZ-2): a rule of ``TrainConfig.spike_guard``
    (its docstring names them and their sources) and the statistics it reads.

    :meth:`on_norm` takes the step's pre-clip gradient norm ‖g‖ and returns the action:
    ``("clip", c)`` (clip ‖g‖ to c), ``("skip", z)`` (no update), or None:

      clip-percentile  c = the p-th percentile of the last N norms, when ‖g‖ > c (tuning-playbook)
      clip-zscore      z = (‖g‖ − μ)/σ over EMAs (α = 0.97) of the norm's mean and variance;
                       z > z*: c = μ + z*·σ, and the EMAs take c, not ‖g‖ (kumar2025zclip)
      skip-zscore      z over the mean and deviation of the last N norms; z > z*: skip. Every
                       norm enters the window, a skipped one too, as in OLMo-core's skip-step
                       (which also skips on the loss; here the norm alone): kept out, a spike
                       that damaged the model would have every later step skipped

    :meth:`on_loss` (``rollback``) takes the step's loss and returns its z-score over the last N
    losses when it passes z* (the trainer then rolls back), else None. Nothing acts before
    :data:`GUARD_MIN_STEPS` values are seen. ``last`` is the action of the latest step."""

    EMA = 0.97

    def __init__(self, rule: str, window: int = 100, percentile: float = 90.0, z: float = 2.5):
        self.rule, self.percentile, self.z = rule, percentile, z
        self.values = deque(maxlen=window)  # the last norms (or losses, for rollback)
        self.mean = self.var = None  # clip-zscore's EMAs
        self.last = None

    @classmethod
    def of(cls, cfg: TrainConfig) -> "SpikeGuard | None":
        """The guard ``cfg`` asks for (None for 'none')."""
        if cfg.spike_guard == "none":
            return None
        return cls(cfg.spike_guard, cfg.guard_window, cfg.guard_percentile, cfg.guard_z)

    def _zscore(self, x: float) -> float | None:
        if len(self.values) < GUARD_MIN_STEPS:
            return None
        v = torch.tensor(self.values, dtype=torch.float64)
        return (x - float(v.mean())) / max(float(v.std()), 1e-12)

    def on_norm(self, norm: float):
        action = None
        if self.rule == "clip-percentile":
            if len(self.values) >= GUARD_MIN_STEPS:
                c = float(torch.tensor(self.values, dtype=torch.float64).quantile(self.percentile / 100))
                action = ("clip", c) if norm > c else None
            self.values.append(norm)  # the percentile of the logged, pre-clip norms
        elif self.rule == "clip-zscore":
            used = norm
            if self.mean is None:
                self.values.append(norm)
                if len(self.values) == GUARD_MIN_STEPS:  # the EMAs start from the first steps' statistics
                    v = torch.tensor(self.values, dtype=torch.float64)
                    self.mean, self.var = float(v.mean()), float(v.var())
            else:
                std = max(math.sqrt(self.var), 1e-12)
                if (norm - self.mean) / std > self.z:
                    used = self.mean + self.z * std
                    action = ("clip", used)
                self.mean = self.EMA * self.mean + (1 - self.EMA) * used
                self.var = self.EMA * self.var + (1 - self.EMA) * (used - self.mean) ** 2
        elif self.rule == "skip-zscore":
            z = self._zscore(norm)
            if z is not None and z > self.z:
                action = ("skip", z)
            self.values.append(norm)  # skipped or not (OLMo-core's rule): a run cannot freeze
        self.last = action
        return action

    def on_loss(self, loss: float) -> float | None:
        z = self._zscore(loss)
        if z is not None and z > self.z:
            return z
        self.values.append(loss)
        return None


def drop_state(opt) -> None:
    """Forget the optimiser's state (Adam's moments and step count, momentum buffers): what a
    resume without the saved optimiser does (SZ-3). The parameters and their groups stay."""
    for o in getattr(opt, "optimizers", {}).values() or getattr(opt, "members", None) or [opt]:
        o.state.clear()


def take_step(opt: torch.optim.Optimizer, objective: torch.Tensor, *, lr: float | None = None,
              clip: float = 0.0, grad_norm: bool = False, scaler: torch.amp.GradScaler | None = None,
              before_update=None, guard: SpikeGuard | None = None) -> torch.Tensor | None:
    """One optimiser step on ``objective``: θ ← θ + Δ(∇θ objective), the one step in tfx.

    In order: every group's learning rate set to ``lr`` (when given); gradients cleared;
    backward (through ``scaler`` when one is given, then unscaled, so clipping and probes see
    true gradients); the global gradient norm ‖g‖ = (Σ_p ‖∇p‖²)^½ clipped to ``clip`` when
    ``clip`` > 0 (Pascanu et al. 2013); ``before_update()`` called with the gradients ready
    and θ not yet moved (where a probe reads ∇θ or copies θ); the optimiser's step (a
    scaler skips it when a gradient is not finite); the scaler's update. With a ``guard``
    (:class:`SpikeGuard`), ‖g‖ is read back to the host once the gradients are ready and the
    guard's action taken: clipped to its threshold, or no update at all (``guard.last`` says
    which).

    Returns ‖g‖ before clipping as a 0-dim device tensor when ``clip`` or ``grad_norm``
    (nothing is read back to the host), else None. For :class:`Members` (an ensemble) ``lr``
    may be one value per member, and ‖g‖ and its clipping are per member: a (K,) tensor."""
    if scaler is not None and isinstance(opt, Members):
        raise ValueError("take_step: a gradient scaler (fp16) cannot step an ensemble's Members; "
                         "train the members with amp_dtype 'bf16' or 'fp32'")
    if lr is not None:
        set_lr(opt, lr)
    opt.zero_grad(set_to_none=True)
    (scaler.scale(objective) if scaler is not None else objective).backward()
    if scaler is not None:
        scaler.unscale_(opt)
    norm = None
    if guard is not None and isinstance(opt, Members):
        raise ValueError("take_step: a spike guard cannot step an ensemble's Members; train the runs alone")
    if clip or grad_norm or guard is not None:
        if isinstance(opt, Members):  # each member's own ‖g‖, clipped on its own
            norm = torch.stack([_clip_or_measure(member, clip) for member in opt.members])
        else:
            norm = _clip_or_measure(opt, clip)
    if guard is not None:
        action = guard.on_norm(float(norm))
        if action is not None and action[0] == "skip":
            return norm
        if action is not None:  # clip to the guard's threshold, from the norm already measured
            torch.nn.utils.clip_grads_with_norm_([p for g in opt.param_groups for p in g["params"]], action[1], norm)
    if before_update is not None:
        before_update()
    if scaler is not None:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    return norm


def _clip_or_measure(opt, clip: float) -> torch.Tensor:
    """The global gradient norm ‖g‖ of ``opt``'s parameters, clipped to ``clip`` when ``clip`` > 0."""
    params = [p for group in opt.param_groups for p in group["params"]]
    if clip:
        return torch.nn.utils.clip_grad_norm_(params, clip)
    return torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
