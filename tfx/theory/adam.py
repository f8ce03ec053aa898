"""Adam's first steps: why they are large, what β2 and warmup change, and RAdam's fix (chapter 11).

Adam's step for one coordinate is ``lr · m̂_t / (√v̂_t + ε)``: the bias-corrected first
moment over the square root of the bias-corrected second moment (Kingma & Ba 2015). At
t = 1, ``m̂_1 = g_1`` and ``v̂_1 = g_1²``, so every coordinate moves by ``lr · sign(g_1)``,
however small its gradient: the full learning rate, which later steps exceed only when the
gradients grow faster than ``v̂_t`` follows them.

Liu et al. (2020, "On the variance of the adaptive learning rate and beyond", RAdam) read
the adaptive learning rate ``ψ_t = 1/√v̂_t`` as an estimate made from few gradients. If
the gradients are N(0, σ²) and ``v̂_t`` were a simple average of ρ squared gradients,
``1/v̂_t`` would follow a scaled inverse χ² with ρ degrees of freedom, and

    Var[ψ] ≈ ρ / (2 (ρ − 2)(ρ − 4) σ²)          (first order in the delta method; ρ > 4)

which falls as ρ grows. That formula is infinite for ρ ≤ 4; the exact variance
(``adaptive_lr_variance(exact=True)``) is finite for every ρ > 2. The exponential average
of ``v_t`` is worth an average of ``ρ_t`` gradients (``radam_rho``), ρ_∞ = 2/(1−β2) − 1. RAdam
multiplies Adam's step by ``r_t = √(Var[ψ_∞] / Var[ψ_t])`` (``radam_rectification``),
and takes a momentum-SGD step while ρ_t ≤ 4 (``torch.optim.RAdam``: ≤ 5): a warmup whose
length is set by β2.

``first_steps`` trains a copy of a model for a few steps and keeps histograms of the
per-coordinate magnitudes of the input embedding's gradient and of its update per unit
learning rate (WU-3; Huang et al. 2020, as drawn in the Borealis tutorial's Fig. 3).
"""
from __future__ import annotations

import copy
import math
from typing import NamedTuple

import numpy as np
import torch


# ---------------------------------------------------------------------- RAdam, in closed form
def _check_beta2(beta2):
    if isinstance(beta2, bool) or not isinstance(beta2, (int, float)) or not 0 < beta2 < 1:
        raise ValueError(f"beta2={beta2!r} must be a number in (0, 1)")
    return float(beta2)


def radam_rho_inf(beta2: float) -> float:
    """ρ_∞ = 2/(1 − β2) − 1: how many gradients the long-run average of v_t is worth."""
    return 2.0 / (1.0 - _check_beta2(beta2)) - 1.0


def radam_rho(t, beta2: float):
    """ρ_t = ρ_∞ − 2 t β2^t / (1 − β2^t) (Liu et al. 2020, RAdam eq. 6): the length of the
    simple moving average whose centre of mass matches the bias-corrected EMA's at step t."""
    t = np.asarray(t, dtype=float)
    if np.any(t < 1):
        raise ValueError("t must be ≥ 1 (steps count from 1)")
    b = _check_beta2(beta2)
    return radam_rho_inf(b) - 2.0 * t * b**t / (1.0 - b**t)


def radam_rectification(t, beta2: float, threshold: float = 4.0):
    """r_t = √((ρ_t − 4)(ρ_t − 2) ρ_∞ / ((ρ_∞ − 4)(ρ_∞ − 2) ρ_t)) for ρ_t > ``threshold``,
    else 0 (no adaptive step: RAdam falls back to momentum SGD). ``threshold=5`` is PyTorch's."""
    rho, rho_inf = radam_rho(t, beta2), radam_rho_inf(beta2)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
    return np.where(rho > threshold, r, 0.0)


