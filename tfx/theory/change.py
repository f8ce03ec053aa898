"""How much does the output move when the weights move? (AM-2, AD-2; Liu et al. 2020)

Theorem 2: a small change of the weights moves the output by C · Σ_i β²_{i,i}
(β from :mod:`tfx.theory.dependency`): O(N) for Post-LN, O(log N) for Pre-LN and Admin
(:func:`output_change_order`). Measured: ‖F(x_0, W) − F(x_0, W*)‖² with W* a random
perturbation or one Adam step (:func:`output_change`), against depth
(:func:`output_change_sweep`) for schemes of :data:`tfx.nn.config.SCHEMES`; and the largest
logit difference of two models (:func:`max_output_difference`, AD-2: Admin's
reparameterisation does not change the function).
"""
from __future__ import annotations

import copy
import math

import numpy as np
import torch

from ..nn.config import TrainConfig
from ..nn.hooks import loss_on, mode
from ..nn.optim import make_optimizer, take_step
from ..nn.model import build_scheme
from .dependency import layer_dependency
from .fit import fit_linear
from .gradients import _placement


# ----------------------------------------------------------------- AM-2: predicted
def output_change_order(placement: str, L: int, v: float = 1.0) -> float:
    """Predicted output change under a parameter perturbation (AM-2), up to the constant C.

    Liu et al. Theorem 2: at init, if the layer dependencies ``beta_{i,j}`` do not move when
    W -> W* = W + delta (delta independent of W), and the sub-layers' perturbations contribute
    independently, then::

        Var[F(x0, W) - F(x0, W*)]  ~=  C * sum_{i=1}^{L} beta_{i,i}^2,

    over the L residual sub-layers (two per encoder layer; the book's notation page). With
    every branch of variance ``v`` (the embedding too, counted as piece 0):

    * Post-LN: beta^2_{i,i} = v / (1 + v) (a fresh unit-variance shortcut against the new
      branch), so the sum is L v / (1 + v) = O(L) (Cor. 2);
    * Pre-LN and Admin: beta^2_{i,i} = 1/(i + 1) (i + 1 equal pieces after sub-layer i), so
      the sum is H_{L+1} - 1 = ln L + 0.5772... - 1 + O(1/L) = O(log L) (Cor. 1).

    Returns that sum. Compare measurements with :func:`tfx.theory.fit.fit_linear` against N
    (Post-LN) or ln N (Pre-LN), or better their log-log exponents over seeds
    (:func:`tfx.theory.fit.exponent_interval`); the paper reports R^2 = 0.99 for random
    perturbations and 0.75 with Adam updates.
    """
    if L < 1:
        raise ValueError("L must be >= 1 (residual sub-layers)")
    p = _placement(placement)
    if p == "post":
        return float(L) * v / (1.0 + v)
    return float(sum(1.0 / (i + 1) for i in range(1, L + 1)))


# ----------------------------------------------------------------- AM-2: measured
def stack_output(model, batch, stack: str | None = None):
    """F(x_0, W): the hidden output of ``stack`` (default: the encoder when there is
    one, as in Liu et al.'s Fig. 4), before the output projection."""
    stack = stack or ("encoder" if model.cfg.n_enc else "decoder")
    if stack not in model.stacks():
        raise ValueError(f"stack={stack!r}: this model has {list(model.stacks())}")
    batch = batch.to(next(model.parameters()).device)
    if stack == "encoder":
        return model.encode(batch.src)
    if model.cfg.kind == "decoder":
        return model.decode(batch.tgt[:, :-1])
    return model.decode(batch.tgt[:, :-1], model.encode(batch.src), batch.src)


def _selected(model, which: str) -> list:
    if which == "layers":  # what Theorem 2 calls W: the stacks' parameters, the input x_0 held fixed
        return [(n, p) for n, p in model.named_parameters() if n.startswith(("encoder.", "decoder."))]
    if which == "all":
        return list(model.named_parameters())
    raise ValueError(f"which={which!r}: choose 'layers' (the stacks' parameters) or 'all'")


