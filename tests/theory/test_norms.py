"""tfx.theory.norms: DyT saturation (the pure formula and the hooks), the placements'
init-time diagnostics, the branch multipliers and the derived depth factors (chapter 16)."""
import math

import numpy as np
import pytest
import torch

import tfx
from tfx.nn import constants
from tfx.theory import fit, norms

SMALL = dict(d_model=32, n_heads=2, d_ffn=128)


@pytest.fixture(scope="module")
def task_batch():
    task = tfx.synthetic("reverse", length=8)
    return task, task.batch(0, 8)


def test_saturated_share_counts_entries_beyond_artanh_threshold_over_alpha():
    edge = math.atanh(0.99)  # |tanh(x)| > 0.99 exactly when |x| > edge
    x = torch.tensor([0.0, edge * 0.999, -edge * 1.001, edge * 1.001, 5.0])
    assert norms.saturated_share(x, 1.0) == pytest.approx(3 / 5)
    assert norms.saturated_share(x, 2.0) == pytest.approx(4 / 5)  # doubling α = doubling x
    assert norms.saturated_share(x, 1.0, threshold=0.9999) == pytest.approx(1 / 5)


def test_saturated_share_gaussian_matches_monte_carlo():
    x = 1.5 * torch.randn(400_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for alpha in (0.3, 1.0, 2.0, 6.0):
        assert norms.saturated_share(x, alpha) == pytest.approx(
            norms.saturated_share_gaussian(alpha, 1.5), abs=3e-3)
    # only α·σ matters
    assert norms.saturated_share_gaussian(2.0, 0.5) == pytest.approx(norms.saturated_share_gaussian(1.0, 1.0))


def test_dyt_saturation_reads_every_dyt_module(task_batch):
    task, batch = task_batch
    cfg = tfx.ModelConfig.for_scheme("dyt", task, 0, 2, dyt_alpha=3.0, **SMALL)
    model = tfx.build_model(cfg)
    shares = norms.dyt_saturation(model, batch)
    assert len(shares) == 2 * 2 + 1  # two per layer, the final norm
    inputs = norms.dyt_inputs(model, batch)
    for name, (x, a) in inputs.items():
        assert a == 3.0
        assert shares[name] == norms.saturated_share(x, a)
    assert all(0 < s < 1 for s in shares.values())
    with pytest.raises(ValueError, match="no DyT"):
        norms.dyt_saturation(tfx.build_scheme("pre", task, 0, 1, **SMALL), batch)


def test_placement_diagnostics_post_ln_stream_is_normalised_pre_ln_grows(task_batch):
    task, batch = task_batch
    post = norms.placement_diagnostics("post", 4, task, batch, **SMALL)
    pre = norms.placement_diagnostics("pre", 4, task, batch, **SMALL)
    assert post["stream"].shape == (4,)  # a decoder-only LM of 4 layers
    assert post["stream"] == pytest.approx(np.ones(4), abs=1e-3)
    assert np.all(np.diff(pre["stream"]) > 0)
    assert set(pre) == {"stream", "grad_ratio", "rel_change"}
    assert 0 < pre["rel_change"] < 1 and pre["grad_ratio"] > 0


def test_branch_multipliers_apply_the_schemes_factors(task_batch):
    task, batch = task_batch
    rz = norms.depth_multipliers("rezero", 3, task, batch, **SMALL)
    assert np.all(rz == 0)  # α = 0: the branch is switched off
    model = tfx.build_scheme("deepnorm", task, 0, 3, **SMALL)
    got = norms.branch_multipliers(model, batch)
    with tfx.nn.hooks.record_branches(model) as rec, torch.no_grad():
        model.eval()
        model.loss(batch)
    alpha = constants.deepnorm_constants(0, 3)["decoder"]["alpha"]
    by_hand = [float(r["f"].std() / (alpha * r["x"]).std()) for r in rec["decoder"]]
    assert got["ratio"] == pytest.approx(by_hand, rel=1e-5)
    assert got["names"][0] == "layers.0.self_attn"


def test_depth_factor_matches_the_constants_and_their_exponents():
    N = np.array([2, 6, 12, 24, 100])
    dn = [constants.deepnorm_constants(0, int(n))["decoder"] for n in N]
    assert norms.depth_factor("deepnorm", N) == pytest.approx([c["beta"] ** 2 / c["alpha"] for c in dn])
    assert norms.depth_factor("t-fixup", N) == pytest.approx((9 * N) ** -0.5)
    assert fit.fit_loglog(N, norms.depth_factor("deepnorm", N))[0] == pytest.approx(-0.75)
    assert fit.fit_loglog(N, norms.depth_factor("depth-mup", N))[0] == pytest.approx(-0.5)
    assert np.all(norms.depth_factor("rezero", N) == 0)
    # LayerNorm scaling is not a power law: its local slope steepens past −0.5 and drifts
    k = np.diff(np.log(norms.depth_factor("ln-scaling", N))) / np.diff(np.log(N))
    assert np.all(k < -0.5) and np.ptp(k) > 0.02
    with pytest.raises(ValueError, match="scheme"):
        norms.depth_factor("nope", N)


def test_chapter_15s_schemes_are_schemes_of_the_model_wing():
    """The placements and depth scalings compared are keys of tfx.nn.config.SCHEMES (one
    registry), and every depth scheme has a derived factor."""
    assert set(norms.PLACEMENT_SCHEMES) <= set(tfx.nn.config.SCHEMES)
    assert set(norms.DEPTH_SCHEMES) <= set(tfx.nn.config.SCHEMES)
    for s in norms.DEPTH_SCHEMES:
        assert norms.depth_factor(s, np.array([2.0, 4.0])).shape == (2,)


def test_placement_summary_reads_the_slope_per_layer_and_the_growth_with_depth():
    """Synthetic diagnostics: a stream growing by 2 per layer (Pre-LN) and one growing by 1,
    the output change doubling from the shallowest depth to the deepest."""
    depths, seeds = (2, 4), 2
    pl = {}
    for name, step in (("pre", 2.0), ("ln-scaling", 1.0)):
        for n in depths:
            for s in range(seeds):
                pl[name, n, s] = {"stream": 1 + step * np.arange(n), "grad_ratio": 0.5,
                                  "rel_change": 0.01 * n}
    got = norms.placement_summary(pl, depths, seeds)
    assert got["slope"]["pre"] == pytest.approx(2.0) and got["slope"]["ln-scaling"] == pytest.approx(1.0)
    assert got["rows"]["pre"][1:3] == pytest.approx((1.0, 7.0))
    assert got["rows"]["pre"][5] == pytest.approx(2.0)
    assert got["scaled_over_pre"] == pytest.approx(4 / 7)


def test_depth_slopes_measure_a_power_law_and_skip_rezero():
    depths = (2, 4, 8)
    ns = np.array(depths, dtype=float)
    mult = {"depth-mup": np.stack([(2 * ns) ** -0.5] * 3, axis=1), "rezero": np.zeros((3, 3))}
    got = norms.depth_slopes(mult, depths)
    assert set(got["measured"]) == {"depth-mup"}
    assert got["measured"]["depth-mup"] == pytest.approx(-0.5)
    assert got["derived"]["depth-mup"] == pytest.approx(-0.5)
