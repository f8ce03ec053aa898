"""Tests for tfx.theory: each would fail if a formula were wrong."""

import math

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

from tfx import theory as th


# ---------------------------------------------------------------- LN-1

def _autograd_ln_jacobian(x, eps):
    d = x.shape[-1]
    return torch.autograd.functional.jacobian(
        lambda v: F.layer_norm(v, (d,), eps=eps), x, vectorize=True)


_SCALES = [1e-2, 1e-1, 1.0, 1e1, 1e2]
_CASES = [(d, s) for d in (4, 16, 64) for s in _SCALES] + [(512, s) for s in (1e-2, 1.0, 1e2)]


@pytest.mark.parametrize("d,scale", _CASES)
@pytest.mark.parametrize("eps", [0.0, 1e-5])
def test_layernorm_jacobian_matches_autograd(d, scale, eps):
    g = torch.Generator().manual_seed(d)
    # non-zero mean on purpose: the formula must use the centred input
    x = (torch.randn(d, generator=g, dtype=torch.float64) + 0.3) * scale
    j_auto = _autograd_ln_jacobian(x, eps)
    j_form = th.layernorm_jacobian(x, eps)
    rel = torch.linalg.matrix_norm(j_form - j_auto) / torch.linalg.matrix_norm(j_auto)
    assert rel < 1e-5
    # entrywise too, relative to the largest entry
    assert (j_form - j_auto).abs().max() <= 1e-5 * j_auto.abs().max()

    n_auto = torch.linalg.matrix_norm(j_auto, ord=2)
    n_form = th.layernorm_jacobian_norm(x, eps)
    assert abs(n_form - n_auto) / n_auto < 1e-5
    # and the explicit value sqrt(d)/sqrt(||x-mu||^2 + d eps)
    c = x - x.mean()
    assert torch.isclose(n_form, math.sqrt(d) / torch.sqrt(c @ c + d * eps), rtol=1e-12)


def test_eps_matters_at_small_scale():
    """At ||x - mu||^2 ~ d*eps the eps term must change the answer (guards a dropped eps)."""
    d, eps = 64, 1e-2
    x = torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 0.1
    j_auto = _autograd_ln_jacobian(x, eps)
    assert torch.allclose(th.layernorm_jacobian(x, eps), j_auto, rtol=1e-9, atol=1e-12)
    assert not torch.allclose(th.layernorm_jacobian(x, 0.0), j_auto, rtol=1e-3)
    # the radial eigenvalue is d*eps/s^2, not 0
    c = x - x.mean()
    s2 = c @ c + d * eps
    ev = torch.linalg.eigvalsh(th.layernorm_jacobian(x, eps) * torch.sqrt(s2) / math.sqrt(d))
    assert torch.isclose(ev[1], d * eps / s2, rtol=1e-8)


def test_layernorm_jacobian_batched():
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    J = th.layernorm_jacobian(x, 1e-5)
    assert J.shape == (3, 5, 16, 16)
    assert torch.allclose(J[1, 2], th.layernorm_jacobian(x[1, 2], 1e-5))
    assert th.layernorm_jacobian_norm(x).shape == (3, 5)


def test_layernorm_spectrum_numeric_d512():
    d = 512
    x = torch.randn(d, dtype=torch.float64) * 7 + 2
    c = x - x.mean()
    m = th.layernorm_jacobian(x) * c.norm() / math.sqrt(d)
    ev = torch.linalg.eigvalsh(m)
    expected = torch.tensor([0.0, 0.0] + [1.0] * (d - 2), dtype=torch.float64)
    assert torch.allclose(ev, expected, atol=1e-10)


def test_small_d_edge_cases():
    x = torch.tensor([1.0, 3.0], dtype=torch.float64)
    j2 = _autograd_ln_jacobian(x, 1e-3)
    assert torch.isclose(th.layernorm_jacobian_norm(x, 1e-3), torch.linalg.matrix_norm(j2, ord=2))
    assert th.layernorm_jacobian_norm(x, 0.0) == 0.0


