"""What does LayerNorm's Jacobian do to a gradient? (LN-1; Xiong et al. 2020, Lemma 3)

The closed form of ∂LN(x)/∂x and its exact spectral norm ``sqrt(d)/||x - mu||``,
their ``sympy`` derivations, and the same norm measured on any LayerNorm with
autograd (:func:`ln_jacobian_norm`), so the two can be held side by side.

Conventions: ``d`` is the hidden width; the closed forms take LayerNorm without
an affine part (gamma = 1, beta = 0) and with the *biased* variance, exactly like
``torch.nn.functional.layer_norm``:

    LN(x) = (x - mu 1) / sqrt(var(x) + eps),   var(x) = ||x - mu 1||^2 / d.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np
import sympy as sp
import torch
import torch.nn.functional as F


# ----------------------------------------------------------------- the closed form (Borealis eq. 4)
def _centered_and_scale(x: torch.Tensor, eps: float):
    d = x.shape[-1]
    c = x - x.mean(dim=-1, keepdim=True)                       # x - mu 1
    s = torch.sqrt((c * c).sum(dim=-1) + d * eps)              # sqrt(||c||^2 + d eps)
    return c, s, d


def layernorm_jacobian(x: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Closed-form Jacobian dLN(x)/dx of LayerNorm without affine (LN-1).

    Formula (c = x - mu 1 the centred input, s^2 = ||c||^2 + d*eps)::

        J = (sqrt(d) / s) * ( I - 1 1^T / d - c c^T / s^2 )

    With ``eps = 0`` this is the textbook form
    ``(sqrt(d)/||c||) (I - 11^T/d - z z^T)`` with ``z = c/||c||``
    (Xiong et al. 2020, Lemma 3; Borealis tutorial eq. 4).

    Derivation (chain rule, three lines). Write ``v = ||c||^2/d`` so that
    ``LN(x) = c / sqrt(v + eps)`` and ``sqrt(v + eps) = s/sqrt(d)``.

    * centring is the projection ``P = I - 11^T/d``: ``dc/dx = P``;
    * ``dv/dx = (2/d) c^T P = (2/d) c^T`` because ``P c = c``;
    * so ``dLN/dx = P/sqrt(v+eps) - c (v+eps)^(-3/2) c^T / d``
      ``= (sqrt(d)/s) (P - c c^T/s^2)``.

    The eps only enters through ``s``: in the last term the denominator is
    ``s^2`` (not ``||c||^2``), so with eps > 0 the Jacobian no longer kills the
    radial direction exactly. :func:`derive_layernorm_jacobian` re-derives this
    symbolically.

    Args:
        x: tensor of shape ``(..., d)``; leading dimensions are a batch.
        eps: the variance epsilon of LayerNorm (``F.layer_norm``'s ``eps``).

    Returns:
        tensor of shape ``(..., d, d)``; entry ``[..., i, j] = dLN_i/dx_j``.
    """
    c, s, d = _centered_and_scale(x, eps)
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    proj = eye - torch.full((d, d), 1.0 / d, dtype=x.dtype, device=x.device)
    s_ = s[..., None, None]
    radial = c[..., :, None] * c[..., None, :] / s_ ** 2
    return (math.sqrt(d) / s_) * (proj - radial)


