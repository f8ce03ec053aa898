"""tfx.theory.bounds: the T-Fixup left side, σ and w/σ of the v1 residual (derived and measured),
σ on an interval (the bound, its sympy proof, Monte Carlo)."""
import math

import numpy as np
import pytest
import sympy as sp
import torch

import tfx
import tfx.nn.hooks
from tfx.theory import bounds

TASK = tfx.synthetic("reverse", length=8)
SIZES = dict(d_model=32, n_heads=4, d_ffn=64, src_vocab=TASK.src_vocab, tgt_vocab=TASK.tgt_vocab)


def test_matrix_gain_is_rms_stretch():
    assert bounds.matrix_gain(torch.eye(16)) == pytest.approx(1.0)
    assert bounds.matrix_gain(3 * torch.eye(16)) == pytest.approx(3.0)
    w = torch.empty(256, 256)
    torch.nn.init.xavier_uniform_(w)
    assert bounds.matrix_gain(w) == pytest.approx(1.0, rel=0.02)
    x = torch.randn(256, 2000)
    assert float((w @ x).pow(2).sum(0).mean() / x.pow(2).sum(0).mean()) ** 0.5 == pytest.approx(
        bounds.matrix_gain(w), rel=0.03)


def test_tfixup_lhs_formula():
    assert bounds.tfixup_lhs(1.0, 2.0, 3.0) == 4 + 36 + 9
    assert bounds.tfixup_lhs(2.0, 1.0, 3.0) == 4 + 9 + 36
    np.testing.assert_allclose(bounds.tfixup_lhs(np.ones(3), np.ones(3), np.zeros(3)), 1.0)


def test_tfixup_terms_shapes_and_errors():
    m = tfx.build_model(n_enc=3, n_dec=2, placement="none", init="t-fixup", **SIZES)
    t = bounds.tfixup_terms(m)
    assert len(t["encoder"]["lhs"]) == 3 and len(t["decoder"]["lhs"]) == 4  # decoder: self + cross per layer
    assert t["encoder"]["L"] == 6 and t["decoder"]["L"] == 6
    assert t["decoder"]["names"][:2] == ["layers.0.self_attn", "layers.0.cross_attn"]
    measured = bounds.tfixup_terms(m, TASK.batch(0, 4), m="input")
    assert np.all(measured["encoder"]["m"] > 0)
    with pytest.raises(ValueError, match="m='input'.*batch"):
        bounds.tfixup_terms(m, m="input")
    with pytest.raises(ValueError, match="m='nope'"):
        bounds.tfixup_terms(m, m="nope")


def test_tfixup_terms_cross_attention_reads_encoder_output():
    m = tfx.build_model(n_enc=2, n_dec=1, placement="none", init="xavier", **SIZES)
    batch = TASK.batch(0, 4)
    t = bounds.tfixup_terms(m, batch, m="input")
    with torch.no_grad():
        memory = m.encode(batch.src)
    assert t["decoder"]["m"][1] == pytest.approx(float(memory.pow(2).mean().sqrt()), rel=1e-5)


def test_sublayers_per_layer():
    ed = tfx.build_model(n_enc=1, n_dec=1, **SIZES)
    lm = tfx.build_model(n_enc=0, n_dec=2, **SIZES)
    assert bounds.sublayers_per_layer(ed, "decoder") == 3 and bounds.sublayers_per_layer(ed, "encoder") == 2
    assert bounds.sublayers_per_layer(lm, "decoder") == 2


def test_tfixup_lhs_sweep_rejects_bad_kind():
    with pytest.raises(ValueError, match="kind='decoder'"):
        bounds.tfixup_lhs_sweep(TASK, (1,), kind="decoder")


def test_v1_residual_scales_matches_layernorm():
    """σ is what the LayerNorm divides by: LN(x + f) = (w/σ)(x + f − μ) + b per token."""
    m = tfx.build_model(n_enc=2, n_dec=0, placement="post", **SIZES)
    with torch.no_grad():
        for _, r in m.residuals():
            r.norm.weight.uniform_(0.5, 1.5)
    batch = TASK.batch(0, 4)
    out = bounds.v1_residual_scales(m, batch)["encoder"]
    with tfx.nn.hooks.record_branches(m) as rec:
        m.loss(batch)
    for k, (r, (_, res)) in enumerate(zip(rec["encoder"], m.encoder.residuals())):
        z = (r["x"] + r["f"]).detach()
        sigma = (z.var(-1, unbiased=False, keepdim=True) + res.norm.eps).sqrt()
        with torch.no_grad():
            torch.testing.assert_close(res.norm(z), res.norm.weight / sigma * (z - z.mean(-1, keepdim=True))
                                       + res.norm.bias, rtol=1e-5, atol=1e-5)
        assert out["sigma"][k] == pytest.approx(float(sigma.mean()), rel=1e-5)
        assert out["w_over_sigma"][k] == pytest.approx(float((res.norm.weight.detach().mean() / sigma).mean()),
                                                       rel=1e-5)
        assert out["range"][k] == pytest.approx(float((z.amax(-1) - z.amin(-1)).mean()), rel=1e-5)
    np.testing.assert_allclose(out["carried"], np.cumprod(out["w_over_sigma"]))


def test_v1_residual_scales_other_placements_have_no_ratio():
    m = tfx.build_model(n_enc=2, n_dec=0, placement="pre", **SIZES)
    out = bounds.v1_residual_scales(m, TASK.batch(0, 4))["encoder"]
    assert np.all(out["sigma"] > 0) and np.all(np.isnan(out["w_over_sigma"]))


