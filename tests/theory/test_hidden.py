"""tfx.theory.hidden: Lemma 1 and Lemma 2 of Xiong et al. (LN-2, LN-3), as formulas and as measured
hidden norms of tfx models."""
import math

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import tfx
from tfx.theory import hidden
from small_models import tiny as _tiny


def test_relu_norm_sq_formula_and_monte_carlo():
    assert hidden.relu_norm_sq_expectation(10, 2.0) == pytest.approx(20.0)
    g = torch.Generator().manual_seed(0)
    for d, sigma in [(8, 1.0), (64, 0.5), (256, 3.0)]:
        n = 2_000_000 // d
        X = torch.randn(n, d, generator=g, dtype=torch.float64) * sigma
        mc = (F.relu(X) ** 2).sum(-1).mean().item()
        assert abs(mc / hidden.relu_norm_sq_expectation(d, sigma) - 1) < 0.01


def test_sympy_relu_integral():
    der = hidden.derive_relu_norm_sq()
    sigma, d = sp.Symbol("sigma", positive=True), sp.Symbol("d", positive=True, integer=True)
    assert sp.simplify(der.per_coordinate - sigma**2 / 2) == 0
    assert sp.simplify(der.total - sigma**2 * d / 2) == 0


def test_lemma2_values():
    assert hidden.post_ln_hidden_norm_sq(512) == 768.0
    assert hidden.pre_ln_hidden_norm_sq_bounds(0, 10) == (10, 10)
    assert hidden.pre_ln_hidden_norm_sq_bounds(4, 10) == (30.0, 70.0)
    assert hidden.pre_ln_hidden_norm_sq_bounds(2, 10, input_norm_sq=1.0) == (11.0, 31.0)
    assert "W^Q = W^K = 0" in hidden.post_ln_hidden_norm_sq.__doc__
    with pytest.raises(ValueError):
        hidden.pre_ln_hidden_norm_sq_bounds(-1, 4)