def adaptive_lr_variance(rho, sigma: float = 1.0, exact: bool = False):
    """Var[ψ] for ψ = 1/√v with ρ/(σ² v) ~ χ²_ρ (v: an average of ρ squared N(0, σ²) gradients).

    ``exact=False``: the first-order value ρ / (2 (ρ−2)(ρ−4) σ²) (ρ > 4; RAdam's eq. 5 approx.);
    ``exact=True``: ρ/((ρ−2)σ²) − (ρ/(2σ²)) (Γ((ρ−1)/2) / Γ(ρ/2))² (ρ > 2)."""
    rho = np.asarray(rho, dtype=float)
    if exact:
        lg = lambda x: torch.lgamma(torch.as_tensor(x, dtype=torch.float64)).numpy()  # noqa: E731
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.sqrt(rho / 2) * np.exp(lg((rho - 1) / 2) - lg(rho / 2)) / sigma
            return np.where(rho > 2, rho / ((rho - 2) * sigma**2) - mean**2, np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rho > 4, rho / (2 * (rho - 2) * (rho - 4) * sigma**2), np.inf)


class RAdamDerivation(NamedTuple):
    rho_t: object  # sympy: the SMA length solved from the centre-of-mass condition
    rho_t_matches: bool  # equals ρ_∞ − 2tβ^t/(1−β^t)
    var_first_order: object  # sympy: Var[X]/(4 E[X]) for X = ψ² (delta method)
    var_matches: bool  # equals ρ/(2(ρ−2)(ρ−4)σ²)
    rectification: object  # sympy: √(Var[ψ_∞]/Var[ψ_t])


def derive_radam() -> RAdamDerivation:
    """RAdam's two steps in sympy.

    1. The bias-corrected EMA weights step i by (1−β)β^{t−i}/(1−β^t); an SMA of the last f
       steps weights each by 1/f. Matching their mean position (Σ weight · i) gives f = ρ_t.
    2. ψ² = X = ρ/(σ² Y), Y ~ χ²_ρ, has E[X] = ρ/((ρ−2)σ²) and Var[X] = 2ρ²/((ρ−2)²(ρ−4)σ⁴)
       (moments of χ²: E[Y^k] = 2^k Γ(ρ/2 + k)/Γ(ρ/2)); the delta method gives
       Var[√X] ≈ Var[X] / (4 E[X])."""
    import sympy as sp

    t, i, f, rho, sig = sp.symbols("t i f rho sigma", positive=True)
    b = sp.symbols("beta", positive=True)
    ema_mean_pos = sp.summation((1 - b) * b**(t - i) * i, (i, 1, t)) / (1 - b**t)
    sma_mean_pos = sp.summation(i / f, (i, t - f + 1, t))  # the last f steps, equal weights
    f_sol = sp.solve(sp.Eq(sma_mean_pos, ema_mean_pos), f)[0]
    rho_closed = 2 / (1 - b) - 1 - 2 * t * b**t / (1 - b**t)
    rho_ok = sp.simplify(f_sol - rho_closed) == 0
    if not rho_ok:  # sympy may leave a form it cannot cancel: check at exact rational points
        rho_ok = all(sp.nsimplify((f_sol - rho_closed).subs({b: sp.Rational(bv), t: tv})) == 0
                     for bv in ("9/10", "49/50") for tv in (1, 3, 10))
    moment = lambda k: 2**k * sp.gamma(rho / 2 + k) / sp.gamma(rho / 2)  # noqa: E731  E[Y^k], Y ~ χ²_ρ
    ex = sp.gammasimp(rho / sig**2 * moment(-1))
    var_x = sp.simplify(sp.gammasimp(rho**2 / sig**4 * moment(-2)) - ex**2)
    var_psi = sp.simplify(var_x / (4 * ex))
    var_ok = sp.simplify(var_psi - rho / (2 * (rho - 2) * (rho - 4) * sig**2)) == 0
    rho_t, rho_inf = sp.symbols("rho_t rho_infty", positive=True)
    v = lambda r: r / (2 * (r - 2) * (r - 4) * sig**2)  # noqa: E731
    rect = sp.sqrt(sp.factor(sp.simplify(v(rho_inf) / v(rho_t))))
    return RAdamDerivation(sp.simplify(f_sol), bool(rho_ok), var_psi, bool(var_ok), rect)


