"""tfx.theory.gradients: Theorem 1's exponents (LN-4), per-parameter and per-layer gradient norms
(LN-4, LN-5), gradients at every sub-layer's output (GV-1) and gradient against update
sizes (GV-3). Small models, so the file runs in seconds; the claims themselves are tested
at the quick profile's sizes in tests/test_claims.py."""
import numpy as np
import pytest
import torch

import tfx
from tfx.nn import hooks
from tfx.theory import fit, gradients
from small_models import BATCH, SIZES, TASK, model as _model, tiny as _tiny


def test_theorem1_exponents():
    assert gradients.expected_exponent("post") == 0.0
    assert gradients.expected_exponent("Pre-LN") == -0.5
    Ls = [6, 8, 10, 12, 14]
    for p in ("post", "pre"):
        k, _, r2 = fit.fit_loglog(Ls, [gradients.last_ffn_grad_scaling(p, L) for L in Ls])
        assert k == pytest.approx(gradients.expected_exponent(p), abs=1e-12) and r2 == pytest.approx(1.0)
    assert gradients.last_ffn_grad_scaling("pre", 16) == pytest.approx(0.25)
    assert np.allclose(gradients.last_ffn_grad_scaling("pre", np.array([4, 9])), [0.5, 1 / 3])
    with pytest.raises(ValueError):
        gradients.expected_exponent("sandwich")


def test_grad_norms_match_a_manual_backward_and_leave_no_grads():
    m, _, batch = _tiny()
    g = gradients.grad_norms(m, batch)
    assert all(p.grad is None for p in m.parameters())
    m.loss(batch)["loss"].backward()
    manual = {n: float(p.grad.norm()) for n, p in m.named_parameters()}
    assert g.keys() == manual.keys()
    for n in g:
        assert g[n] == pytest.approx(manual[n], rel=1e-5, abs=1e-12)


def test_grad_norms_of_a_list_of_batches_is_the_norm_of_the_mean_gradient():
    m, task, _ = _tiny()
    b1, b2 = task.batch(1, 4), task.batch(2, 4)
    g = gradients.grad_norms(m, [b1, b2])
    grads = []
    for b in (b1, b2):
        m.zero_grad()
        m.loss(b)["loss"].backward()
        grads.append(m.encoder.layers[-1].ffn.f.fc2.weight.grad.clone())
    assert g["encoder.layers.2.ffn.f.fc2.weight"] == pytest.approx(float(((grads[0] + grads[1]) / 2).norm()), rel=1e-5)


def test_layer_grad_norms_and_last_ffn():
    m, _, batch = _tiny(N=4)
    g = gradients.grad_norms(m, batch)
    per = gradients.layer_grad_norms(m, batch, "encoder", grads=g)
    assert per.shape == (4,)
    assert per[2] == g["encoder.layers.2.ffn.f.fc2.weight"]
    assert gradients.last_ffn_grad_norm(m, grads=g) == per[-1]
    assert gradients.last_ffn_grad_norm(m, batch) == pytest.approx(per[-1], rel=1e-6)
    with pytest.raises(ValueError, match="stack"):
        gradients.layer_grad_norms(m, batch, "decoder")
    with pytest.raises(KeyError):
        gradients.layer_grad_norms(m, batch, "encoder", "ffn.f.nope", grads=g)


def test_layer_grad_norms_default_stack_is_the_decoder_of_an_encoder_decoder():
    task = tfx.synthetic("reverse", vocab=8, length=5)
    m = tfx.build_model(n_enc=2, n_dec=3, d_model=16, n_heads=2, d_ffn=32,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab)
    assert gradients.layer_grad_norms(m, task.batch(0, 4)).shape == (3,)


