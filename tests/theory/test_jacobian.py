"""tfx.theory.jacobian: the LayerNorm Jacobian's closed form, its spectrum and sympy derivations, and the
autograd measurement (LN-1); each test would fail if a formula were wrong."""
import math

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

from tfx.theory import fit, jacobian


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
    j_form = jacobian.layernorm_jacobian(x, eps)
    rel = torch.linalg.matrix_norm(j_form - j_auto) / torch.linalg.matrix_norm(j_auto)
    assert rel < 1e-5
    # entrywise too, relative to the largest entry
    assert (j_form - j_auto).abs().max() <= 1e-5 * j_auto.abs().max()

    n_auto = torch.linalg.matrix_norm(j_auto, ord=2)
    n_form = jacobian.layernorm_jacobian_norm(x, eps)
    assert abs(n_form - n_auto) / n_auto < 1e-5
    # and the explicit value sqrt(d)/sqrt(||x-mu||^2 + d eps)
    c = x - x.mean()
    assert torch.isclose(n_form, math.sqrt(d) / torch.sqrt(c @ c + d * eps), rtol=1e-12)


def test_eps_matters_at_small_scale():
    """At ||x - mu||^2 ~ d*eps the eps term must change the answer (guards a dropped eps)."""
    d, eps = 64, 1e-2
    x = torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 0.1
    j_auto = _autograd_ln_jacobian(x, eps)
    assert torch.allclose(jacobian.layernorm_jacobian(x, eps), j_auto, rtol=1e-9, atol=1e-12)
    assert not torch.allclose(jacobian.layernorm_jacobian(x, 0.0), j_auto, rtol=1e-3)
    # the radial eigenvalue is d*eps/s^2, not 0
    c = x - x.mean()
    s2 = c @ c + d * eps
    ev = torch.linalg.eigvalsh(jacobian.layernorm_jacobian(x, eps) * torch.sqrt(s2) / math.sqrt(d))
    assert torch.isclose(ev[1], d * eps / s2, rtol=1e-8)


def test_layernorm_jacobian_batched():
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    J = jacobian.layernorm_jacobian(x, 1e-5)
    assert J.shape == (3, 5, 16, 16)
    assert torch.allclose(J[1, 2], jacobian.layernorm_jacobian(x[1, 2], 1e-5))
    assert jacobian.layernorm_jacobian_norm(x).shape == (3, 5)


def test_layernorm_spectrum_numeric_d512():
    d = 512
    x = torch.randn(d, dtype=torch.float64) * 7 + 2
    c = x - x.mean()
    m = jacobian.layernorm_jacobian(x) * c.norm() / math.sqrt(d)
    ev = torch.linalg.eigvalsh(m)
    expected = torch.tensor([0.0, 0.0] + [1.0] * (d - 2), dtype=torch.float64)
    assert torch.allclose(ev, expected, atol=1e-10)


def test_small_d_edge_cases():
    x = torch.tensor([1.0, 3.0], dtype=torch.float64)
    j2 = _autograd_ln_jacobian(x, 1e-3)
    assert torch.isclose(jacobian.layernorm_jacobian_norm(x, 1e-3), torch.linalg.matrix_norm(j2, ord=2))
    assert jacobian.layernorm_jacobian_norm(x, 0.0) == 0.0


def test_jacobian_norm_loglog_slope_is_minus_one():
    d = 64
    base = torch.randn(d, dtype=torch.float64)
    scales = np.logspace(-1, 2, 8)
    norms = [float(jacobian.layernorm_jacobian_norm(base * s)) for s in scales]
    xnorms = [float((base * s).norm()) for s in scales]
    k, _, r2 = fit.fit_loglog(xnorms, norms)
    assert abs(k + 1) < 1e-9 and r2 > 1 - 1e-12


def test_sympy_layernorm_jacobian():
    der = jacobian.derive_layernorm_jacobian(3)
    assert der.equal
    assert der.difference == sp.zeros(3, 3)
    assert der.jacobian.shape == (3, 3) and der.closed_form.shape == (3, 3)
    # the closed form evaluated numerically agrees with torch
    vals = {s: v for s, v in zip(der.x, [0.3, -1.2, 2.0])}
    vals[der.eps] = 0.01
    num = torch.tensor(np.array(der.closed_form.subs(vals).evalf(), dtype=float))
    assert torch.allclose(num, jacobian.layernorm_jacobian(torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64), 0.01))
    assert jacobian.derive_layernorm_jacobian(3, with_eps=False).equal


def test_sympy_layernorm_spectrum():
    spec = jacobian.derive_layernorm_jacobian_spectrum()
    assert all(spec.checks.values()), spec.checks
    assert set(spec.charpolys) == {3, 4}
    d, s = sp.symbols("d s", positive=True)
    assert sp.simplify(spec.spectral_norm - sp.sqrt(d) / s) == 0
    assert spec.eigenvalues[sp.Integer(1)] == d - 2


@pytest.mark.parametrize("d", [3, 16, 200])
@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.3])
def test_ln_jacobian_norm_exact_matches_closed_form(d, eps):
    x = 3.0 * torch.randn(d, dtype=torch.float64) + 1.0
    got = jacobian.ln_jacobian_norm(x, eps=eps, method="exact")
    assert got == pytest.approx(float(jacobian.layernorm_jacobian_norm(x, eps=eps)), rel=1e-9)