def first_adam_step(grads: torch.Tensor, betas=(0.9, 0.98), eps: float = 1e-8) -> torch.Tensor:
    """Adam's first update per coordinate, in units of lr: m̂_1/(√v̂_1 + ε) = g/(|g| + ε) ≈ sign(g)."""
    g = torch.as_tensor(grads, dtype=torch.float64)
    m = (1 - betas[0]) * g / (1 - betas[0])
    v = (1 - betas[1]) * g**2 / (1 - betas[1])
    return m / (v.sqrt() + eps)


# ---------------------------------------------------------------------- WU-3: the first steps, measured
def source_embedding(name: str, p) -> bool:
    """The default selection of ``first_steps``: the source (input) embedding, whose gradient
    WU-3 is about."""
    return name == "src_embed.tok.weight"


def embedding_and_matrices(name: str, p) -> bool:
    """The pooled selection of ``first_steps``: the source embedding and every weight matrix."""
    return name == "src_embed.tok.weight" or (p.ndim == 2 and name.endswith(".weight"))


class FirstSteps(NamedTuple):
    steps: list  # the steps recorded
    lr: np.ndarray  # the learning rate of each recorded step
    bins: np.ndarray  # log10 bin edges of the histograms
    grad_hist: np.ndarray  # (len(steps), len(bins) − 1): counts of log10 |g| per selected coordinate
    update_hist: np.ndarray  # the same for log10 |Δθ|/lr: the update per unit learning rate
    grad_median: np.ndarray  # per recorded step: median |g| (coordinates with g ≠ 0)
    update_median: np.ndarray  # per recorded step: median |Δθ|/lr (coordinates that moved)
    loss: list  # training loss at every step
    pooled_grad_hist: np.ndarray | None = None  # grad_hist over ``pooled`` (None: not asked)
    pooled_update_hist: np.ndarray | None = None  # update_hist over ``pooled``


def _magnitudes(params, before, lr):
    """(|g| with g ≠ 0, |Δθ|/lr with Δθ ≠ 0) over ``params``, as float64 numpy arrays."""
    g = torch.cat([p.grad.detach().abs().flatten() for p in params if p.grad is not None]).double()
    u = torch.cat([(p.detach() - b).abs().flatten() for p, b in zip(params, before)]).double()
    u = u[u > 0] / lr if lr > 0 else u[:0]  # a zero learning rate (a schedule's end): no unit
    return g[g > 0].numpy(), u.numpy()