def test_ffn_grad_profiles_shape_and_seeds():
    task = tfx.synthetic("reverse", vocab=8, length=5)
    g = gradients.ffn_grad_profiles(task, "pre", 3, seeds=2, batch_size=4, d_model=16, n_heads=2, d_ffn=32)
    assert g.shape == (2, 3) and np.all(g > 0)
    assert g[0, 0] != g[1, 0]
    m = tfx.build_model(n_enc=3, n_dec=0, placement="pre", seed=1, d_model=16, n_heads=2, d_ffn=32,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab)
    np.testing.assert_allclose(g[1], gradients.layer_grad_norms(m, task.batch(1, 4)), rtol=1e-6)


def test_sublayer_grad_norms_match_autograd():
    """The norms are the gradients w.r.t. each sub-layer's output: the input of
    sub-layer i+1 is the output of sub-layer i, so autograd on the recorded inputs
    must give the same numbers."""
    m = _model(n_enc=3, n_dec=0, placement="post")
    got = gradients.sublayer_grad_norms(m, BATCH)["encoder"]
    assert got["kinds"] == ["self-attn", "ffn"] * 3
    assert list(got["layer"]) == [1, 1, 2, 2, 3, 3]
    m.eval()
    with hooks.record_branches(m, detach=False) as rec:
        loss = m.loss(BATCH)["loss"]
    xs = [r["x"] for r in rec["encoder"]][1:]  # inputs of sub-layers 2 … L = outputs of 1 … L-1
    grads = torch.autograd.grad(loss, xs)
    np.testing.assert_allclose(got["norm"][:-1], [float(g.norm()) for g in grads], rtol=1e-5)
    assert got["relative"].max() == pytest.approx(1.0)
    assert all(p.grad is None for p in m.parameters())  # cleaned up


def test_sublayer_grad_norms_decoder_kinds_and_relative():
    m = _model(n_enc=2, n_dec=2)
    r = gradients.sublayer_grad_norms(m, BATCH)
    assert r["decoder"]["kinds"] == ["self-attn", "cross-attn", "ffn"] * 2
    top = max(r["encoder"]["norm"].max(), r["decoder"]["norm"].max())
    np.testing.assert_allclose(r["decoder"]["relative"], r["decoder"]["norm"] / top)
    per_stack = gradients.sublayer_grad_norms(m, BATCH, relative_to="stack")
    assert per_stack["encoder"]["relative"].max() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="relative_to"):
        gradients.sublayer_grad_norms(m, BATCH, relative_to="layer")


def test_grad_update_sizes_one_step():
    """One step: SGD's update is lr · g, so update/grad = lr for every matrix; Adam's
    first step is lr · sign(g), so every d×d matrix moves by lr · d."""
    m = _model(n_enc=2, n_dec=1, placement="post")
    sgd = gradients.grad_update_sizes(m, TASK, "sgd", lr=0.1, steps=1, batch_size=8)
    np.testing.assert_allclose(sgd["update"] / sgd["grad"], 0.1, rtol=1e-4)
    adam = gradients.grad_update_sizes(m, TASK, "adam", lr=1e-3, steps=1, batch_size=8)
    np.testing.assert_allclose(adam["update"], 1e-3 * 32, rtol=1e-3)
    assert len(adam["names"]) == 4 * (2 + 2)  # q, k, v, out in 2 encoder + 2 decoder attentions
    assert fit.log_spread(adam["update"]) == pytest.approx(0, abs=1e-3)
    assert fit.log_spread([1, 10, 100, 1000], q=0) == pytest.approx(3)


def test_sublayer_gains_predict_the_ratio_and_see_a_position_specific_gradient():
    """(1 + g)/(1 + v) predicts ‖Δx_{i-1}‖²/‖Δx_i‖² of a Post-LN stack on average; the
    encoder of an encoder–decoder gets a common-mode gradient, an encoder alone does not."""
    alone = gradients.sublayer_gains(_model(n_enc=4, n_dec=0, placement="post"), BATCH)["encoder"]
    both = gradients.sublayer_gains(_model(n_enc=4, n_dec=2, placement="post"), BATCH)
    assert alone["measured"].shape == alone["predicted"].shape == (7,)
    ratio = np.prod(alone["measured"]) / np.prod(alone["predicted"])
    assert 0.5 < ratio < 2, ratio
    assert both["encoder"]["common_mode"][-1] > 0.7 > 0.5 > alone["common_mode"][-1]
    assert both["decoder"]["kinds"] == ["self-attn", "cross-attn", "ffn"] * 2


