"""How one step is taken: the optimisers the papers compare, the learning-rate schedule,
the data each step reads, and the step itself.

Built from a :class:`tfx.nn.config.TrainConfig`. :func:`take_step` is the one optimiser
step in tfx: the trainer (:mod:`tfx.runs.train`) takes it every step, the theory
(:mod:`tfx.theory.adam`, :mod:`tfx.theory.gradients`, :mod:`tfx.theory.change`) a few times
to measure the first updates (WU-3, GV-3, AM-1), the book's toy and the bench once a step.
"""
from __future__ import annotations

import math

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
    """Learning rate for optimiser step ``step`` = 1, 2, … (see TrainConfig)."""
    w = cfg.warmup
    if cfg.schedule == "inverse-sqrt":
        return cfg.lr * (min(step / w, math.sqrt(w / step)) if w else 1.0)
    warm = min(1.0, step / w) if w else 1.0
    if cfg.schedule == "linear-decay" and step > w:
        return cfg.lr * max(0.0, (cfg.steps - step) / max(1, cfg.steps - w))
    return cfg.lr * warm


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


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    """Every parameter group's learning rate to ``lr`` (the schedule's value for this step)
    times the group's ``lr_scale`` (μP's per-group factor, :func:`make_optimizer`; 1 if absent)."""
    for group in opt.param_groups:
        group["lr"] = lr * group["lr_scale"] if "lr_scale" in group else lr


def take_step(opt: torch.optim.Optimizer, objective: torch.Tensor, *, lr: float | None = None,
              clip: float = 0.0, grad_norm: bool = False, scaler: torch.amp.GradScaler | None = None,
              before_update=None) -> torch.Tensor | None:
    """One optimiser step on ``objective``: θ ← θ + Δ(∇θ objective), the one step in tfx.

    In order: every group's learning rate set to ``lr`` (when given); gradients cleared;
    backward (through ``scaler`` when one is given, then unscaled, so clipping and probes see
    true gradients); the global gradient norm ‖g‖ = (Σ_p ‖∇p‖²)^½ clipped to ``clip`` when
    ``clip`` > 0 (Pascanu et al. 2013); ``before_update()`` called with the gradients ready
    and θ not yet moved (where a probe reads ∇θ or copies θ); the optimiser's step (a
    scaler skips it when a gradient is not finite); the scaler's update.

    Returns ‖g‖ before clipping as a 0-dim device tensor when ``clip`` or ``grad_norm``
    (nothing is read back to the host), else None."""
    if lr is not None:
        set_lr(opt, lr)
    opt.zero_grad(set_to_none=True)
    (scaler.scale(objective) if scaler is not None else objective).backward()
    if scaler is not None:
        scaler.unscale_(opt)
    norm = None
    if clip or grad_norm:
        params = [p for group in opt.param_groups for p in group["params"]]
        if clip:
            norm = torch.nn.utils.clip_grad_norm_(params, clip)
        else:
            norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
    if before_update is not None:
        before_update()
    if scaler is not None:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    return norm