def test_lemma2_post_ln_ffn_monte_carlo():
    """Quick check of the 1.5 d derivation: x3 = LN output, x5 = x3 + ReLU(x3 W1) W2, Xavier N(0, 1/d)."""
    g = torch.Generator().manual_seed(1)
    d, n = 48, 3000
    x3 = F.layer_norm(torch.randn(n, d, generator=g, dtype=torch.float64), (d,))
    W1 = torch.randn(n, d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    W2 = torch.randn(n, d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    x5 = x3 + torch.einsum("nd,nde->ne", F.relu(torch.einsum("nd,nde->ne", x3, W1)), W2)
    assert abs((x5**2).sum(-1).mean().item() / hidden.post_ln_hidden_norm_sq(d) - 1) < 0.02


def test_hidden_norms_post_ln_output_is_d_and_pre_ln_stream_is_cumulative():
    d = 16
    m, _, batch = _tiny("post")
    h = hidden.hidden_norms(m, batch)
    assert h["ffn_sum"].shape == h["attn_sum"].shape == h["output"].shape == (3,)
    np.testing.assert_allclose(h["output"], d, rtol=1e-3)  # an LN output has ‖y‖² = d (eps tiny)
    m, _, batch = _tiny("pre")
    h = hidden.hidden_norms(m, batch)
    np.testing.assert_allclose(h["output"], h["ffn_sum"])
    # the stream after the block: check against a direct forward pass
    with torch.no_grad():
        x = m.src_embed(batch.src)
        assert h["input"] == pytest.approx(float((x.double() ** 2).sum(-1).mean()), rel=1e-6)
        for l, layer in enumerate(m.encoder.layers):
            x = layer(x)
            assert h["ffn_sum"][l] == pytest.approx(float((x.double() ** 2).sum(-1).mean()), rel=1e-5)


def test_hidden_norms_of_a_tensor_input():
    m, _, _ = _tiny("pre", N=2)
    x0 = hidden.gaussian_inputs(3, 7, 16, seed=1)
    assert x0.shape == (3, 7, 16)
    h = hidden.hidden_norms(m, x0)
    assert h["input"] == pytest.approx(float((x0.double() ** 2).sum(-1).mean()))
    with torch.no_grad():
        x = m.encoder.layers[1](m.encoder.layers[0](x0))
    assert h["ffn_sum"][-1] == pytest.approx(float((x.double() ** 2).sum(-1).mean()), rel=1e-5)


def test_xiong_simplified_makes_attention_uniform_and_weights_xavier_normal():
    d = 64
    m = tfx.build_model(n_enc=2, n_dec=0, d_model=d, n_heads=1, d_ffn=d, src_vocab=10, tgt_vocab=10)
    hidden.xiong_simplified(m, seed=3)
    att = m.encoder.layers[0].self_attn.f
    assert float(att.q_proj.weight.abs().max()) == 0 and float(att.k_proj.weight.abs().max()) == 0
    x = torch.randn(2, 5, d)
    with torch.no_grad():  # uniform attention: the output is out_proj(mean_j v_proj(x_j))
        want = att.out_proj(att.v_proj(x).mean(1, keepdim=True)).expand(-1, 5, -1)
        assert torch.allclose(att(x), want, atol=1e-5)
    w = torch.cat([m.encoder.layers[l].ffn.f.fc1.weight.flatten() for l in range(2)])
    assert float(w.std()) == pytest.approx((2 / (d + d)) ** 0.5, rel=0.05)  # N(0, 1/d), not uniform
    assert abs(float(((w / w.std()) ** 4).mean()) - 3.0) < 0.2  # Gaussian kurtosis 3 (uniform: 1.8)
    assert float(m.encoder.layers[0].ffn.f.fc1.bias.abs().max()) == 0


def test_post_ln_sum_norm_is_lemma_2_at_r_1_and_falls_with_width():
    assert hidden.post_ln_sum_norm(1) == pytest.approx(1.5)
    assert hidden.post_ln_sum_norm(2) > hidden.post_ln_sum_norm(8) > 1
    with pytest.raises(ValueError, match="r="):
        hidden.post_ln_sum_norm(0)


def test_post_ln_sums_per_kind_and_the_gains_of_the_extremes():
    from small_models import BATCH, model

    sums = hidden.post_ln_sum_norms(model(placement="post"), BATCH)
    assert {k: len(v) for k, v in sums.items()} == {"self-attn": 4, "ffn": 4, "cross-attn": 2}
    assert all((v > 0).all() for v in sums.values())
    sums = {"ffn": np.array([1.3, 1.4]), "self-attn": np.array([1.9, 2.0]),
            "cross-attn": np.array([2.0, 2.25])}
    out = hidden.post_ln_sum_gains(sums)
    assert out["ffn"] == pytest.approx(1.35) and out["cross"] == pytest.approx(2.125)
    assert out["gain_lo"] == pytest.approx(1 / 1.5) and out["gain_hi"] == pytest.approx(1 / 1.3 ** 0.5)


def test_lemma2_summary_fits_the_growth_and_checks_the_bounds():
    layers = np.arange(1, 7)
    pre = np.tile(1.0 + layers, (3, 1)).astype(float)  # E‖x_l‖²/d = 1 + l: inside [l/2 + 1, 3l/2 + 1]
    norms = {("simplified", "post"): np.full((3, 6), 1.5), ("real", "post"): np.full((3, 6), 1.3),
             ("simplified", "pre"): pre, ("real", "pre"): 2 * pre}
    out = hidden.lemma2_summary(norms, layers, 4)
    assert out["post_simp"] == pytest.approx(1.5) and out["post_real_pred"] == pytest.approx(1.32)
    assert out["pre_slope_simp"] == pytest.approx(1.0) and out["pre_slope_real"] == pytest.approx(2.0)
    assert out["inside"] == [True] * 6
    assert hidden.within_pre_ln_bounds([1, 2], [0.1, 2.5]) == [False, True]


def test_post_ln_width_norms_fall_with_the_ffn_width():
    out = hidden.post_ln_width_norms(tfx.synthetic("reverse", vocab=8, length=5), (1, 8), 2, 4,
                                     d_model=16, n_heads=2, d_ffn=16)
    assert set(out) == {1, 8} and out[8] < out[1]
