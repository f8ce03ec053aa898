"""What does each norm do to the stream and its gradient? Normalisation after 2020 at
initialisation (RN-1, DY-1, PL-1; the book's chapter 16).

* DyT (zhu2025dyt) replaces every norm by γ ⊙ tanh(α x) + β: a unit *saturates* when
  |tanh(α x)| is close to 1, where its gradient 1 − tanh² vanishes.
  :func:`saturated_share` is the pure formula (a tensor and an α in, a share out; no
  model, no hooks), :func:`dyt_saturation` reads it at every DyT module of a model.
* Where the norm sits (PL-1; kim2025periln, sun2025curse, olmo2025, wang2022magneto):
  :data:`PLACEMENT_SCHEMES` names the decoder-only variants, :func:`placement_diagnostics` measures
  one at initialisation with the book's probes (:mod:`tfx.theory.hidden`,
  :mod:`tfx.theory.gradients`, :mod:`tfx.theory.change`).
* Depth scalings on one axis: :func:`branch_multipliers` measures the effective multiplier
  of every residual branch relative to the stream it joins, and :func:`depth_factor`
  gives each scheme's derived factor against depth.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..nn.blocks import DYT_SATURATED, DyT, dyt_saturated
from ..nn.constants import deepnorm_constants, tfixup_scale_factors
from ..nn.hooks import attached, loss_on, mode, record_branches, stack_name
from ..nn.model import build_scheme


# ----------------------------------------------------------------- DyT saturation (DY-1)
saturated = dyt_saturated  # where DyT saturates: one formula, in the model wing (the training probe uses it)


def saturated_share(x, alpha, threshold: float = DYT_SATURATED) -> float:
    """The share of the entries of ``x`` that DyT saturates (:func:`saturated`). There DyT's
    derivative γ α (1 − tanh²(α x)) is below ``|γ α| (1 − threshold²)`` (2 % of its largest
    value for 0.99). Pure: no model, no hooks (zhu2025dyt)."""
    x = torch.as_tensor(x)
    return float(saturated(x.double(), float(alpha), threshold).double().mean())


def saturated_share_gaussian(alpha, sigma, threshold: float = DYT_SATURATED):
    """:func:`saturated_share` predicted for x ~ N(0, σ²)::

        P(|tanh(α x)| > t) = P(|x| > artanh(t)/α) = erfc( artanh(t) / (√2 α σ) )

    a function of α σ only: doubling the input's scale is the same as doubling α."""
    a = np.asarray(alpha, dtype=float) * np.asarray(sigma, dtype=float)
    out = np.vectorize(math.erfc)(math.atanh(threshold) / (math.sqrt(2) * a))
    return float(out) if out.ndim == 0 else out


@torch.no_grad()
def dyt_inputs(model, batch) -> dict:
    """``{module name: (input, α)}`` for every DyT module of ``model``, in forward order, from
    one forward pass of the training objective on ``batch`` (eval mode, forward hooks)."""
    found = {}

    def keep(name):
        def hook(module, args, kwargs, out):
            found[name] = (args[0].detach(), float(module.alpha))
        return hook

    hooks = [(m, keep(n)) for n, m in model.named_modules() if isinstance(m, DyT)]
    if not hooks:
        raise ValueError("the model has no DyT module: build it with norm='dyt'")
    with attached(hooks, "forward"), mode(model):
        loss_on(model, batch)
    return found


def dyt_saturation(model, batch, threshold: float = DYT_SATURATED) -> dict:
    """DY-1 in a model: ``{module name: saturated share}`` for every DyT module, in forward
    order: :func:`saturated_share` of each module's input at its current α, from one forward
    pass on ``batch`` (:func:`dyt_inputs`)."""
    return {n: saturated_share(x, a, threshold) for n, (x, a) in dyt_inputs(model, batch).items()}


# ----------------------------------------------------------------- where the norm sits (PL-1)
# The decoder-only variants chapter 16 compares, keys of tfx.nn.config.SCHEMES: x_i = N(x + f(x))
# (post), x + f(N(x)) (pre), x + N(f(N(x))) (peri-ln), x + N(f(x)) (output-norm, OLMo 2),
# x + f(N(x)) with N inside f (sub-ln), x + f(N(x)/√ℓ) (ln-scaling), x + f(DyT(x)) (dyt).
PLACEMENT_SCHEMES = ("post", "pre", "peri-ln", "output-norm", "sub-ln", "ln-scaling", "dyt")