@torch.no_grad()
def perturb_random(model, scale: float = 1e-2, which: str = "layers", seed: int = 0):
    """A copy of ``model`` with W* = W + δ, δ = scale · std(W) · N(0, 1) for every
    weight *matrix* W (vectors such as biases, LayerNorm γ and Admin's ω are left
    alone; their spread is zero at init). ``which='layers'`` perturbs the stacks only."""
    new = copy.deepcopy(model)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    for _, p in _selected(new, which):
        if p.ndim >= 2:
            noise = torch.randn(p.shape, generator=gen).to(p.device, p.dtype)
            p.add_(scale * p.std() * noise)
    return new


def adam_step(model, batch, lr: float = 1e-5, betas=(0.9, 0.98), eps: float = 1e-8, which: str = "layers"):
    """A copy of ``model`` after one Adam step on the training loss of ``batch``
    (W* = W + Adam(∇W)). The first Adam step moves each selected parameter by
    ≈ lr · sign(gradient), whatever the gradient's size."""
    new = copy.deepcopy(model)
    params = [p for _, p in _selected(new, which)]
    opt = make_optimizer(params, TrainConfig(optimizer="adam", lr=lr, betas=tuple(betas), eps=eps))
    with mode(new):
        take_step(opt, loss_on(new, batch)["loss"])
        new.zero_grad(set_to_none=True)
    return new


def sgd_step(model, batch, lr: float = 1e-5, which: str = "layers"):
    """A copy of ``model`` after one plain gradient step (W* = W − lr·∇W, no momentum): the
    update the T-Fixup and DeepNorm arguments bound (Huang et al. 2020, Wang et al. 2022), whose
    size follows the gradient's, unlike Adam's first step."""
    new = copy.deepcopy(model)
    params = [p for _, p in _selected(new, which)]
    opt = make_optimizer(params, TrainConfig(optimizer="sgd", lr=lr, momentum=0.0))
    with mode(new):
        take_step(opt, loss_on(new, batch)["loss"])
        new.zero_grad(set_to_none=True)
    return new


@torch.no_grad()
def with_random_signs(model, stepped, which: str = "layers", seed: int = 0):
    """A copy of ``model`` moved by the step that took it to ``stepped``, each coordinate's size
    kept and its sign drawn at random: the same step sizes without the alignment of an optimiser's
    update to the gradient (AM-2's control: is it the sizes or their agreement that grows with
    depth?)."""
    new = copy.deepcopy(model)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    after = dict(_selected(stepped, which))
    for name, p in _selected(new, which):
        size = (after[name] - p).abs()
        sign = torch.randint(0, 2, p.shape, generator=gen).to(p.device, p.dtype) * 2 - 1
        p.add_(size * sign)
    return new


PERTURBATIONS = ("random", "adam", "sgd", "adam-random-signs")


@torch.no_grad()
def output_change(model, batch, perturbation: str = "random", scale: float = 1e-2, lr: float = 1e-5,
                  which: str = "layers", stack: str | None = None, seed: int = 0) -> float:
    """AM-2: ‖F(x_0, W) − F(x_0, W*)‖², summed over the d features and averaged over
    the tokens of ``batch`` (Liu et al. 2020, Fig. 4). W* comes from ``perturb_random``
    (``perturbation='random'``, δ = scale · each matrix's std), ``adam_step``
    (``'adam'``, learning rate ``lr``), ``sgd_step`` (``'sgd'``: one plain gradient step) or
    Adam's first step with its signs drawn at random (``'adam-random-signs'``,
    :func:`with_random_signs`). The model is not changed."""
    if perturbation not in PERTURBATIONS:
        raise ValueError(f"perturbation={perturbation!r}: choose one of {PERTURBATIONS}")
    with mode(model):
        if perturbation == "random":
            other = perturb_random(model, scale, which, seed)
        else:
            with torch.enable_grad():
                if perturbation == "sgd":
                    other = sgd_step(model, batch, lr=lr, which=which)
                else:
                    other = adam_step(model, batch, lr=lr, which=which)
            if perturbation == "adam-random-signs":
                other = with_random_signs(model, other, which, seed)
        other.eval()
        a, b = stack_output(model, batch, stack), stack_output(other, batch, stack)
    return float((a - b).pow(2).sum(-1).mean())