@pytest.mark.parametrize("d", [8, 64, 700])
def test_ln_jacobian_norm_power_iteration_agrees_with_exact(d):
    x = torch.randn(d, dtype=torch.float64) * 5
    exact = jacobian.ln_jacobian_norm(x, eps=1e-5, method="exact")
    power = jacobian.ln_jacobian_norm(x, eps=1e-5, method="power")
    assert power == pytest.approx(exact, rel=1e-8)


def test_ln_jacobian_norm_of_a_module_with_gain():
    """With a random gain γ the Jacobian is diag(γ) J and not symmetric: power
    iteration on JᵀJ must still find its largest singular value."""
    ln = torch.nn.LayerNorm(32, eps=1e-5).double()
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
    x = torch.randn(32, dtype=torch.float64)
    exact = jacobian.ln_jacobian_norm(x, ln, method="exact")
    power = jacobian.ln_jacobian_norm(x, ln, method="power", iters=2000, tol=1e-13)
    assert power == pytest.approx(exact, rel=1e-6)
    with torch.no_grad():  # γ = 1, β = 0: back to the closed form
        ln.weight.fill_(1.0)
        ln.bias.zero_()
    assert jacobian.ln_jacobian_norm(x, ln) == pytest.approx(float(jacobian.layernorm_jacobian_norm(x, 1e-5)), rel=1e-9)


def test_ln_jacobian_norm_batches_and_rejects_bad_method():
    x = torch.randn(4, 5, 16, dtype=torch.float64)
    got = jacobian.ln_jacobian_norm(x, eps=0.0)
    assert got.shape == (4, 5)
    np.testing.assert_allclose(got, jacobian.layernorm_jacobian_norm(x, eps=0.0).numpy(), rtol=1e-9)
    with pytest.raises(ValueError, match="method"):
        jacobian.ln_jacobian_norm(x[0, 0], method="svd")


# ----------------------------------------------------------------- RMSNorm and DyT (chapter 16)
@pytest.mark.parametrize("d", [2, 5, 64])
@pytest.mark.parametrize("eps", [0.0, 1e-5])
def test_rmsnorm_jacobian_matches_autograd(d, eps):
    g = torch.Generator().manual_seed(d)
    for scale in (1e-2, 1.0, 1e2):
        x = (torch.randn(d, generator=g, dtype=torch.float64) + 0.3) * scale
        module = torch.nn.RMSNorm(d, eps=eps).double()
        J = torch.autograd.functional.jacobian(module, x)
        assert torch.allclose(J, jacobian.rmsnorm_jacobian(x, eps), rtol=1e-9, atol=1e-12 / scale)
        expect = math.sqrt(d) / math.sqrt(float(x @ x) + d * eps)
        assert float(jacobian.rmsnorm_jacobian_norm(x, eps)) == pytest.approx(expect, rel=1e-12)
        assert jacobian.ln_jacobian_norm(x, module) == pytest.approx(expect, rel=1e-9)


def test_rmsnorm_differs_from_layernorm_by_the_mean_direction():
    x = torch.randn(6, dtype=torch.float64) + 2.0  # a large mean: plain and centred norms differ
    assert float(jacobian.rmsnorm_jacobian_norm(x)) < 0.9 * float(jacobian.layernorm_jacobian_norm(x))
    ones = torch.ones(6, dtype=torch.float64)
    assert float((jacobian.layernorm_jacobian(x) @ ones).norm()) < 1e-12  # LN kills 1
    assert float((jacobian.rmsnorm_jacobian(x) @ ones).norm()) > 0.1     # RMSNorm does not


def test_rmsnorm_and_dyt_derivations():
    assert jacobian.derive_rmsnorm_jacobian(d=3, with_eps=True).equal
    assert jacobian.derive_rmsnorm_jacobian(d=2, with_eps=False).equal
    assert jacobian.derive_dyt_jacobian(d=2).equal


def test_dyt_jacobian_matches_autograd_and_is_bounded_by_alpha_gamma():
    from tfx.nn.blocks import DyT

    g = torch.Generator().manual_seed(0)
    for alpha in (0.1, 0.5, 3.0):
        m = DyT(16, alpha).double()
        with torch.no_grad():
            m.weight.copy_(1 + 0.5 * torch.randn(16, generator=g, dtype=torch.float64))
        gamma = m.weight.detach()
        for scale in (1e-4, 1.0, 10.0):
            x = scale * torch.randn(16, generator=g, dtype=torch.float64)
            J = torch.autograd.functional.jacobian(m, x)
            assert torch.allclose(J, jacobian.dyt_jacobian(x, alpha, gamma), atol=1e-12)
            top = float(jacobian.dyt_jacobian_norm(x, alpha, gamma))
            assert top <= alpha * float(gamma.abs().max()) + 1e-12
        # a tiny input: the bound is reached (LayerNorm's gain would be huge there)
        assert float(jacobian.dyt_jacobian_norm(1e-6 * torch.ones(16, dtype=torch.float64), alpha, gamma)) \
            == pytest.approx(alpha * float(gamma.abs().max()), rel=1e-9)


def test_shift_and_gain_norms_answer_with_the_formulas():
    out = jacobian.shift_and_gain_norms()
    assert out["ex1_centred"] == pytest.approx(1.0, rel=1e-8)
    assert out["ex1_shifted"] == pytest.approx(1.0, rel=1e-6)
    assert out["ex1_plain_bound"] < 0.02  # Lemma 3's plain norm is far off
    assert out["ex2_rms_centred"] == pytest.approx(1.0, rel=1e-8)
    assert out["ex2_rms_shifted"] == pytest.approx(out["ex2_rms_formula"], rel=1e-6)
    assert out["ex3_factor"] - 1e-9 <= out["ex3_ratio"] <= 1 + 1e-9