def placement_diagnostics(scheme: str, n_layers: int, task, batch, seed: int = 0,
                          scale: float = 1e-2, **model_kw) -> dict:
    """PL-1 at initialisation for one fresh decoder-only LM of ``scheme`` (a key of
    :data:`tfx.nn.config.SCHEMES`, e.g. of :data:`PLACEMENT_SCHEMES`) with ``n_layers`` layers:

    * ``'stream'``: E‖x_ℓ‖²/d, the residual stream's mean square per coordinate after each
      layer ℓ = 1…N (:func:`tfx.theory.hidden.hidden_norms`'s ``'output'``; for Post-LN
      after its norm);
    * ``'grad_ratio'``: ‖∂L/∂W₂^{(N)}‖ / ‖∂L/∂W₂^{(1)}‖, last over first layer's FFN output
      weight (:func:`tfx.theory.gradients.layer_grad_norms`);
    * ``'rel_change'``: ‖F(W) − F(W + δ)‖² / ‖F(W)‖² for a random δ of ``scale`` × each
      matrix's std (:func:`tfx.theory.change.output_change`), F the stack's output."""
    from .change import output_change, perturbation_seed, stack_output
    from .gradients import layer_grad_norms
    from .hidden import hidden_norms

    m = build_scheme(scheme, task, 0, n_layers, batch=batch, seed=seed, **model_kw)
    d = m.cfg.d_model
    stream = hidden_norms(m, batch)["output"] / d
    g = layer_grad_norms(m, batch)
    with torch.no_grad(), mode(m):
        f_sq = float(stack_output(m, batch).pow(2).sum(-1).mean())
    change = output_change(m, batch, "random", scale=scale, seed=perturbation_seed(seed))
    return {"stream": stream, "grad_ratio": float(g[-1] / g[0]), "rel_change": change / f_sq}


# ----------------------------------------------------------------- depth scalings on one axis
# The decoder-only LMs compared (init-time only), keys of tfx.nn.config.SCHEMES
DEPTH_SCHEMES = ("pre", "rezero", "deepnorm", "admin", "t-fixup", "ln-scaling", "depth-mup")


@torch.no_grad()
def branch_multipliers(model, batch, stack: str | None = None) -> dict:
    """The effective multiplier of every residual branch relative to the stream it joins,
    measured: for sub-layer i, ``std(b · f_i) / std(a · x_{i-1})`` with a, b the factors the
    placement puts on the shortcut and the branch (a = α for DeepNorm, ω_i for Admin,
    b = α_i for ReZero, else 1), x_{i-1} the stream entering, f_i its branch output
    (``tfx.nn.hooks.record_branches``). One forward pass on ``batch``, eval mode.
    Returns ``{"names": [...], "ratio": array}`` in forward order for ``stack`` (default:
    the stack that produces the output)."""
    stack = stack_name(model, stack)
    residuals = dict(model.stacks()[stack].residuals())
    with mode(model), record_branches(model) as rec:
        loss_on(model, batch)
    names, ratio = [], []
    for r in rec[stack]:
        res = residuals[r["name"]]
        x, f = r["x"].double(), r["f"].double()
        if res.placement == "deepnorm":
            x = x * float(res.alpha)
        elif res.placement == "admin":
            x = x * res.omega.double()
        elif res.placement == "rezero":
            f = f * float(res.alpha)
        names.append(r["name"])
        ratio.append(float(f.std() / x.std()))
    return {"names": names, "ratio": np.array(ratio)}