# The random δ of a model initialised from seed s is drawn from seed PERTURBATION_SEED + s: its own
# stream, never the one the initial weights came from (every sweep of AM-2, DN-1 and PL-1).
PERTURBATION_SEED = 1000


def perturbation_seed(seed: int) -> int:
    """The seed of the random δ (:func:`perturb_random`) for a model initialised from ``seed``."""
    return PERTURBATION_SEED + seed


def output_change_sweep(task, depths, schemes=("post", "pre", "admin"), seeds: int = 1, batch_size: int = 32,
                        perturbation: str = "random", scale: float = 1e-2, lr: float = 1e-5,
                        stack: str = "encoder", with_beta: bool = True, **model_kw) -> dict:
    """AM-2 against depth: ``output_change`` of encoder-only models (``stack="encoder"``)
    or decoder-only LMs (``stack="decoder"``) with N ∈ ``depths`` layers, for each scheme,
    over ``seeds`` (each seed: a fresh init, a fresh δ). ``schemes``: keys of
    :data:`tfx.nn.config.SCHEMES`. One batch of ``task`` is the input x_0 and Admin's
    profiling batch.

    Alongside, ``res["sum_beta_sq"][scheme]`` holds Σ_i β²_{i,i} of the same models
    (``layer_dependency``): Theorem 2 says the output change is C times it (``with_beta=False``
    skips it: NaN).

    Returns ``{"depths": array, scheme: array (len(depths), seeds), "sum_beta_sq": {scheme: array}}``."""
    if stack not in ("encoder", "decoder"):
        raise ValueError(f"stack={stack!r}: choose 'encoder' (encoder-only models) or 'decoder' (decoder-only LMs)")
    batch = task.batch(0, batch_size)
    res = {"depths": np.asarray(depths), "sum_beta_sq": {}}
    for sch in schemes:
        vals = np.zeros((len(depths), seeds))
        sb = np.zeros((len(depths), seeds))
        for a, n in enumerate(depths):
            for s in range(seeds):
                n_enc, n_dec = (0, n) if stack == "decoder" else (n, 0)
                m = build_scheme(sch, task, n_enc, n_dec, batch=batch, seed=s, **model_kw)
                vals[a, s] = output_change(m, batch, perturbation, scale=scale, lr=lr, seed=perturbation_seed(s))
                sb[a, s] = (float(np.nansum(np.diag(layer_dependency(m, batch)[stack]["beta"])[1:] ** 2))
                            if with_beta else np.nan)
        res[sch] = vals
        res["sum_beta_sq"][sch] = sb
    return res


# ----------------------------------------------------------------- growth with depth, per seed
# "Does not grow" means a depth exponent within ±FLAT_EXPONENT of 0: over 2 to 24 layers an exponent
# of 0.25 is a factor 12^0.25 ≈ 1.9 in ‖ΔF‖², where Post-LN's grows by orders of magnitude (TF-1, DN-1).
FLAT_EXPONENT = 0.25