def test_jacobian_norm_loglog_slope_is_minus_one():
    d = 64
    base = torch.randn(d, dtype=torch.float64)
    scales = np.logspace(-1, 2, 8)
    norms = [float(th.layernorm_jacobian_norm(base * s)) for s in scales]
    xnorms = [float((base * s).norm()) for s in scales]
    k, _, r2 = th.fit_loglog(xnorms, norms)
    assert abs(k + 1) < 1e-9 and r2 > 1 - 1e-12


def test_sympy_layernorm_jacobian():
    der = th.derive_layernorm_jacobian(3)
    assert der.equal
    assert der.difference == sp.zeros(3, 3)
    assert der.jacobian.shape == (3, 3) and der.closed_form.shape == (3, 3)
    # the closed form evaluated numerically agrees with torch
    vals = {s: v for s, v in zip(der.x, [0.3, -1.2, 2.0])}
    vals[der.eps] = 0.01
    num = torch.tensor(np.array(der.closed_form.subs(vals).evalf(), dtype=float))
    assert torch.allclose(num, th.layernorm_jacobian(torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64), 0.01))
    assert th.derive_layernorm_jacobian(3, with_eps=False).equal


def test_sympy_layernorm_spectrum():
    spec = th.derive_layernorm_jacobian_spectrum()
    assert all(spec.checks.values()), spec.checks
    assert set(spec.charpolys) == {3, 4}
    d, s = sp.symbols("d s", positive=True)
    assert sp.simplify(spec.spectral_norm - sp.sqrt(d) / s) == 0
    assert spec.eigenvalues[sp.Integer(1)] == d - 2


# ---------------------------------------------------------------- LN-2

def test_relu_norm_sq_formula_and_monte_carlo():
    assert th.relu_norm_sq_expectation(10, 2.0) == pytest.approx(20.0)
    g = torch.Generator().manual_seed(0)
    for d, sigma in [(8, 1.0), (64, 0.5), (256, 3.0)]:
        n = 2_000_000 // d
        X = torch.randn(n, d, generator=g, dtype=torch.float64) * sigma
        mc = (F.relu(X) ** 2).sum(-1).mean().item()
        assert abs(mc / th.relu_norm_sq_expectation(d, sigma) - 1) < 0.01


def test_sympy_relu_integral():
    der = th.derive_relu_norm_sq()
    sigma, d = sp.Symbol("sigma", positive=True), sp.Symbol("d", positive=True, integer=True)
    assert sp.simplify(der.per_coordinate - sigma**2 / 2) == 0
    assert sp.simplify(der.total - sigma**2 * d / 2) == 0


# ---------------------------------------------------------------- LN-3, LN-4

def test_lemma2_values():
    assert th.post_ln_hidden_norm_sq(512) == 768.0
    assert th.pre_ln_hidden_norm_sq_bounds(0, 10) == (10, 10)
    assert th.pre_ln_hidden_norm_sq_bounds(4, 10) == (30.0, 70.0)
    assert th.pre_ln_hidden_norm_sq_bounds(2, 10, input_norm_sq=1.0) == (11.0, 31.0)
    assert "W^Q = W^K = 0" in th.post_ln_hidden_norm_sq.__doc__
    with pytest.raises(ValueError):
        th.pre_ln_hidden_norm_sq_bounds(-1, 4)