def test_lipschitz_constants_are_spectral_norms():
    m = tfx.build_model(n_enc=1, n_dec=0, init="lipschitz", **SIZES)
    k = bounds.lipschitz_constants(m)
    assert set(k) == {"q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"}
    fc1 = m.encoder.layers[0].ffn.f.fc1.weight.detach()
    assert k["fc1"][0] == pytest.approx(float(torch.linalg.svdvals(fc1)[0]), rel=1e-5)


@pytest.mark.parametrize("name", list(bounds.DISTRIBUTIONS))
def test_samples_stay_on_interval(name):
    x = bounds.sample_on_interval(name, -2.0, 0.5, 5000, seed=1)
    assert x.shape == (5000,) and x.min() >= -2.0 and x.max() <= 0.5
    np.testing.assert_array_equal(x, bounds.sample_on_interval(name, -2.0, 0.5, 5000, seed=1))


def test_sample_on_interval_errors():
    with pytest.raises(ValueError, match="distribution='cauchy'"):
        bounds.sample_on_interval("cauchy", 0, 1, 10)
    with pytest.raises(ValueError, match="a < b"):
        bounds.sample_on_interval("uniform", 1, 1, 10)


def test_monte_carlo_known_stds():
    r = bounds.std_on_interval_monte_carlo(0.0, 2.0, n=200_000)
    assert r["uniform"]["std"] == pytest.approx(2 / math.sqrt(12), rel=0.01)
    assert r["beta(0.5, 0.5)"]["std"] == pytest.approx(2 * math.sqrt(1 / 8), rel=0.01)  # Var beta(½,½) = 1/8
    assert r["two-point, p = 0.1"]["std"] == pytest.approx(2 * math.sqrt(0.09), rel=0.02)
    assert r["uniform"]["over_tight"] == pytest.approx(2 * r["uniform"]["over_paper"])


def test_random_discrete_stds_below_popoviciu():
    s = bounds.random_discrete_stds(500, a=3.0, b=4.5, seed=2)
    assert s.shape == (500,) and s.max() <= 0.5 + 1e-12 and s.max() > 0.4


def test_v1_residual_scale():
    der = bounds.derive_v1_residual_scale()
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
        assert sd < bounds.std_bound_on_interval(a, b), name
        assert sd <= bounds.std_bound_on_interval(a, b, tight=True) + 1e-12, name
    # the tight bound is attained by the two-point distribution (within MC noise)
    assert samples["two-point"].std() == pytest.approx(bounds.std_bound_on_interval(a, b, tight=True), rel=1e-3)
    assert bounds.std_bound_on_interval(0, 1) == 1 and bounds.std_bound_on_interval(0, 1, tight=True) == 0.5


def test_sympy_std_bound():
    der = bounds.derive_std_bound_on_interval()
    assert all(der.checks.values()), der.checks
    a, b = sp.symbols("a b", real=True)
    assert sp.simplify(der.tight_var - (b - a) ** 2 / 4) == 0
    assert sp.simplify(der.worst_mean - (a + b) / 2) == 0


def test_tfixup_lhs():
    assert bounds.tfixup_lhs(1.0, 2.0, 3.0) == 4 + 36 + 9
    assert torch.isclose(bounds.tfixup_lhs(torch.tensor(0.5), torch.tensor(0.5), torch.tensor(2.0)),
                         torch.tensor(0.0625 + 1 + 1))


def test_tfixup_lhs_summary_reads_the_sweeps_and_fits():
    L = np.array([3.0, 6.0, 12.0])
    stacks = lambda lhs: {s: {"L": L, "lhs": lhs} for s in ("encoder", "decoder")}  # noqa: E731
    lhs = {"embedding": {"t-fixup": stacks(1.0 / L), "xavier": stacks(np.full(3, 3.0))},
           "input": {"t-fixup": stacks(2.0 / L)}}
    fits = {(m, i, s): (slope, 0.0, 1.0) for (m, i), slope in
            ((("embedding", "t-fixup"), -1.0), (("embedding", "xavier"), 0.0), (("input", "t-fixup"), -0.6))
            for s in ("encoder", "decoder")}
    v = bounds.tfixup_lhs_summary(lhs, fits, [1, 2, 4])
    assert v["Llhs_min_encoder"] == pytest.approx(1.0) and v["Llhs_max_decoder"] == pytest.approx(1.0)
    assert v["xavier_lhs_encoder"] == 3.0 and v["input_slope_decoder"] == -0.6
    assert (v["slope_encoder"], v["depth_min"], v["depth_max"]) == (-1.0, 1, 4)


def test_v1_scale_summary_counts_and_compounds():
    def stack(sigma, carried):
        return {"sigma": np.array(sigma), "w_over_sigma": 1 / np.array(sigma),
                "carried": np.array(carried), "range": np.array([4.0, 6.0])}
    scales = {"xavier": {"encoder": stack([1.5, 2.0], [0.6, 0.3])},
              "lipschitz": {"encoder": stack([0.9, 1.1], [1.0, 0.9])}}
    v = bounds.v1_scale_summary(scales)
    assert v["n_le1_lipschitz_encoder"] == 1 and v["n_sub_encoder"] == 2
    assert v["sigma_max_xavier_encoder"] == 2.0 and v["range_xavier_encoder"] == 5.0
    assert v["carried_ratio"] == pytest.approx(0.9 / 0.3)


def test_v1_fade_matches_the_closed_form_and_refuses_bad_input():
    k, kmin, layers = bounds.v1_layers_to_fade(1.2, 0.01)
    assert k == pytest.approx(math.log(100) / math.log(1.2))
    assert (kmin, layers) == (26, 13)
    assert 1.2 ** -kmin < 0.01 <= 1.2 ** -(kmin - 1)
    with pytest.raises(ValueError, match="sigma"):
        bounds.v1_layers_to_fade(0.9)