def depth_exponents(res, scheme: str) -> dict:
    """``{seed: k}``: the log-log slope of the output change against depth N, one per seed of an
    :func:`output_change_sweep` (``res[scheme]`` has shape (depths, seeds)), fitted over the depths
    where the change is finite and positive (a model whose first step overflows at the deepest N
    is fitted over the shallower ones; fewer than two such depths: NaN)."""
    N = np.asarray(res["depths"], dtype=float)
    vals = np.asarray(res[scheme], dtype=float)
    out = {}
    for s in range(vals.shape[1]):
        ok = np.isfinite(vals[:, s]) & (vals[:, s] > 0)
        out[s] = (float(np.polyfit(np.log(N[ok]), np.log(vals[ok, s]), 1)[0]) if ok.sum() >= 2
                  else float("nan"))
    return out


LAW_R2 = 0.9  # a depth law holds when a line through the measured points fits them this well


def depth_laws(res) -> dict:
    """Theorem 2's two corollaries against an :func:`output_change_sweep` of ``"post"`` and
    ``"pre"`` (mean over seeds): ``r2_post_n`` / ``r2_post_log`` (Post-LN's output change
    against N / ln N), ``r2_pre_log`` / ``r2_pre_n`` (Pre-LN's against ln N / N), ``ratio``
    (Post-LN ÷ Pre-LN at the deepest N), ``parts`` (each law: Post-LN linear in N with
    R² ≥ LAW_R2 and better than against ln N; Pre-LN linear in ln N with R² ≥ LAW_R2 and better
    than against N; Post-LN's change over 3× Pre-LN's at the deepest N) and ``holds``: all
    three (Liu et al. 2020, Cor. 1–2, Fig. 4). Each shape must beat the other one: a law
    that any growing curve fits tells nothing."""
    N = np.asarray(res["depths"], dtype=float)
    post, pre = res["post"].mean(1), res["pre"].mean(1)
    out = {"r2_post_n": fit_linear(N, post)[2], "r2_post_log": fit_linear(np.log(N), post)[2],
           "r2_pre_log": fit_linear(np.log(N), pre)[2], "r2_pre_n": fit_linear(N, pre)[2],
           "ratio": float(post[-1] / pre[-1])}
    out["parts"] = {
        "Post-LN grows like N": bool(out["r2_post_n"] >= LAW_R2 and out["r2_post_n"] > out["r2_post_log"]),
        "Pre-LN grows like ln N": bool(out["r2_pre_log"] >= LAW_R2 and out["r2_pre_log"] > out["r2_pre_n"]),
        "Post-LN over 3× Pre-LN at the deepest N": bool(out["ratio"] > 3),
    }
    out["holds"] = all(out["parts"].values())
    return out


# ----------------------------------------------------------------- AD-2: two models, one function?
@torch.no_grad()
def max_output_difference(model_a, model_b, batch) -> float:
    """AD-2: the largest |logit difference| of two models on ``batch`` (eval mode)."""
    outs = []
    for m in (model_a, model_b):
        b = batch.to(next(m.parameters()).device)
        with mode(m):
            if m.cfg.kind == "encoder":
                outs.append(m(src=b.src))
            elif m.cfg.kind == "decoder":
                outs.append(m(tgt_in=b.tgt[:, :-1]))
            else:
                outs.append(m(src=b.src, tgt_in=b.tgt[:, :-1]))
    return float((outs[0] - outs[1]).abs().max())