def depth_factor(scheme: str, N) -> np.ndarray:
    """The factor a scheme puts on a residual branch relative to the stream, against the
    number of layers N of a decoder-only stack (L = 2N sub-layers), up to a constant that
    does not depend on N (the branch's own gain at unit scale). Derived in chapter 16:

    * ``"deepnorm"``    β²/α: two β-scaled matrices on the branch, α on the shortcut;
                        β = (8N)^(-1/4), α = (2N)^(1/4) → ∝ N^(-3/4) (wang2022deepnet)
    * ``"t-fixup"``     s², s = (9N)^(-1/4) on v/out or fc1/fc2, no norm → (9N)^(-1/2)
    * ``"depth-mup"``   1/√L = (2N)^(-1/2) on every branch (yang2023depthmup), times Pre-LN's
                        own multiplier of the branch: the depth-μP model is Pre-LN with
                        ``depth_mup=True``; returned: (2N)^(-1/2)
    * ``"pre"``, ``"admin"``  no explicit factor: the last branch meets a stream (Pre-LN)
                        or a shortcut ω (Admin) of variance ≈ 1 + (L−1)c, so its multiplier
                        falls as L^(-1/2) only asymptotically; returned: (2N)^(-1/2)
    * ``"ln-scaling"``  (Pre-LN, 1/√ℓ) the last layer's branch × N^(-1/2) against a stream
                        of variance ≈ 1 + c·2·H_N (H_N the harmonic number): not a power law;
                        returned with c = 1: N^(-1/2) / sqrt(1 + 2 H_N)
    * ``"rezero"``      α = 0: zero at every depth (not drawable on a log axis).

    ``scheme``: one of :data:`DEPTH_SCHEMES` (keys of :data:`tfx.nn.config.SCHEMES`).
    """
    N = np.asarray(N, dtype=float)
    if scheme == "deepnorm":
        return np.array([deepnorm_constants(0, int(n))["decoder"]["beta"] ** 2
                         / deepnorm_constants(0, int(n))["decoder"]["alpha"] for n in N.ravel()]).reshape(N.shape)
    if scheme == "t-fixup":
        return np.array([tfixup_scale_factors(0, int(n))["decoder"]["weights"] ** 2
                         for n in N.ravel()]).reshape(N.shape)
    if scheme in ("depth-mup", "pre", "admin"):
        return (2 * N) ** -0.5
    if scheme == "ln-scaling":
        H = np.array([sum(1 / k for k in range(1, int(n) + 1)) for n in N.ravel()]).reshape(N.shape)
        return N ** -0.5 / np.sqrt(1 + 2 * H)
    if scheme == "rezero":
        return np.zeros_like(N)
    raise ValueError(f"scheme={scheme!r}: choose one of {', '.join(DEPTH_SCHEMES)}")


def depth_multipliers(scheme: str, n_layers: int, task, batch, seed: int = 0, **model_kw) -> np.ndarray:
    """:func:`branch_multipliers` of one fresh decoder-only LM of ``scheme`` (e.g. one of
    :data:`DEPTH_SCHEMES`) with ``n_layers`` layers; ``batch`` is also Admin's profiling batch."""
    m = build_scheme(scheme, task, 0, n_layers, batch=batch, seed=seed, **model_kw)
    return branch_multipliers(m, batch)["ratio"]


__all__ = ["saturated_share", "saturated_share_gaussian", "dyt_inputs", "dyt_saturation", "PLACEMENT_SCHEMES",
           "placement_diagnostics", "DEPTH_SCHEMES", "branch_multipliers", "depth_factor", "depth_multipliers",
           "placement_summary", "depth_slopes"]


def placement_summary(pl: dict, depths, seeds: int) -> dict:
    """From :func:`placement_diagnostics` results ``pl[(scheme, N, seed)]``: per scheme
    ``stream`` (mean square per layer at the deepest N, mean of seeds), ``slope`` (its growth
    per layer, ``fit.fit_linear``), ``rows`` (slope, after layer 1, at the top, median last ÷
    first FFN gradient, median output change, its growth from the shallowest N); and 1/√ℓ's
    top over Pre-LN's and R² of its stream against the harmonic number H_ℓ."""
    from .fit import fit_linear

    layers = np.arange(1, depths[-1] + 1)

    def across(name, key, n):
        return np.array([pl[name, n, s][key] for s in range(seeds)])

    schemes = list(dict.fromkeys(k[0] for k in pl))
    stream = {n: across(n, "stream", depths[-1]).mean(0) for n in schemes}
    slope = {n: fit_linear(layers, v)[0] for n, v in stream.items()}
    change = {n: np.median(across(n, "rel_change", depths[-1])) for n in schemes}
    rows = {n: (slope[n], float(stream[n][0]), float(stream[n][-1]),
                float(np.median(across(n, "grad_ratio", depths[-1]))), float(change[n]),
                change[n] / np.median(across(n, "rel_change", depths[0]))) for n in schemes}
    return {"stream": stream, "slope": slope, "rows": rows, "across": across,
            "scaled_over_pre": float(stream["ln-scaling"][-1] / stream["pre"][-1]),
            "scaled_r2_H": fit_linear(np.cumsum(1 / layers), stream["ln-scaling"])[2]}


def depth_slopes(mult: dict, depths) -> dict:
    """Log-log slopes of the last branch's multiplier m_L against N (``mult[scheme]``: depths ×
    seeds), ``measured`` (mean over seeds) and ``derived`` (:func:`depth_factor`); ReZero
    (zero at every depth) has none."""
    from .fit import fit_loglog

    ns = np.array(depths, dtype=float)
    measured = {n: fit_loglog(ns, m.mean(1))[0] for n, m in mult.items() if n != "rezero"}
    return {"measured": measured,
            "derived": {n: fit_loglog(ns, depth_factor(n, ns))[0] for n in measured}}
