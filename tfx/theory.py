"""What the papers *predict*: closed forms and machine derivations.

Nothing in this module looks at a model. Every function is either a formula
(numbers in, numbers out), a small ``sympy`` derivation that re-derives the
formula from scratch, or a least-squares helper used to put a measurement next
to a formula. Measuring a model is the job of :mod:`tfx.probes`.

Each docstring names the claim it backs (ids from ``claims.md``: LN-1, AM-2,
...) and the paper it comes from:

* Xiong et al. 2020, *On Layer Normalization in the Transformer Architecture*
  (LN-1 ... LN-4);
* Liu et al. 2020, *Understanding the Difficulty of Training Transformers*
  (AM-2, AD-1), plus the profiling-free rule of their ``admin-torch`` package;
* Xu et al. 2020, *Lipschitz Constrained Parameter Initialization for Deep
  Transformers* (LP-1 ... LP-3);
* Huang et al. 2020, T-Fixup (TF-1, TF-2);
* Wang et al. 2022, DeepNet / DeepNorm (the book's extension).

Conventions: ``d`` is the hidden width; LayerNorm has no affine part
(gamma = 1, beta = 0) and uses the *biased* variance, exactly like
``torch.nn.functional.layer_norm``:

    LN(x) = (x - mu 1) / sqrt(var(x) + eps),   var(x) = ||x - mu 1||^2 / d.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np
import sympy as sp
import torch

__all__ = [
    # LN-1
    "layernorm_jacobian",
    "layernorm_jacobian_norm",
    "derive_layernorm_jacobian",
    "derive_layernorm_jacobian_spectrum",
    # LN-2
    "relu_norm_sq_expectation",
    "derive_relu_norm_sq",
    # LN-3, LN-4
    "post_ln_hidden_norm_sq",
    "pre_ln_hidden_norm_sq_bounds",
    "last_ffn_grad_scaling",
    "expected_exponent",
    # AM-2, AD-1
    "output_change_order",
    "admin_beta_diag_sq",
    "admin_omega_profiling_free",
    # fits
    "fit_linear",
    "fit_loglog",
    # LP-1 ... LP-3
    "derive_v1_residual_scale",
    "std_bound_on_interval",
    "derive_std_bound_on_interval",
    "lipschitz_init_bounds",
    # TF-1, TF-2
    "tfixup_condition",
    "tfixup_scale_factors",
    # DeepNorm
    "deepnorm_constants",
]


# ---------------------------------------------------------------------------
# LN-1: the Jacobian of LayerNorm (Xiong et al. Lemma 3; Borealis eq. 4)
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# LN-2: Lemma 1 of Xiong et al.
# ---------------------------------------------------------------------------

def relu_norm_sq_expectation(d: int, sigma: float) -> float:
    """E ||ReLU(X)||^2 for X ~ N(0, sigma^2 I_d) (LN-2; Xiong et al. Lemma 1)::

        E ||ReLU(X)||^2 = sigma^2 d / 2

    Each coordinate is symmetric about 0, so ReLU keeps exactly the half of
    the second moment that lives on x > 0; the d coordinates add up
    (:func:`derive_relu_norm_sq`). This is the "1/2" that makes an FFN
    sub-layer add d/2 to the squared hidden norm in Lemma 2.
    """
    return sigma**2 * d / 2


class ReluDerivation(NamedTuple):
    integrand: sp.Expr
    per_coordinate: sp.Expr    # sigma^2 / 2
    total: sp.Expr             # sigma^2 d / 2


def derive_relu_norm_sq() -> ReluDerivation:
    """sympy: the 1-D integral behind Lemma 1 (LN-2)::

        E[ReLU(X)^2] = int_0^inf x^2 phi_sigma(x) dx = sigma^2 / 2,
        phi_sigma(x) = exp(-x^2/(2 sigma^2)) / (sigma sqrt(2 pi)),

    and by linearity over independent coordinates ``E||ReLU(X)||^2 = d sigma^2/2``.
    """
    x = sp.Symbol("x", real=True)
    sigma = sp.Symbol("sigma", positive=True)
    d = sp.Symbol("d", positive=True, integer=True)
    phi = sp.exp(-x**2 / (2 * sigma**2)) / (sigma * sp.sqrt(2 * sp.pi))
    integrand = x**2 * phi
    per = sp.simplify(sp.integrate(integrand, (x, 0, sp.oo)))
    return ReluDerivation(integrand=integrand, per_coordinate=per, total=d * per)


# ---------------------------------------------------------------------------
# LN-3: Lemma 2 of Xiong et al. (hidden-state norms at initialisation)
# ---------------------------------------------------------------------------

_LEMMA2_SETTING = """
    Simplified setting of the lemma (Xiong et al. §3.3): single-head attention;
    all of W^Q, W^K, W^V, W^1, W^2 are d x d; W^Q = W^K = 0 so every query
    attends uniformly and the attention output is (1/n) sum_j LN-input_j W^V;
    weights Xavier-normal, i.e. N(0, 2/(d+d)) = N(0, 1/d); biases 0; LayerNorm
    gamma = 1, beta = 0, eps = 0; input vectors Gaussian. Expectations are over
    the input and the initialisation.