def first_steps(model, task, cfg, steps: int = 100, every: int = 10, select=source_embedding,
                pooled=None, bins=np.linspace(-12.125, 1.875, 57)) -> FirstSteps:
    """Train a copy of ``model`` for ``steps`` steps with ``cfg`` (a TrainConfig: optimiser,
    learning rate, warmup and schedule as ``tfx.train`` uses them) and, every ``every`` steps
    (and at step 1), histogram log10 of every selected coordinate's |gradient| and of its
    update *per unit learning rate*, |Δθ_t|/lr_t.

    Dividing by the step's learning rate is what makes runs with and without warmup
    comparable: Adam's step 1 is lr_1 · sign(g) (``first_adam_step``), so the raw update of a
    warmed-up run starts W times smaller and grows with the schedule by construction, while
    |Δθ_t|/lr_t = |m̂_t|/(√v̂_t + ε) is 1 at step 1 either way and measures only what Adam's
    statistics do. ``select`` (default: the source embedding, ``source_embedding``) picks the
    parameters of the main histograms and medians; ``pooled`` (e.g. ``embedding_and_matrices``)
    adds histograms over a second, wider selection. Coordinates with a zero gradient
    (embedding rows of tokens absent from the batch) are left out of the gradient histogram,
    coordinates that did not move out of the update histogram. Huang et al. (2020) drew these
    histograms for a Post-LN Transformer trained with Adam: without warmup the input
    embedding's gradients and Adam's updates collapse within the first steps (WU-3)."""
    from ..nn.optim import lr_at, make_optimizer, pick_device, step_batch, take_step

    if steps < 1 or every < 1:
        raise ValueError(f"steps={steps!r} and every={every!r} must be ≥ 1")
    m = copy.deepcopy(model).train()
    named = list(m.named_parameters())
    chosen = [p for n, p in named if select(n, p)]
    if not chosen:
        raise ValueError("select() chose no parameter")
    wide = [p for n, p in named if pooled(n, p)] if pooled is not None else []
    if pooled is not None and not wide:
        raise ValueError("pooled() chose no parameter")
    device = next(m.parameters()).device
    opt = make_optimizer(m, cfg, pick_device(cfg.device) if cfg.device else device)
    torch.manual_seed(cfg.seed)
    rec_steps, rec_lr, gh, uh, pgh, puh, gmed, umed, losses = [], [], [], [], [], [], [], [], []
    for step in range(1, steps + 1):
        lr = lr_at(step, cfg)
        # the batch tfx.train reads at this step: the run's data seed's stream, not batch step − 1
        out = m.loss(step_batch(task, step, cfg).to(device), cfg.label_smoothing)
        loss = out["loss"]
        objective = loss + cfg.z_loss * out["log_z_sq"] if cfg.z_loss else loss
        record = step == 1 or step % every == 0
        before, before_wide = [], []

        def keep_theta():  # θ_{t−1}, copied only on the steps recorded
            before.extend(p.detach().clone() for p in chosen)
            before_wide.extend(p.detach().clone() for p in wide)

        take_step(opt, objective, lr=lr, clip=cfg.clip, before_update=keep_theta if record else None)
        losses.append(float(loss.detach()))
        if not math.isfinite(losses[-1]):
            break
        if record:
            g, u = _magnitudes(chosen, before, lr)
            rec_steps.append(step)
            rec_lr.append(lr)
            gh.append(np.histogram(np.log10(g), bins)[0])
            uh.append(np.histogram(np.log10(u), bins)[0])
            gmed.append(float(np.median(g)) if g.size else float("nan"))
            umed.append(float(np.median(u)) if u.size else float("nan"))
            if wide:
                g, u = _magnitudes(wide, before_wide, lr)
                pgh.append(np.histogram(np.log10(g), bins)[0])
                puh.append(np.histogram(np.log10(u), bins)[0])
    return FirstSteps(rec_steps, np.array(rec_lr), np.asarray(bins), np.array(gh), np.array(uh),
                      np.array(gmed), np.array(umed), losses,
                      np.array(pgh) if wide else None, np.array(puh) if wide else None)


def least_moved(first_step: dict, lr: float) -> dict:
    """The weight matrix that one first Adam step at ``lr`` moved least (``first_step``:
    {"update_rms": {name: RMS of its change}, "grad_rms": {name: RMS of its gradient}}): its
    ``name`` (without ``.weight``), its step's RMS over ``lr`` (``frac``) and its gradient's
    RMS (``grad``). On the first step a coordinate moves by lr·|g|/(|g| + ε)
    (:func:`first_adam_step`): about lr where |g| ≫ ε, less where the gradient is near ε."""
    name = min(first_step["update_rms"], key=first_step["update_rms"].get)
    return {"frac": first_step["update_rms"][name] / lr, "grad": first_step["grad_rms"][name],
            "name": name.removesuffix(".weight")}


def first_steps_falls(first, name) -> dict:
    """``{seed: (fall of the embedding's median |g|, fall of the median |Δθ|/η)}`` for warmup
    ``name`` of ``first`` (``{(warmup, seed): FirstSteps}``, :func:`first_steps`), in decades:
    log10 of each median's step-1 value over its lowest."""
    return {s: (math.log10(fs.grad_median[0] / np.nanmin(fs.grad_median)),
                math.log10(fs.update_median[0] / np.nanmin(fs.update_median)))
            for (w, s), fs in first.items() if w == name}