# ----------------------------------------------------------------- AM-2: the growth laws, fitted
def growth_fits(N, sweeps: dict) -> dict:
    """AM-2's fits of :func:`output_change_sweep` results ``sweeps[kind]`` against depth ``N``:
    per kind and placement, lines against N and ln N and a power law (``fits[kind, pl, form]``,
    form ``"N"``, ``"logN"``, ``"power"``: :func:`tfx.theory.fit.fit_linear` /
    ``fit_loglog`` triples); exponents with 95 % intervals over seeds (``expo[kind, pl]``), the
    same for the measured Σβ²_ii (``expo_sb[pl]``), the exponent of Pre-LN's equal-variance
    law H_{L+1} − 1 with L = 2N (``k_harmonic``), the laws judged: Post-LN's exponent 1 (O(N))
    and Pre-LN's ``k_harmonic`` (O(log N)) inside their intervals (``law[kind, pl]``), and
    Theorem 2: each random-δ interval overlapping its Σβ²_ii's (``thm2[pl]``); and Post-LN's
    mean change over Pre-LN's at each depth (``ratio[kind]``)."""
    from .fit import exponent_interval, fit_loglog, inside, overlap

    N = np.asarray(N, dtype=float)
    fits = {}
    for kind, sw in sweeps.items():
        for pl in ("post", "pre"):
            y = sw[pl].mean(1)
            fits[kind, pl, "N"], fits[kind, pl, "logN"] = fit_linear(N, y), fit_linear(np.log(N), y)
            fits[kind, pl, "power"] = fit_loglog(N, y)
    expo = {(kind, pl): exponent_interval(N, sweeps[kind][pl]) for kind in sweeps for pl in ("post", "pre")}
    expo_sb = {pl: exponent_interval(N, sweeps["random"]["sum_beta_sq"][pl]) for pl in ("post", "pre")}
    kh = fit_loglog(N, [output_change_order("pre", 2 * int(n)) for n in N])[0]
    law = {("random", "post"): inside(expo["random", "post"], 1),
           ("adam", "post"): inside(expo["adam", "post"], 1), ("random", "pre"): inside(expo["random", "pre"], kh)}
    return {"fits": fits, "expo": expo, "expo_sb": expo_sb, "k_harmonic": kh, "law": law,
            "thm2": {pl: overlap(expo["random", pl], expo_sb[pl]) for pl in ("post", "pre")},
            "ratio": {kind: sw["post"].mean(1) / sw["pre"].mean(1) for kind, sw in sweeps.items()}}


def theorem2_fit(sw: dict) -> dict:
    """Theorem 2 checked directly on a random-δ :func:`output_change_sweep` ``sw``: one line
    through the points (Σβ²_ii, output change) of both placements (``slope``, ``intercept``,
    ``r2``; ``points`` per placement), the constant C = change / Σβ²_ii fitted to each alone
    (median over depths, ``C``) and Post-LN's C over Pre-LN's (``c_ratio``)."""
    pts = {pl: (sw["sum_beta_sq"][pl].mean(1), sw[pl].mean(1)) for pl in ("post", "pre")}
    k, c0, r2 = fit_linear(np.concatenate([p[0] for p in pts.values()]),
                           np.concatenate([p[1] for p in pts.values()]))
    C = {pl: float(np.median(y / x)) for pl, (x, y) in pts.items()}
    return {"slope": k, "intercept": c0, "r2": r2, "points": pts, "C": C, "c_ratio": C["post"] / C["pre"]}


def admin_change_reading(sweeps: dict) -> dict:
    """AD-1 on :func:`output_change_sweep` results per perturbation kind (``sweeps[kind]``), at
    the deepest N: Admin / Pre-LN (``admin_over_pre_<kind>``) and Post-LN / Admin
    (``post_over_admin_<kind>``)."""
    v = {}
    for kind, sw in sweeps.items():
        y = {s: sw[s].mean(1)[-1] for s in ("post", "pre", "admin")}
        v |= {f"admin_over_pre_{kind}": float(y["admin"] / y["pre"]),
              f"post_over_admin_{kind}": float(y["post"] / y["admin"])}
    return v


def sgd_matching_lr(eta0: float, change0: float, change_adam: float) -> float:
    """The SGD learning rate whose one-step output change equals ``change_adam``, from one
    SGD step at ``eta0`` that changed the output by ``change0``, if both are in the regime
    where the change grows like η²: η₀·√(c_A / c₀)."""
    if eta0 <= 0 or change0 <= 0 or change_adam < 0:
        raise ValueError(f"eta0={eta0}, change0={change0} must be > 0 and "
                         f"change_adam={change_adam} ≥ 0")
    return eta0 * math.sqrt(change_adam / change0)