def test_lemma2_post_ln_ffn_monte_carlo():
    """Quick check of the 1.5 d derivation: x3 = LN output, x5 = x3 + ReLU(x3 W1) W2, Xavier N(0, 1/d)."""
    g = torch.Generator().manual_seed(1)
    d, n = 48, 3000
    x3 = F.layer_norm(torch.randn(n, d, generator=g, dtype=torch.float64), (d,))
    W1 = torch.randn(n, d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    W2 = torch.randn(n, d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    x5 = x3 + torch.einsum("nd,nde->ne", F.relu(torch.einsum("nd,nde->ne", x3, W1)), W2)
    assert abs((x5**2).sum(-1).mean().item() / th.post_ln_hidden_norm_sq(d) - 1) < 0.02


def test_theorem1_exponents():
    assert th.expected_exponent("post") == 0.0
    assert th.expected_exponent("Pre-LN") == -0.5
    Ls = [6, 8, 10, 12, 14]
    for p in ("post", "pre"):
        k, _, r2 = th.fit_loglog(Ls, [th.last_ffn_grad_scaling(p, L) for L in Ls])
        assert k == pytest.approx(th.expected_exponent(p), abs=1e-12) and r2 == pytest.approx(1.0)
    assert th.last_ffn_grad_scaling("pre", 16) == pytest.approx(0.25)
    assert np.allclose(th.last_ffn_grad_scaling("pre", np.array([4, 9])), [0.5, 1 / 3])
    with pytest.raises(ValueError):
        th.expected_exponent("sandwich")


# ---------------------------------------------------------------- AM-2, AD-1

def test_output_change_order():
    assert th.output_change_order("post", 12) == 12.0
    assert th.output_change_order("pre", 1) == 1.0
    assert th.output_change_order("pre", 4) == pytest.approx(1 + 1 / 2 + 1 / 3 + 1 / 4)
    Ns = np.array([6, 12, 24, 48, 96, 192])   # H_N - ln N - gamma ~ 1/(2N): slope a bit below 1
    post = [th.output_change_order("post", n) for n in Ns]
    pre = [th.output_change_order("pre", n) for n in Ns]
    assert th.fit_linear(Ns, post)[2] == pytest.approx(1.0)
    slope, _, r2 = th.fit_linear(np.log(Ns), pre)     # H_N ~ ln N + gamma
    assert slope == pytest.approx(1.0, abs=0.03) and r2 > 0.999
    assert th.output_change_order("admin", 10) == th.output_change_order("pre", 10)


def test_admin_beta_and_omega():
    assert th.admin_beta_diag_sq(4) == 0.25
    assert sum(th.admin_beta_diag_sq(i) for i in range(1, 5)) == pytest.approx(th.output_change_order("admin", 4))
    assert th.admin_omega_profiling_free(1) == pytest.approx(math.sqrt(2 / math.log(2) - 1))
    assert th.admin_omega_profiling_free(1) == pytest.approx(1.37310, abs=1e-5)
    assert th.admin_omega_profiling_free(12) == pytest.approx(2.01701, abs=1e-5)
    assert th.admin_omega_profiling_free(36) == pytest.approx(math.sqrt(37 / math.log(37) - 1))
    assert np.allclose(th.admin_omega_profiling_free(np.array([1, 12])), [1.37310, 2.01701], atol=1e-5)
    with pytest.raises(ValueError):
        th.admin_omega_profiling_free(0)


# ---------------------------------------------------------------- fits

def test_fit_linear_exact_and_noisy():
    x = np.arange(10.0)
    slope, icpt, r2 = th.fit_linear(x, 3 * x - 2)
    assert slope == pytest.approx(3) and icpt == pytest.approx(-2) and r2 == pytest.approx(1.0)
    slope, icpt, r2 = th.fit_linear(x, np.full_like(x, 5.0))
    assert slope == pytest.approx(0, abs=1e-12) and icpt == pytest.approx(5) and r2 == 1.0
    rng = np.random.default_rng(0)
    y = 2 * x + rng.normal(0, 1, x.size)
    slope, _, r2 = th.fit_linear(x, y)
    res = y - np.polyval(np.polyfit(x, y, 1), x)
    assert r2 == pytest.approx(1 - res @ res / np.sum((y - y.mean()) ** 2))
    assert 0 < r2 < 1
    with pytest.raises(ValueError):
        th.fit_linear([1.0], [2.0])


def test_fit_loglog_exact():
    x = np.array([1, 2, 4, 8, 16.0])
    k, c, r2 = th.fit_loglog(x, 3.5 * x ** -0.5)
    assert k == pytest.approx(-0.5) and c == pytest.approx(3.5) and r2 == pytest.approx(1.0)
    k, c, r2 = th.fit_loglog(x, 1.6 * x ** 0.0)
    assert k == pytest.approx(0.0, abs=1e-12) and c == pytest.approx(1.6) and r2 == 1.0
    with pytest.raises(ValueError):
        th.fit_loglog([1, 2], [1, -1])


# ---------------------------------------------------------------- LP-1 ... LP-3

def test_v1_residual_scale():
    der = th.derive_v1_residual_scale()
    w, sigma = sp.Symbol("w", real=True), sp.Symbol("sigma", positive=True)
    assert sp.simplify(der.residual_coefficient - w / sigma) == 0
    assert der.identity_difference == 0


def test_std_bound_monte_carlo():
    rng = np.random.default_rng(0)
    a, b = -0.3, 0.7
    n = 200_000
    samples = {
        "uniform": rng.uniform(a, b, n),
        "beta(0.2,0.2)": a + (b - a) * rng.beta(0.2, 0.2, n),
        "beta(5,2)": a + (b - a) * rng.beta(5, 2, n),
        "two-point": rng.choice([a, b], n),
        "clipped normal": np.clip(rng.normal(0.2, 1.0, n), a, b),
        "truncated exp": a + (b - a) * (rng.exponential(0.1, n) % 1.0),
    }
    for name, x in samples.items():
        assert x.min() >= a and x.max() <= b
        sd = x.std()
        assert sd < th.std_bound_on_interval(a, b), name
        assert sd <= th.std_bound_on_interval(a, b, tight=True) + 1e-12, name
    # the tight bound is attained by the two-point distribution (within MC noise)
    assert samples["two-point"].std() == pytest.approx(th.std_bound_on_interval(a, b, tight=True), rel=1e-3)
    assert th.std_bound_on_interval(0, 1) == 1 and th.std_bound_on_interval(0, 1, tight=True) == 0.5


def test_sympy_std_bound():
    der = th.derive_std_bound_on_interval()
    assert all(der.checks.values()), der.checks
    a, b = sp.symbols("a b", real=True)
    assert sp.simplify(der.tight_var - (b - a) ** 2 / 4) == 0
    assert sp.simplify(der.worst_mean - (a + b) / 2) == 0


def test_lipschitz_init_bounds():
    e, l = th.lipschitz_init_bounds(512, 32000, 2048)
    assert e == pytest.approx(math.sqrt(2 / 32512)) and l == pytest.approx(1 / math.sqrt(2048))
    # a linear layer with U(-l, l) weights has weight variance l^2/3 = 1/(3 isize)
    w = torch.empty(256, 2048).uniform_(-l, l)
    assert w.var().item() == pytest.approx(1 / (3 * 2048), rel=0.02)


# ---------------------------------------------------------------- TF-1, TF-2, DeepNorm

def test_tfixup():
    assert th.tfixup_condition(1.0, 2.0, 3.0) == 4 + 36 + 9
    assert torch.isclose(th.tfixup_condition(torch.tensor(0.5), torch.tensor(0.5), torch.tensor(2.0)),
                         torch.tensor(0.0625 + 1 + 1))
    f = th.tfixup_scale_factors(6, 6)
    assert f["encoder"]["weights"] == pytest.approx(0.67 * 6 ** -0.25)
    assert f["encoder"]["embedding"] == pytest.approx(54 ** -0.25)
    assert f["decoder"]["weights"] == f["decoder"]["embedding"] == pytest.approx(54 ** -0.25)
    assert "decoder" not in th.tfixup_scale_factors(6, 0)


def test_deepnorm_constants():
    c = th.deepnorm_constants(6, 0)
    assert c["encoder"]["alpha"] == pytest.approx(12 ** 0.25)        # 1.8612
    assert c["encoder"]["beta"] == pytest.approx(48 ** -0.25)        # 0.3799
    assert c["encoder"]["alpha"] == pytest.approx(1.86121, abs=1e-5)
    c = th.deepnorm_constants(0, 24)
    assert c["decoder"]["alpha"] == pytest.approx(48 ** 0.25) and "encoder" not in c
    c = th.deepnorm_constants(6, 6)
    assert c["encoder"]["alpha"] == pytest.approx(0.81 * 6 ** (5 / 16))
    assert c["encoder"]["alpha"] == pytest.approx(1.41794, abs=1e-5)
    assert c["encoder"]["beta"] == pytest.approx(0.87 * 6 ** (-5 / 16))
    assert c["decoder"]["alpha"] == pytest.approx(18 ** 0.25)
    assert c["decoder"]["beta"] == pytest.approx(72 ** -0.25)
    # the paper's 200-layer model: 100 encoder + 100 decoder layers
    c = th.deepnorm_constants(100, 100)
    assert c["encoder"]["alpha"] == pytest.approx(0.81 * 100 ** (5 / 16))
    with pytest.raises(ValueError):
        th.deepnorm_constants(0, 0)