def layernorm_jacobian_norm(x: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Spectral norm of the LayerNorm Jacobian, exactly (LN-1)::

        ||J_LN(x)||_2 = sqrt(d) / sqrt(||x - mu||^2 + d*eps)      (d >= 3)

    Xiong et al. (Lemma 3) state ``O(sqrt(d)/||x||)``; it is in fact an equality
    once ``||x||`` is replaced by the norm of the *centred* input (plus the eps
    term). Why: J is symmetric, ``J = (sqrt(d)/s) M`` with
    ``M = I - 11^T/d - c c^T/s^2``. Because ``c`` is orthogonal to ``1``, the
    eigenvectors of M are

    * ``1/sqrt(d)``                 -> eigenvalue 0,
    * ``c/||c||``                   -> eigenvalue ``1 - ||c||^2/s^2 = d*eps/s^2``,
    * anything orthogonal to both   -> eigenvalue 1   (a (d-2)-dim space).

    ``d*eps/s^2 <= 1``, so the largest |eigenvalue| is 1 whenever the
    (d-2)-dimensional block exists, i.e. for ``d >= 3``, and the norm is
    ``sqrt(d)/s``. (For d = 2 only the eps eigenvalue survives, and with
    eps = 0 the Jacobian is zero: a 2-vector normalises to +-(1, -1).) See
    :func:`derive_layernorm_jacobian_spectrum`. The gradient-shrinkage story
    (Borealis) is this formula: inputs with ``||x - mu|| >> sqrt(d)`` pass back
    proportionally smaller gradients.

    Args:
        x: tensor ``(..., d)``.
        eps: LayerNorm's variance epsilon.

    Returns:
        tensor of shape ``(...)``.
    """
    c, s, d = _centered_and_scale(x, eps)
    if d == 1:                       # LN maps everything to 0
        return torch.zeros_like(s)
    top = torch.ones_like(s) if d >= 3 else d * eps / s ** 2
    return math.sqrt(d) / s * top


class LayerNormJacobianDerivation(NamedTuple):
    x: sp.Matrix               # the symbolic input (column vector)
    eps: sp.Symbol
    layernorm: sp.Matrix       # LN(x), built from its definition
    jacobian: sp.Matrix        # sympy's d LN / dx
    closed_form: sp.Matrix     # (sqrt(d)/s) (I - 11^T/d - c c^T / s^2)
    difference: sp.Matrix      # simplify(jacobian - closed_form)
    equal: bool                # difference is the zero matrix


def derive_layernorm_jacobian(d: int = 3, with_eps: bool = True) -> LayerNormJacobianDerivation:
    """Machine derivation of the LayerNorm Jacobian (LN-1).

    Builds ``LN(x) = (x - mu)/sqrt(var + eps)`` for a symbolic ``x`` in R^d
    straight from the definition, lets sympy differentiate it, and subtracts
    the closed form of :func:`layernorm_jacobian`. The returned ``difference``
    simplifies to the zero matrix and ``equal`` is True. Small d only
    (d = 3 takes under a second; d = 5 is still fine).
    """
    xs = sp.symbols(f"x1:{d + 1}", real=True)
    eps = sp.Symbol("epsilon", nonnegative=True) if with_eps else sp.Integer(0)
    x = sp.Matrix(xs)
    ones = sp.ones(d, 1)
    mu = sum(xs) / d
    c = x - mu * ones
    var = (c.T * c)[0] / d
    ln = c / sp.sqrt(var + eps)
    jac = ln.jacobian(x)

    s2 = (c.T * c)[0] + d * eps
    closed = sp.sqrt(d) / sp.sqrt(s2) * (sp.eye(d) - ones * ones.T / d - c * c.T / s2)
    diff = (jac - closed).applyfunc(sp.simplify)
    return LayerNormJacobianDerivation(
        x=x, eps=eps, layernorm=ln, jacobian=jac, closed_form=closed,
        difference=diff, equal=bool(diff.is_zero_matrix),
    )


class LayerNormSpectrum(NamedTuple):
    eigenvalues: dict          # general d: {eigenvalue: multiplicity}, of M = I - 11^T/d - cc^T/s^2
    spectral_norm: sp.Expr     # sqrt(d)/s, the largest singular value of J (d >= 3)
    charpolys: dict            # {d: factored characteristic polynomial of the explicit M}
    checks: dict               # name -> bool; all True


def derive_layernorm_jacobian_spectrum(small_d: Sequence[int] = (3, 4)) -> LayerNormSpectrum:
    """Eigenvalues of the LayerNorm Jacobian, hence its exact spectral norm (LN-1).

    ``J = (sqrt(d)/s) M`` with ``M = I - 11^T/d - c c^T/s^2``,
    ``s^2 = ||c||^2 + d*eps``, ``c = x - mu 1``.

    Argument for general d. ``u = 1/sqrt(d)`` and ``z = c/||c||`` are
    orthonormal (centring makes ``c`` sum to zero), so with ``r = ||c||^2/s^2``
    ``M = I - u u^T - r z z^T``. Hence ``M u = 0``, ``M z = (1 - r) z`` and
    ``M v = v`` for every v orthogonal to u and z. M is symmetric, so that is
    the whole spectrum::

        {0 (x1),  1 - r = d*eps/s^2 (x1),  1 (x d-2)}

    With eps = 0 this is ``{0, 0, 1, ..., 1}``: M is the orthogonal projection
    onto the complement of span{1, z}. Since ``0 <= d*eps/s^2 <= 1`` the top
    singular value of J is ``sqrt(d)/s`` for d >= 3.

    The sympy part checks the general-d claim two ways: (i) symbolically in d,
    the trace and the trace of M^2 (computed from the projector algebra
    ``u^T z = 0``) equal the sum of the claimed eigenvalues and of their
    squares; (ii) for each d in ``small_d`` it builds the explicit matrix from
    a symbolic x and shows that its characteristic polynomial is exactly
    ``lam (lam - d*eps/s^2) (lam - 1)^(d-2)``.
    """
    d, eps, s, r = sp.symbols("d epsilon s r", positive=True)
    lam = sp.Symbol("lambda")
    top = d * eps / s**2
    eig = {sp.Integer(0): 1, top: 1, sp.Integer(1): d - 2}
    checks = {}

    # (i) general d: M = I - P_u - r P_z with P_u P_z = 0, tr P = 1 each.
    #     tr M = d - 1 - r ;  M^2 = I - P_u - (2r - r^2) P_z  =>  tr M^2 = d - 1 - 2r + r^2
    r_val = 1 - top                           # ||c||^2 / s^2
    tr_m = (d - 1 - r).subs(r, r_val)
    tr_m2 = (d - 1 - 2 * r + r**2).subs(r, r_val)
    checks["trace"] = sp.simplify(tr_m - sum(k * m for k, m in eig.items())) == 0
    checks["trace_sq"] = sp.simplify(tr_m2 - sum(k**2 * m for k, m in eig.items())) == 0
    n2 = sp.Symbol("n2", nonnegative=True)   # ||c||^2, so s^2 = n2 + d*eps
    gap = sp.simplify(1 - top.subs(s, sp.sqrt(n2 + d * eps)))   # = n2 / (n2 + d*eps)
    checks["radial_eigenvalue_le_1"] = bool(gap.is_nonnegative)

    # (ii) explicit small d
    charpolys = {}
    for n in small_d:
        xs = sp.symbols(f"x1:{n + 1}", real=True)
        e = sp.Symbol("epsilon", nonnegative=True)
        x = sp.Matrix(xs)
        c = x - (sum(xs) / n) * sp.ones(n, 1)
        s2 = sp.expand((c.T * c)[0]) + n * e
        m = sp.eye(n) - sp.ones(n, n) / n - c * c.T / s2
        p = m.charpoly(lam).as_expr()
        target = lam * (lam - n * e / s2) * (lam - 1) ** (n - 2)
        checks[f"charpoly_d{n}"] = sp.simplify(sp.together(p - target)) == 0
        charpolys[n] = sp.factor(sp.together(p))
    return LayerNormSpectrum(eigenvalues=eig, spectral_norm=sp.sqrt(d) / s,
                             charpolys=charpolys, checks=checks)



# ----------------------------------------------------------------- measured with autograd
def _ln_fn(ln, d, eps):
    """x -> LayerNorm(x): the module ``ln`` if given, else ``F.layer_norm`` without affine."""
    if ln is not None:
        return ln
    return lambda v: F.layer_norm(v, (d,), eps=eps)


def _jacobian_norm_one(f, x, method, iters, tol, seed):
    if method == "exact":
        J = torch.autograd.functional.jacobian(f, x, vectorize=True)
        return float(torch.linalg.matrix_norm(J.detach(), ord=2))
    # power iteration on JᵀJ: v ← Jᵀ(J v) with one jvp and one vjp per step, no d×d matrix
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(x.shape, generator=g, dtype=x.dtype).to(x.device)
    v = v / v.norm()
    sigma = 0.0
    for _ in range(iters):
        _, jv = torch.func.jvp(f, (x,), (v,))
        _, pull = torch.func.vjp(f, x)
        (w,) = pull(jv)
        jv, w = jv.detach(), w.detach()
        new = float(jv.norm())  # ‖J v‖ with ‖v‖ = 1: a lower bound that rises to σ_max
        nw = w.norm()
        if nw == 0:
            return new
        v = w / nw
        if abs(new - sigma) <= tol * max(new, 1e-300):
            return new
        sigma = new
    return sigma


def ln_jacobian_norm(x, ln=None, eps: float = 1e-5, method: str = "auto", iters: int = 100,
                     tol: float = 1e-10, seed: int = 0):
    """Spectral norm ‖∂LN(x)/∂x‖₂ of a LayerNorm at the input ``x``, measured (LN-1).

    ``ln``: an ``nn.LayerNorm`` (its γ, β and eps are used) or None for
    ``F.layer_norm`` with no affine part and variance epsilon ``eps``.
    ``method``: ``"exact"`` builds the d×d Jacobian with autograd and takes its
    largest singular value; ``"power"`` runs power iteration on JᵀJ with one
    forward-mode (jvp) and one reverse-mode (vjp) product per step, never forming
    J, so it works for large d; ``"auto"`` picks exact for d ≤ 512.
    ``x``: a vector (d,) → a float; a batch (..., d) → a numpy array of shape (...).
    Compare with the closed form :func:`layernorm_jacobian_norm`.
    """
    x = torch.as_tensor(x)
    if not x.is_floating_point():
        x = x.float()
    d = x.shape[-1]
    if method == "auto":
        method = "exact" if d <= 512 else "power"
    if method not in ("exact", "power"):
        raise ValueError(f"method={method!r}: choose 'exact', 'power' or 'auto'")
    f = _ln_fn(ln, d, eps)
    flat = x.detach().reshape(-1, d)
    out = [_jacobian_norm_one(f, v.clone(), method, iters, tol, seed) for v in flat]
    return out[0] if x.dim() == 1 else np.asarray(out).reshape(x.shape[:-1])


# ----------------------------------------------------------------- RMSNorm (RN-1; Zhang & Sennrich 2019)
def rmsnorm_jacobian(x: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Closed-form Jacobian dRMS(x)/dx of RMSNorm with unit gain (RN-1, zhang2019rmsnorm)::

        RMS(x) = x / sqrt(||x||^2/d + eps) = sqrt(d) x / s,     s^2 = ||x||^2 + d*eps
        J      = (sqrt(d) / s) * ( I - x x^T / s^2 )

    LayerNorm's Jacobian (:func:`layernorm_jacobian`) with the centring projection
    ``I - 11^T/d`` removed and the centred input c replaced by x itself: with eps = 0,
    ``(sqrt(d)/||x||)(I - x̂ x̂^T)``, x̂ = x/||x||. :func:`derive_rmsnorm_jacobian`
    re-derives it with sympy. ``x``: (..., d); returns (..., d, d)."""
    d = x.shape[-1]
    s = torch.sqrt((x * x).sum(dim=-1) + d * eps)[..., None, None]
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    return (math.sqrt(d) / s) * (eye - x[..., :, None] * x[..., None, :] / s**2)


def rmsnorm_jacobian_norm(x: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Spectral norm of the RMSNorm Jacobian, exactly (RN-1)::

        ||J_RMS(x)||_2 = sqrt(d) / sqrt(||x||^2 + d*eps)      (d >= 2)

    ``J = (sqrt(d)/s)(I - x x^T/s^2)`` is symmetric with eigenvalue ``d*eps/s^2`` along x
    and 1 on the (d-1) directions orthogonal to x: LN-1's formula with ``||x - mu||``
    replaced by ``||x||``. ``x``: (..., d); returns (...)."""
    d = x.shape[-1]
    s = torch.sqrt((x * x).sum(dim=-1) + d * eps)
    top = torch.ones_like(s) if d >= 2 else d * eps / s**2
    return math.sqrt(d) / s * top


class NormJacobianDerivation(NamedTuple):
    x: sp.Matrix          # the symbolic input (column vector)
    norm: sp.Matrix       # the norm's output, built from its definition
    jacobian: sp.Matrix   # sympy's derivative
    closed_form: sp.Matrix
    difference: sp.Matrix  # simplify(jacobian - closed_form)
    equal: bool


def derive_rmsnorm_jacobian(d: int = 3, with_eps: bool = True) -> NormJacobianDerivation:
    """Machine derivation of the RMSNorm Jacobian (RN-1), as :func:`derive_layernorm_jacobian`
    does for LayerNorm: RMS(x) = x / sqrt(||x||^2/d + eps) from the definition, differentiated
    by sympy, minus ``(sqrt(d)/s)(I - x x^T/s^2)``; ``equal`` is True when they agree."""
    xs = sp.symbols(f"x1:{d + 1}", real=True)
    eps = sp.Symbol("epsilon", nonnegative=True) if with_eps else sp.Integer(0)
    x = sp.Matrix(xs)
    ms = (x.T * x)[0] / d
    rms = x / sp.sqrt(ms + eps)
    jac = rms.jacobian(x)
    s2 = (x.T * x)[0] + d * eps
    closed = sp.sqrt(d) / sp.sqrt(s2) * (sp.eye(d) - x * x.T / s2)
    diff = (jac - closed).applyfunc(sp.simplify)
    return NormJacobianDerivation(x, rms, jac, closed, diff, bool(diff.is_zero_matrix))


# ----------------------------------------------------------------- DyT (DY-1; Zhu et al. 2025)
def dyt_jacobian(x: torch.Tensor, alpha: float, gamma: torch.Tensor | None = None) -> torch.Tensor:
    """Jacobian of Dynamic Tanh DyT(x) = γ ⊙ tanh(α x) + β (DY-1, zhu2025dyt): diagonal,

        J = diag( γ α (1 - tanh²(α x)) ),

    each coordinate on its own: no statistic of x enters. ``gamma`` None: γ = 1.
    ``x``: (..., d); returns (..., d, d)."""
    g = torch.ones_like(x) if gamma is None else gamma.to(x) * torch.ones_like(x)
    return torch.diag_embed(g * alpha * (1 - torch.tanh(alpha * x) ** 2))


def dyt_jacobian_norm(x: torch.Tensor, alpha: float, gamma: torch.Tensor | None = None) -> torch.Tensor:
    """Spectral norm of DyT's (diagonal) Jacobian: ``max_k |γ_k α| (1 - tanh²(α x_k))``,
    never above ``|α| max|γ|``, whatever ||x|| (LayerNorm's is sqrt(d)/||x - mu||, unbounded
    as the input shrinks). It falls where units saturate (|α x_k| large). Returns (...)."""
    g = torch.ones_like(x) if gamma is None else gamma.to(x) * torch.ones_like(x)
    return (g * alpha * (1 - torch.tanh(alpha * x) ** 2)).abs().amax(dim=-1)


def derive_dyt_jacobian(d: int = 3) -> NormJacobianDerivation:
    """Machine derivation of DyT's Jacobian (DY-1): γ ⊙ tanh(α x) + β with symbolic α, γ, β,
    differentiated by sympy, minus ``diag(γ α (1 - tanh²(α x)))``."""
    xs = sp.symbols(f"x1:{d + 1}", real=True)
    gs = sp.symbols(f"gamma1:{d + 1}", real=True)
    bs = sp.symbols(f"b1:{d + 1}", real=True)
    a = sp.Symbol("alpha", positive=True)
    x = sp.Matrix(xs)
    dyt = sp.Matrix([g * sp.tanh(a * v) + b for g, v, b in zip(gs, xs, bs)])
    jac = dyt.jacobian(x)
    closed = sp.diag(*[g * a * (1 - sp.tanh(a * v) ** 2) for g, v in zip(gs, xs)])
    diff = (jac - closed).applyfunc(lambda e: sp.simplify(e.rewrite(sp.exp)))
    return NormJacobianDerivation(x, dyt, jac, closed, diff, bool(diff.is_zero_matrix))


def shift_and_gain_norms(d: int = 64, radius: float = 8.0, shift: float = 100.0,
                         seed: int = 0) -> dict:
    """The Jacobian norm of LayerNorm at a centred input of norm ``radius`` and at the same
    input shifted by ``shift`` (``ex1_*``, with the shifted input's plain norm and √d over
    it); RMSNorm's there against √d/‖x‖ (``ex2_*``); a LayerNorm with random gains against the
    bound max|γ|·√d/‖x−μ‖ (``ex3_*``, with the factor √(1 − 1/d − x_k²/‖x‖²) at its largest gain)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(d, generator=g, dtype=torch.float64)
    x = radius * (x - x.mean()) / (x - x.mean()).norm()
    shifted = float((x + shift).norm())
    rms = torch.nn.RMSNorm(d, eps=0.0).double()
    ln = torch.nn.LayerNorm(d, eps=0.0).double()
    with torch.no_grad():
        ln.weight.copy_(1 + 0.5 * torch.randn(d, generator=g, dtype=torch.float64))
    measured = ln_jacobian_norm(x, ln)
    bound = float(ln.weight.detach().abs().max()) * math.sqrt(d) / radius
    k = int(ln.weight.detach().abs().argmax())  # the coordinate with the largest gain
    out = {"ex1_centred": ln_jacobian_norm(x, eps=0.0),
           "ex1_shifted": ln_jacobian_norm(x + shift, eps=0.0),
           "ex1_plain_norm": shifted, "ex1_plain_bound": math.sqrt(d) / shifted,
           "ex2_rms_centred": ln_jacobian_norm(x, rms),
           "ex2_rms_shifted": ln_jacobian_norm(x + shift, rms),
           "ex2_rms_formula": math.sqrt(d) / shifted,
           "ex3_measured": measured, "ex3_bound": bound, "ex3_ratio": measured / bound,
           "ex3_factor": math.sqrt(1 - 1 / d - float(x[k] ** 2 / x.norm() ** 2))}
    return {k: float(v) for k, v in out.items()}
