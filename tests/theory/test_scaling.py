"""tfx.theory.scaling: ReZero's identity check, DeepNorm's constants in both conventions and their
derivation, and the init-time diagnostics behind chapter 10 and its explorer."""
from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import torch

import tfx
from tfx.nn import constants
from tfx.theory import scaling

matplotlib.use("Agg")
TASK = tfx.synthetic("reverse", length=8)
BATCH = TASK.batch(0, 8)
SIZES = dict(d_model=32, n_heads=4, d_ffn=64)


def test_bad_scheme_names_are_refused():
    with pytest.raises(ValueError, match="'nope'"):
        scaling.init_diagnostics_grid(["nope"], [2], TASK, BATCH)
    with pytest.raises(ValueError, match="scheme='xavier'"):  # an initialiser, not a scheme: Post-LN is 'post'
        scaling.init_diagnostics("xavier", 2, TASK, BATCH, **SIZES)


def test_deepnorm_derivation_balance_and_update_sum():
    der = scaling.derive_deepnorm()
    assert all(der.checks.values())
    import sympy as sp

    L = sp.Symbol("L", positive=True)
    assert sp.simplify(der.alpha - L ** sp.Rational(1, 4)) == 0
    for N in (1, 6, 100):
        c = constants.deepnorm_constants(N, 0)["encoder"]
        assert float(scaling.deepnorm_update_sum(2 * N, c["alpha"], c["beta"])) == pytest.approx(1.0)
        assert float(scaling.deepnorm_balance(c["alpha"], c["beta"])) == pytest.approx(1.0)
    enc = {conv: constants.deepnorm_constants(12, 12, conv)["encoder"] for conv in constants.DEEPNORM_CONVENTIONS}
    assert float(scaling.deepnorm_balance(enc["paper"]["alpha"], enc["paper"]["beta"])) == pytest.approx(0.993, abs=1e-3)
    assert float(scaling.deepnorm_balance(enc["torchscale"]["alpha"], enc["torchscale"]["beta"])) == pytest.approx(1.735, abs=1e-3)


def test_use_deepnorm_convention_rescales_exactly_the_encoder_value_output_ffn_weights():
    m = tfx.build_scheme("deepnorm", TASK, 3, 4, **SIZES)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    scaling.use_deepnorm_convention_(m, "torchscale")
    ratio = 1.15 / 0.87
    for k, v in m.state_dict().items():
        scaled = k.startswith("encoder.") and any(f".{w}.weight" in k for w in ("v_proj", "out_proj", "fc1", "fc2"))
        torch.testing.assert_close(v, before[k] * ratio if scaled else before[k])
    with pytest.raises(ValueError, match="placement='deepnorm'"):
        scaling.use_deepnorm_convention_(tfx.build_scheme("post", TASK, 2, 2, **SIZES), "torchscale")


def test_identity_gap():
    rz = tfx.build_scheme("rezero", TASK, 2, 2, **SIZES)
    assert scaling.identity_gap(rz, BATCH) == {"encoder": 0.0, "decoder": 0.0}
    enc_only = tfx.build_scheme("rezero", TASK, 2, 0, **SIZES)
    assert scaling.identity_gap(enc_only, BATCH) == {"encoder": 0.0}
    post = tfx.build_scheme("post", TASK, 2, 2, **SIZES)
    assert all(v > 0.1 for v in scaling.identity_gap(post, BATCH).values())


def test_init_diagnostics_shapes_and_rezero_extremes():
    d = scaling.init_diagnostics("rezero", 2, TASK, BATCH, **SIZES)
    assert d.beta.shape == (5, 5)  # 2 layers × 2 sub-layers + the embedding
    assert len(d.grad["encoder"]) == 4 and len(d.grad["decoder"]) == 6
    assert d.kinds["decoder"][:3] == ["self-attn", "cross-attn", "ffn"]
    assert d.out_change == 0.0 and d.out_change_adam == 0.0  # α = 0 hides the weights; the encoder gets no gradient
    assert np.all(d.grad["encoder"] == 0) and d.grad["decoder"].max() == pytest.approx(1.0)
    assert d.sum_beta_diag_sq == 0.0 and d.identity_gap == {"encoder": 0.0, "decoder": 0.0}
    dn = scaling.init_diagnostics("deepnorm", 4, TASK, BATCH, **SIZES)
    post = scaling.init_diagnostics("post", 4, TASK, BATCH, **SIZES)
    assert 0 < dn.rel_out_change < post.rel_out_change
    assert dn.sum_beta_diag_sq < post.sum_beta_diag_sq
    assert post.out_norm_sq == pytest.approx(SIZES["d_model"], rel=1e-3)  # LayerNorm output: ‖F‖² = d


def test_grid_mean():
    grid = scaling.init_diagnostics_grid(("post", "deepnorm"), (1, 2), TASK, BATCH, seeds=2, **SIZES)
    assert set(grid) == {(s, n) for s in ("post", "deepnorm") for n in (1, 2)}
    assert all(len(v) == 2 for v in grid.values())
    ns, y = scaling.grid_mean(grid, "deepnorm", "rel_out_change")
    assert list(ns) == [1, 2] and y[0] == pytest.approx(np.mean([d.rel_out_change for d in grid["deepnorm", 1]]))


def test_deepnorm_conventions_only_the_paper_keeps_the_balance():
    rows = scaling.deepnorm_conventions([(6, 6), (12, 0)])
    assert [(r["N"], r["M"], r["stack"]) for r in rows] == [(6, 6, "encoder"), (6, 6, "decoder"),
                                                            (12, 0, "encoder")]
    enc = rows[0]
    assert enc["balance_paper"] == pytest.approx(1.0, abs=0.01)
    assert abs(enc["balance_torchscale"] - 1.0) > 0.5
    assert enc["kappa_torchscale"] / enc["kappa_paper"] == pytest.approx(1.15 / 0.87, rel=1e-3)


def test_diagnostics_summary_states_each_scheme_and_needs_the_three_it_compares():
    schemes = ("post", "pre", "deepnorm")
    diag = scaling.init_diagnostics_grid(schemes, (2, 3), TASK, BATCH, d_model=16, n_heads=2, d_ffn=32)
    s = scaling.diagnostics_summary(diag, schemes, (2, 3))
    assert {f"{k}_{v}" for k in schemes for v in ("sb", "dec")} <= set(s) and s["depth"] == 3 and s["depth_min"] == 2
    assert s["post_over_dn"] == pytest.approx(diag["post", 3][0].rel_out_change_adam
                                              / diag["deepnorm", 3][0].rel_out_change_adam)
    assert s["dn_trend"] in ("falls", "grows")
    with pytest.raises(ValueError, match="schemes: the ratios need pre"):
        scaling.diagnostics_summary(diag, ("post", "deepnorm"), (2, 3))


def test_stream_drift_is_zero_for_rezero_at_init():
    m = tfx.build_scheme("rezero", TASK, 2, 2, batch=BATCH, **SIZES)
    d = scaling.stream_drift(m, BATCH)
    assert d.shape == (4,) and np.allclose(d, 0.0)  # 2 layers × 2 sub-layers; α = 0: the identity