"""


def post_ln_hidden_norm_sq(d: int) -> float:
    """E ||x_l^{post,5}||^2 = 1.5 d in a Post-LN Transformer at init (LN-3).

    Which vector. In Xiong et al.'s Table 1 a Post-LN layer l computes
    ``x^{post,3} = LN(x + Attn(x))``, then ``x^{post,4} = FFN(x^{post,3})``,
    then ``x^{post,5} = x^{post,3} + x^{post,4}`` and finally
    ``x_{l+1} = LN(x^{post,5})``. So 1.5 d is the squared norm of the
    *FFN residual sum*, the input of the LayerNorm that closes layer l. It is
    not about ``x_{l+1}`` itself, whose squared norm is exactly d (a LayerNorm
    output with eps = 0 always has ``||y||^2 = d``); and it is the same for
    every l because the preceding LN resets the scale.

    Derivation sketch. ``||x^{post,3}||^2 = d`` exactly. Given it,
    ``x^{post,3} W^1`` has i.i.d. ``N(0, ||x^{post,3}||^2/d) = N(0, 1)``
    coordinates, so ``E||ReLU(.)||^2 = d/2`` (Lemma 1); multiplying by a fresh
    ``W^2 ~ N(0, 1/d)`` keeps the expected squared norm, so
    ``E||x^{post,4}||^2 = d/2``. The cross term ``2<x^{post,3}, x^{post,4}>``
    has mean 0 (W^2 is zero-mean and independent). Total: d + d/2 = 1.5 d.
    """
    return 1.5 * d


if post_ln_hidden_norm_sq.__doc__:  # absent under python -OO
    post_ln_hidden_norm_sq.__doc__ += _LEMMA2_SETTING


def pre_ln_hidden_norm_sq_bounds(l: int, d: int, input_norm_sq: float | None = None
                                 ) -> tuple[float, float]:
    """Bounds on E ||x_l^{pre}||^2 in a Pre-LN Transformer at init (LN-3)::

        (1 + l/2) d  <=  E ||x_l^{pre}||^2  <=  (1 + 3l/2) d

    Here ``l`` is the number of Pre-LN blocks the vector has gone through and
    the input has ``E||x_0||^2 = d`` (unit-variance coordinates). Xiong et al.
    index layers so that block l maps x_l to x_{l+1} and call x_0 the
    embedding, which is off by one for l >= 1; the bounds are right when read
    as "after l blocks". If the input norm differs, pass ``input_norm_sq``:
    the bounds become ``input_norm_sq + (l/2) d`` and
    ``input_norm_sq + (3l/2) d``.

    Derivation sketch. A block adds two residual branches to the stream,
    ``x <- x + a + f`` with ``a = mean_j LN(x_j) W^V`` (uniform attention) and
    ``f = FFN(LN(x + a))``. Both branches end in a fresh zero-mean weight
    matrix, so every cross term has mean 0 and squared norms add.
    ``E||f||^2 = d/2`` exactly (an LN output has norm^2 d, then Lemma 1).
    ``E||a||^2 = E||mean_j LN(x_j)||^2``, which lies between 0 (the LN outputs
    cancel) and d (they all coincide; convexity of the norm). So each block
    adds between d/2 and 3d/2. The norm grows *linearly* in depth, which is
    what makes the final LN shrink gradients by 1/sqrt(L) (LN-4).
    """
    if l < 0:
        raise ValueError("l must be >= 0")
    base = d if input_norm_sq is None else input_norm_sq
    return base + 0.5 * l * d, base + 1.5 * l * d


if pre_ln_hidden_norm_sq_bounds.__doc__:  # absent under python -OO
    pre_ln_hidden_norm_sq_bounds.__doc__ += _LEMMA2_SETTING


# ---------------------------------------------------------------------------
# LN-4: Theorem 1 of Xiong et al. (gradient of the last FFN weight)
# ---------------------------------------------------------------------------

def _placement(placement: str) -> str:
    p = placement.lower().replace("_", "-")
    for suffix in ("-ln", "ln"):
        if p.endswith(suffix) and p != suffix:
            p = p[: -len(suffix)]
            break
    if p not in ("post", "pre", "admin"):
        raise ValueError(f"unknown placement {placement!r}; use 'post', 'pre' or 'admin'")
    return p


def expected_exponent(placement: str) -> float:
    """Predicted exponent k in ``||dL/dW^{2,L}||_F ~ L^k`` (LN-4).

    ``"post"`` -> 0.0 and ``"pre"`` -> -0.5. This is what a log-log fit of
    measured gradient norms against depth (:func:`fit_loglog`) is compared to.
    """
    p = _placement(placement)
    if p == "post":
        return 0.0
    if p == "pre":
        return -0.5
    raise ValueError("Theorem 1 of Xiong et al. covers 'post' and 'pre' only")


def last_ffn_grad_scaling(placement: str, L) -> float | np.ndarray:
    """Relative size of ``||dL~/dW^{2,L}||_F`` as a function of depth L (LN-4).

    Xiong et al. Theorem 1 (with high probability, under the Lemma 2 setting
    and a concentration assumption on the hidden norms)::

        Post-LN:  ||dL~/dW^{2,L}||_F <= O(d sqrt(ln d))          -> L^0
        Pre-LN:   ||dL~/dW^{2,L}||_F <= O(d sqrt(ln d / L))      -> L^(-1/2)

    Only the L-dependence is returned (``L ** expected_exponent``); the common
    ``d sqrt(ln d)`` factor and constants are dropped. Mechanism: the gradient
    reaching W^{2,L} has passed through one LayerNorm whose Jacobian norm is
    ``sqrt(d)/||input||`` (LN-1). In Post-LN that input is x_L^{post,5} with
    ``E||.||^2 = 1.5 d`` whatever L is (LN-3); in Pre-LN it is the final
    LN's input, whose squared norm grows like L d (LN-3), so the gradient is
    scaled by ``1/sqrt(L)``. The ``d sqrt(ln d)`` comes from high-probability
    bounds on the Gaussian quantities involved and does not depend on L. The
    paper's measurement (Fig. 3c) puts the Post-LN value near 1.6 for 6 to
    14 layers.
    """
    return np.asarray(L, dtype=float) ** expected_exponent(placement) if np.ndim(L) \
        else float(L) ** expected_exponent(placement)


# ---------------------------------------------------------------------------
# AM-2, AD-1: Liu et al. Theorem 2, Corollaries 1-2, Admin
# ---------------------------------------------------------------------------

def admin_beta_diag_sq(i) -> float:
    """beta^2_{i,i} = 1/i after Admin initialisation (AD-1; Liu et al. §4.3).

    ``beta_{i,j}`` is the weight of the (variance-normalised) output of
    residual branch j in the normalised output of sub-layer i. Admin uses
    ``x_i = LN(x_{i-1} * omega_i + f_i(x_{i-1}))`` with
    ``omega_i^2 = sum_{j<i} Var[f_j]``: if every branch has the same output
    variance, the shortcut carries variance ``(i-1)`` units against 1 unit
    for the new branch, so the new branch's share is ``1/i``, the same
    profile as Pre-LN (where the stream is a plain sum of i branches).
    """
    return 1.0 / np.asarray(i, dtype=float) if np.ndim(i) else 1.0 / float(i)


def output_change_order(placement: str, N: int) -> float:
    """Predicted output change under a parameter perturbation (AM-2).

    Liu et al. Theorem 2: at init, if the layer dependencies ``beta_{i,j}``
    do not move when W -> W* = W + delta (delta independent of W), and the
    sub-layers' perturbations contribute independently, then::

        Var[F(x0, W) - F(x0, W*)]  ~=  C * sum_{i=1}^{N} beta_{i,i}^2.

    With equal branch variances:

    * Post-LN: beta^2_{i,i} is a constant (it depends on the own branch and a
      freshly normalised shortcut only) -> sum = const * N = O(N) (Cor. 2);
    * Pre-LN and Admin: beta^2_{i,i} = 1/i -> sum = H_N = ln N + 0.5772... +
      O(1/N) = O(log N) (Cor. 1).

    Returns ``sum_i beta^2_{i,i}`` with C = 1 and, for Post-LN, the constant
    beta^2 taken as 1 (it is absorbed into C): ``N`` for ``"post"``, the
    harmonic number ``H_N`` for ``"pre"`` / ``"admin"``. N counts sub-layers
    (two per encoder layer). Compare measurements with :func:`fit_linear`
    against N (Post-LN) or against ln N (Pre-LN); the paper reports R^2 = 0.99
    for random perturbations and 0.75 with Adam updates.
    """
    if N < 1:
        raise ValueError("N must be >= 1")
    p = _placement(placement)
    if p == "post":
        return float(N)
    return float(sum(1.0 / i for i in range(1, N + 1)))


def admin_omega_profiling_free(n) -> float:
    """Profiling-free Admin shortcut scale of the authors' ``admin-torch``::

        omega = sqrt( (n + 1) / ln(n + 1) - 1 )

    n is the total number of residual sub-layers (2 per encoder layer, 3 per
    decoder layer). This is the package's default ("O(logn)" output change),
    used instead of the profiling pass of §4.3 (AD-1); n must be >= 1.
    """
    n = np.asarray(n, dtype=float)
    if np.any(n < 1):
        raise ValueError("n must be >= 1")
    out = np.sqrt((n + 1) / np.log(n + 1) - 1)
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------------
# Fits used to hold measurements against the forms above
# ---------------------------------------------------------------------------

def _r2(y: np.ndarray, y_hat: np.ndarray) -> float:
    ss_res = float(np.sum((y - y_hat) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    tiny = 1e-24 * max(float(np.sum(y**2)), 1e-300)   # rounding-level spread
    if ss_tot <= tiny:               # constant data: the fitted line reproduces it
        return 1.0 if ss_res <= tiny else 0.0
    return 1.0 - ss_res / ss_tot


def fit_linear(xs, ys) -> tuple[float, float, float]:
    """Least-squares line ``y = slope * x + intercept``; returns ``(slope, intercept, r2)``.

    ``r2 = 1 - SS_res / SS_tot`` with ``SS_res = sum (y - y_hat)^2`` and
    ``SS_tot = sum (y - mean y)^2`` (1.0 for exactly fitted constant data).
    Used for AM-2 (Post-LN change against N; Pre-LN change against ln N).
    """
    x = np.asarray(xs, dtype=float).ravel()
    y = np.asarray(ys, dtype=float).ravel()
    if x.size != y.size or x.size < 2:
        raise ValueError("need at least two (x, y) pairs of equal length")
    A = np.stack([x, np.ones_like(x)], axis=1)
    (slope, intercept), *_ = np.linalg.lstsq(A, y, rcond=None)
    return float(slope), float(intercept), _r2(y, A @ np.array([slope, intercept]))


def fit_loglog(xs, ys) -> tuple[float, float, float]:
    """Power-law fit ``y = prefactor * x^exponent``; returns ``(exponent, prefactor, r2)``.

    A straight line through ``(ln x, ln y)``; ``r2`` is computed in that log
    space. Used for LN-1 (||J|| against ||x||: exponent -1) and LN-4
    (gradient norm against depth: 0 for Post-LN, -1/2 for Pre-LN). All values
    must be positive.
    """
    x = np.asarray(xs, dtype=float).ravel()
    y = np.asarray(ys, dtype=float).ravel()
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("fit_loglog needs positive xs and ys")
    k, b, r2 = fit_linear(np.log(x), np.log(y))
    return k, float(np.exp(b)), r2


# ---------------------------------------------------------------------------
# LP-1 ... LP-3: Xu et al. (Lipschitz-constrained initialisation)
# ---------------------------------------------------------------------------

class V1ResidualDerivation(NamedTuple):
    out_v1: sp.Expr               # LN(in_res + in_model), per coordinate
    out_v2: sp.Expr               # in_res + in_model
    residual_coefficient: sp.Expr  # d out_v1 / d in_res  = w / sigma
    identity_difference: sp.Expr   # out_v1 - [(w/sigma) out_v2 - (w/sigma) mu + b] = 0


def derive_v1_residual_scale() -> V1ResidualDerivation:
    """sympy: in computation order v1 the carried residual is scaled by w/sigma (LP-1).

    Xu et al. Table 2. Per coordinate, with mu and sigma the mean and std of
    ``in_model + in_res`` and (w, b) the LayerNorm affine parameters:

    * v1 (the paper's order: LN after the sum, and the LN output is what the
      next sub-layer receives as its residual): ``out_v1 = w (in_model + in_res - mu)/sigma + b``;
    * v2 (official code: the sum itself is carried on): ``out_v2 = in_res + in_model``.

    Expanding, ``out_v1 = (w/sigma) out_v2 - (w/sigma) mu + b``: the residual
    carried to the next layer enters with coefficient ``w/sigma``. At init
    w = 1, so whenever ``sigma > 1`` each v1 layer shrinks what it carries, and
    over k layers the factor compounds to ``prod w/sigma``. The Lipschitz
    initialisation (LP-2, LP-3) keeps ``sigma <= 1`` so this factor is >= 1.
    """
    in_res, in_model, mu, b, w = sp.symbols("in_res in_model mu b w", real=True)
    sigma = sp.Symbol("sigma", positive=True)
    out_v1 = w * (in_model + in_res - mu) / sigma + b
    out_v2 = in_res + in_model
    coeff = sp.diff(out_v1, in_res)
    ident = sp.simplify(out_v1 - ((w / sigma) * out_v2 - (w / sigma) * mu + b))
    return V1ResidualDerivation(out_v1, out_v2, sp.simplify(coeff), ident)


def std_bound_on_interval(a: float, b: float, tight: bool = False) -> float:
    """Upper bound on the standard deviation of any distribution on [a, b] (LP-2).

    * ``tight=False`` (Xu et al. eqs. 2-6): ``sigma < b - a``. Their argument:
      ``|x - E x| <= b - a`` pointwise, so the variance is below ``(b - a)^2``.
      Hence ``b - a <= 1`` gives ``sigma <= 1``, which is all they need.
    * ``tight=True`` (Popoviciu's inequality): ``sigma <= (b - a)/2``, attained
      by mass 1/2 at each end point. The paper's bound is loose by a factor 2
      but points the same way; see :func:`derive_std_bound_on_interval`.
    """
    if b < a:
        raise ValueError("need a <= b")
    return (b - a) / 2 if tight else (b - a)


class StdBoundDerivation(NamedTuple):
    bhatia_davis: sp.Expr     # Var <= (b - m)(m - a) given the mean m
    worst_mean: sp.Expr       # argmax_m: (a + b)/2
    tight_var: sp.Expr        # (b - a)^2 / 4
    tight_std: sp.Expr        # (b - a)/2
    paper_std: sp.Expr        # b - a
    two_point_var: sp.Expr    # variance of p*delta_b + (1-p)*delta_a at p = 1/2
    checks: dict


def derive_std_bound_on_interval() -> StdBoundDerivation:
    """sympy proof of the variance bound on an interval (LP-2).

    For X in [a, b] with mean m and second moment q: ``(X - a)(b - X) >= 0``
    pointwise, so its expectation ``-q + (a + b) m - a b`` is >= 0. With
    ``Var = q - m^2`` this rearranges to ``Var <= (b - m)(m - a)``
    (Bhatia-Davis). The right side is largest at ``m = (a + b)/2``, giving
    ``Var <= (b - a)^2/4`` (Popoviciu), i.e. ``sigma <= (b - a)/2``. The
    two-point distribution with mass 1/2 at a and at b attains it, so the
    bound is tight, while Xu et al.'s ``sigma < b - a`` is a factor 2 loose.
    """
    a, b, m, q, p = sp.symbols("a b m q p", real=True)
    var = q - m**2
    e_product = sp.expand(-q + (a + b) * m - a * b)          # E[(X-a)(b-X)]
    # E[(X-a)(b-X)] >= 0  <=>  var <= (b-m)(m-a):  the two sides differ by exactly e_product
    bd = (b - m) * (m - a)
    checks = {"bhatia_davis_identity": sp.simplify(bd - var - e_product) == 0}
    worst = sp.solve(sp.diff(bd, m), m)[0]
    tight_var = sp.factor(bd.subs(m, worst))
    two_pt_mean = p * b + (1 - p) * a
    two_pt_var = sp.factor(p * b**2 + (1 - p) * a**2 - two_pt_mean**2)   # p(1-p)(b-a)^2
    two_pt_half = sp.factor(two_pt_var.subs(p, sp.Rational(1, 2)))
    checks["worst_mean_is_midpoint"] = sp.simplify(worst - (a + b) / 2) == 0
    checks["popoviciu"] = sp.simplify(tight_var - (b - a)**2 / 4) == 0
    checks["attained"] = sp.simplify(two_pt_half - tight_var) == 0
    return StdBoundDerivation(bhatia_davis=bd, worst_mean=worst, tight_var=tight_var,
                              tight_std=(b - a) / 2, paper_std=b - a,
                              two_point_var=two_pt_half, checks=checks)


def lipschitz_init_bounds(esize: int, vsize: int, isize: int) -> tuple[float, float]:
    """Uniform-init half-widths of Xu et al. §4 (LP-3)::

        e = sqrt(2 / (esize + vsize))    embeddings  ~ U(-e, e)
        l = sqrt(1 / isize)              linear weights ~ U(-l, l)

    esize: embedding width, vsize: vocabulary size, isize: input width of the
    linear layer. Returns ``(e, l)``.
    """
    return math.sqrt(2.0 / (esize + vsize)), math.sqrt(1.0 / isize)


# ---------------------------------------------------------------------------
# TF-1, TF-2: T-Fixup (Huang et al. 2020)
# ---------------------------------------------------------------------------

def tfixup_condition(v_norm, w_norm, m_norm):
    """Left side of the T-Fixup condition for an attention block (TF-1)::

        ||v||^2 ||w||^2 + ||w||^2 ||m||^2 + ||v||^2 ||m||^2   (target: Theta(1/L))

    v: value projection, w: output (mixing) projection, m: the value input
    (embeddings). Huang et al. show that keeping this at Theta(1/L) for an
    L-layer stack bounds the output change of one SGD step without LayerNorm;
    the T-Fixup scalings (:func:`tfixup_scale_factors`) are chosen to meet it.
    Norms may be floats, arrays or tensors.
    """
    v2, w2, m2 = v_norm**2, w_norm**2, m_norm**2
    return v2 * w2 + w2 * m2 + v2 * m2


def tfixup_scale_factors(n_enc: int, n_dec: int) -> dict:
    """T-Fixup multipliers applied after Xavier init (TF-2; Huang et al.).

    Encoder (N_e blocks): value / output projections and FFN weights x
    ``0.67 N_e^(-1/4)``, input embeddings x ``(9 N_e)^(-1/4)``. Decoder (N_d
    blocks): value / output projections, FFN weights and embeddings x
    ``(9 N_d)^(-1/4)``. Embeddings start from N(0, d^(-1/2)). A side with
    0 blocks is omitted.
    """
    out = {}
    if n_enc:
        out["encoder"] = {"weights": 0.67 * n_enc ** -0.25, "embedding": (9 * n_enc) ** -0.25}
    if n_dec:
        f = (9 * n_dec) ** -0.25
        out["decoder"] = {"weights": f, "embedding": f}
    return out


# ---------------------------------------------------------------------------
# DeepNorm (Wang et al. 2022; the book's extension)
# ---------------------------------------------------------------------------

def deepnorm_constants(n_enc: int, n_dec: int) -> dict:
    """DeepNorm's residual up-scale alpha and init down-scale beta.

    DeepNorm computes ``x <- LN(alpha x + f(x))`` and multiplies the init of
    the FFN weights and the value / output projections by beta. With N encoder
    and M decoder layers:

    * encoder-only (M = 0):  alpha = (2N)^(1/4),  beta = (8N)^(-1/4);
    * decoder-only (N = 0):  alpha = (2M)^(1/4),  beta = (8M)^(-1/4);
    * encoder-decoder:
        encoder  alpha = 0.81 (N^4 M)^(1/16),  beta = 0.87 (N^4 M)^(-1/16);
        decoder  alpha = (3M)^(1/4),           beta = (12M)^(-1/4).

    Returns ``{"encoder": {"alpha", "beta"}, "decoder": {...}}`` with only the
    sides that exist.
    """
    N, M = n_enc, n_dec
    if N < 0 or M < 0 or (N == 0 and M == 0):
        raise ValueError("need at least one layer")
    if M == 0:
        return {"encoder": {"alpha": (2 * N) ** 0.25, "beta": (8 * N) ** -0.25}}
    if N == 0:
        return {"decoder": {"alpha": (2 * M) ** 0.25, "beta": (8 * M) ** -0.25}}
    return {
        "encoder": {"alpha": 0.81 * (N**4 * M) ** (1 / 16), "beta": 0.87 * (N**4 * M) ** (-1 / 16)},
        "decoder": {"alpha": (3 * M) ** 0.25, "beta": (12 * M) ** -0.25},
    }