def test_update_balance_windows_and_rms():
    """One step from the start: Adam moves every coordinate by lr (RMS = lr for every matrix,
    square or not: the old check that cannot fail); over a later window it need not."""
    m = _model(n_enc=2, n_dec=1, placement="post")
    first = gradients.update_balance(m, TASK, "adam", lr=1e-3, window=(0, 1), batch_size=8)
    np.testing.assert_allclose(first["update"], 1e-3, rtol=0.02)  # a dead ReLU unit: g = 0, no step
    assert any(s[0] != s[1] for s in first["shapes"])      # non-square FFN matrices included
    assert first["coord_update"].size == sum(int(np.prod(s)) for s in first["shapes"])
    later = gradients.update_balance(m, TASK, "adam", lr=1e-3, window=(5, 15), batch_size=8)
    assert fit.log_spread(later["update"]) > fit.log_spread(first["update"]) + 0.05
    sgd = gradients.update_balance(m, TASK, "sgd", lr=0.1, window=(0, 1), batch_size=8, momentum=0.0)
    np.testing.assert_allclose(sgd["update"] / sgd["grad"], 0.1, rtol=1e-4)
    assert gradients.equalises(first) and not gradients.equalises(sgd)
    with pytest.raises(ValueError, match="window"):
        gradients.update_balance(m, TASK, window=(3, 3))


def test_profile_shape():
    up = {"low": 0.1, "high": 0.3}
    assert gradients.profile_shape(up) == "rises"
    assert gradients.profile_shape({"low": -0.5, "high": -0.2}) == "falls"
    assert gradients.profile_shape({"low": -0.05, "high": 0.08}) == "about flat"
    assert gradients.profile_shape({"low": -0.05, "high": 0.2}) == "undecided"


def _profile(kinds, ratio):
    rel = np.array([ratio ** (len(kinds) - 1 - k) for k in range(len(kinds))])
    return {"relative": rel, "norm": 2 * rel, "kinds": kinds}


def test_bottom_top_ratios_and_the_twice_as_deep_prediction():
    enc, dec = ["self-attn", "ffn"] * 3, ["self-attn", "cross-attn", "ffn"] * 3
    run = {"encoder": _profile(enc, 1.0), "decoder": _profile(dec, 0.5)}
    prof = gradients.mean_profiles([run, run])
    assert np.allclose(prof["decoder"]["relative"], run["decoder"]["relative"])
    v = gradients.bottom_top_ratios({"post": prof, "pre": prof})
    assert v["post_enc"] == pytest.approx(1.0) and v["post_dec"] == pytest.approx(0.5 ** 8)
    assert v["ex_twice"] == pytest.approx(v["post_dec"] ** 2) and "pre_dec" in v


def test_cross_drop_compares_measurement_and_prediction():
    v = gradients.cross_drop([0.5, 0.5], [0.5, 0.25], [1.0, 1.0])
    assert v["cross_drop"] == pytest.approx(0.5) and v["other_drop"] == pytest.approx(1.0)
    assert v["cross_err"] == pytest.approx(50.0)  # (0 + 100 %) / 2
    assert v["cross_total"] == pytest.approx(0.25)


def test_encoder_summary_of_gains_and_profiles():
    kinds = ["self-attn", "ffn"] * 2
    g = {"kinds": kinds, "forward_gain": np.full(4, 0.5), "backward_gain": np.array(
        [0.2 if k == "self-attn" else 0.5 for k in kinds]), "common_mode": np.full(4, 0.3),
        "predicted": np.full(3, 0.81), "measured": np.full(3, 0.64)}
    runs = [(np.array([0.6, 0.8, 1.0, 1.0]), g), (np.array([0.8, 0.9, 1.0, 1.0]), g)]
    s = gradients.encoder_summary(runs)
    assert (s["bottom"], s["bottom_lo"], s["bottom_hi"]) == pytest.approx((0.7, 0.6, 0.8))
    assert (s["attn_g"], s["ffn_g"], s["attn_v"]) == pytest.approx((0.2, 0.5, 0.5))
    assert s["pred"] == pytest.approx(0.9 ** 3) and s["meas"] == pytest.approx(0.8 ** 3)
    assert gradients.branch_gains(runs, "backward_gain", "self-attn").shape == (2, 2)


def test_smallest_gradients_names_the_smallest_rms():
    balance = {"names": ["a", "b", "c", "d"], "grad": np.array([0.1, 0.3, 0.2, 5.0])}
    assert gradients.smallest_gradients(balance, k=2) == ["a", "c"]


def test_finite_depth_exponent_sits_above_minus_a_half_with_an_embedding_offset():
    assert gradients.finite_depth_exponent([2, 6, 24], 0.0, 1.0) == pytest.approx(-0.5)
    assert -0.5 < gradients.finite_depth_exponent([2, 6, 12, 18, 24], 1.5, 1.0) < -0.3


def test_last_layer_summary_reads_the_intervals():
    depths = [2, 4, 8]
    last = {"post": np.ones(3), "pre": np.array([1.0, 0.7, 0.5])}
    expo = {"post": {"exponent": 0.01, "low": -0.05, "high": 0.07},
            "pre": {"exponent": -0.45, "low": -0.48, "high": -0.42}}
    out = gradients.last_layer_summary(depths, last, expo, 1.0, 1.0)
    assert (out["post_verdict"], out["pre_verdict"]) == ("inside", "outside")
    assert out["k_pre_lo"] == -0.48 and out["pre_first"] == 1.0 and out["pre_last"] == 0.5
    assert out["k_offset"] == pytest.approx(gradients.finite_depth_exponent(depths, 1.0, 1.0))


def test_last_ffn_grads_are_the_profiles_last_column():
    task = tfx.synthetic("reverse", vocab=8, length=5)
    kw = dict(batch_size=4, d_model=16, n_heads=2, d_ffn=32)
    last = gradients.last_ffn_grads(task, "pre", [2, 3], seeds=2, **kw)
    assert last.shape == (2, 2)
    assert last[1] == pytest.approx(gradients.ffn_grad_profiles(task, "pre", 3, seeds=2, **kw)[:, -1])


def test_ffn_weight_grad_parts_factor_the_w2_gradient():
    parts = gradients.ffn_weight_grad_parts(_model(placement="post"), BATCH)
    assert parts["w2"] == pytest.approx(parts["align"] * parts["dz"] * parts["h"])
    assert ((parts["align"] > 0) & (parts["align"] <= 1 + 1e-6)).all() and len(parts["w2"]) == 2
    task = tfx.synthetic("reverse", vocab=8, length=5)
    out = gradients.encoder_under_decoder(task, 2, 2, 4, d_model=16, n_heads=2, d_ffn=32)
    assert out["seeds"] == 2 and 0 <= out["w2_rises"] <= 2 and out["align_top"] > 0


def test_gradient_exercises_measure_the_wider_ffn():
    out = gradients.gradient_exercises(TASK, [2, 4, 6], 6, 8, seeds=2, **SIZES)
    assert out["ln3_ex3_r1_pred"] == pytest.approx(1.5) and out["ln4_ex2_seeds"] == 2
    assert out["ln3_ex3_r8"] < out["ln3_ex3_r1"]
    assert out["ln4_ex2_lo"] <= out["ln4_ex2_k"] <= out["ln4_ex2_hi"]
