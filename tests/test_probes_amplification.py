"""Unit tests of the amplification / Admin probes in tfx.probes (GV-1 … GV-3, AM-1, AM-2, AD-1, AD-2).

Small models (d 32) so the whole file runs in a few seconds; the claims themselves
are tested at the quick profile's sizes in tests/test_claims.py."""

import numpy as np
import pytest
import torch

import tfx
from tfx import probes
from tfx.theory import admin_omega_profiling_free

TASK = tfx.synthetic("reverse", length=6)
BATCH = TASK.batch(0, 8)
SIZES = dict(d_model=32, n_heads=2, d_ffn=64)



def _model(n_enc=2, n_dec=2, seed=0, **kw):
    cfg = tfx.ModelConfig.for_task(TASK, n_enc=n_enc, n_dec=n_dec, **{**SIZES, **kw})
    return tfx.build_model(cfg, batch=BATCH if kw.get("init") == "admin" else None, seed=seed)


# ------------------------------------------------------------------ GV-1
def test_sublayer_grad_norms_match_autograd():
    """The norms are the gradients w.r.t. each sub-layer's output: the input of
    sub-layer i+1 is the output of sub-layer i, so autograd on the recorded inputs
    must give the same numbers."""
    m = _model(n_enc=3, n_dec=0, placement="post")
    got = probes.sublayer_grad_norms(m, BATCH)["encoder"]
    assert got["kinds"] == ["self-attn", "ffn"] * 3
    assert list(got["layer"]) == [1, 1, 2, 2, 3, 3]
    m.eval()
    with probes.record_branches(m, detach=False) as rec:
        loss = m.loss(BATCH)["loss"]
    xs = [r["x"] for r in rec["encoder"]][1:]  # inputs of sub-layers 2 … L = outputs of 1 … L-1
    grads = torch.autograd.grad(loss, xs)
    np.testing.assert_allclose(got["norm"][:-1], [float(g.norm()) for g in grads], rtol=1e-5)
    assert got["relative"].max() == pytest.approx(1.0)
    assert all(p.grad is None for p in m.parameters())  # cleaned up


def test_sublayer_grad_norms_decoder_kinds_and_relative():
    m = _model(n_enc=2, n_dec=2)
    r = probes.sublayer_grad_norms(m, BATCH)
    assert r["decoder"]["kinds"] == ["self-attn", "cross-attn", "ffn"] * 2
    top = max(r["encoder"]["norm"].max(), r["decoder"]["norm"].max())
    np.testing.assert_allclose(r["decoder"]["relative"], r["decoder"]["norm"] / top)
    per_stack = probes.sublayer_grad_norms(m, BATCH, relative_to="stack")
    assert per_stack["encoder"]["relative"].max() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="relative_to"):
        probes.sublayer_grad_norms(m, BATCH, relative_to="layer")


# ------------------------------------------------------------------ AM-1
def test_layer_dependency_pre_ln_is_the_papers_formula():
    """Pre-LN: β_{i,j} = std(a_j) / std(x_i) with x_i = x_0 + Σ_{j≤i} a_j (Liu et al. §4.1)."""
    m = _model(n_enc=3, n_dec=0, placement="pre")
    out = probes.layer_dependency(m, BATCH)["encoder"]
    beta = out["beta"]
    assert beta.shape == (7, 7)
    assert np.isnan(beta[np.triu_indices(7, 1)]).all()
    m.eval()
    with torch.no_grad(), probes.record_branches(m) as rec:
        m.loss(BATCH)
    r = rec["encoder"]
    stds = [float(r[0]["x"].std())] + [float(x["f"].std()) for x in r]
    for i in range(1, 7):
        x_i = r[i]["x"] if i < 6 else r[5]["x"] + r[5]["f"]
        np.testing.assert_allclose(beta[i, : i + 1], np.array(stds[: i + 1]) / float(x_i.std()), rtol=1e-5)
    np.testing.assert_allclose(out["branch_var"], np.array(stds[1:]) ** 2, rtol=1e-4)


def test_layer_dependency_post_ln_first_row():
    """Post-LN: x_1 = LN(x_0 + a_1), so β_{1,j} = std(piece j)/std(x_0 + a_1) (LN rescales
    both pieces by the same factor, which cancels)."""
    m = _model(n_enc=2, n_dec=0, placement="post")
    beta = probes.layer_dependency(m, BATCH)["encoder"]["beta"]
    m.eval()
    with torch.no_grad(), probes.record_branches(m) as rec:
        m.loss(BATCH)
    x0, a1 = rec["encoder"][0]["x"], rec["encoder"][0]["f"]
    z = float((x0 + a1).std())
    np.testing.assert_allclose(beta[1, :2], [float(x0.std()) / z, float(a1.std()) / z], rtol=1e-4)
    # rows are (nearly) unit vectors when the pieces are uncorrelated
    rows = np.nansum(beta**2, axis=1)
    assert np.all(np.abs(rows - 1) < 0.35), rows


def test_layer_dependency_decoder_and_rezero():
    m = _model(n_enc=2, n_dec=2, placement="pre")
    d = probes.layer_dependency(m, BATCH)
    assert d["decoder"]["beta"].shape == (7, 7) and d["decoder"]["kinds"][1] == "cross-attn"
    rz = probes.layer_dependency(_model(n_enc=2, n_dec=0, placement="rezero", init="rezero"), BATCH)["encoder"]
    # ReZero at init: α = 0, the network is the identity, every branch weight is 0
    np.testing.assert_allclose(rz["beta"][1:, 0], 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.diag(rz["beta"])[1:], 0.0, atol=1e-7)


# ------------------------------------------------------------------ AM-2
def test_perturb_random_scales_matrices_only():
    m = _model(n_enc=2, n_dec=0, placement="post")
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    new = probes.perturb_random(m, scale=1e-2, seed=3)
    for n, p in m.named_parameters():
        assert torch.equal(p, before[n])  # the original is untouched
    for n, p in new.named_parameters():
        delta = p.detach() - before[n]
        if n.startswith("encoder.") and p.ndim == 2:
            rel = float(delta.std() / before[n].std())
            assert rel == pytest.approx(1e-2, rel=0.15), n
        else:  # vectors and embeddings (x_0 fixed) are left alone
            assert float(delta.abs().max()) == 0, n
    again = probes.perturb_random(m, scale=1e-2, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(new.parameters(), again.parameters()))


def test_adam_step_moves_each_weight_by_lr():
    m = _model(n_enc=2, n_dec=0, placement="post")
    new = probes.adam_step(m, BATCH, lr=1e-4)
    for (n, p), q in zip(m.named_parameters(), new.parameters()):
        step = (q - p).detach().abs()
        assert float(step.max()) <= 1e-4 * 1.001, n
        if not n.startswith("encoder."):
            assert float(step.max()) == 0, n
    w = dict(new.named_parameters())["encoder.layers.0.ffn.f.fc1.weight"]
    w0 = dict(m.named_parameters())["encoder.layers.0.ffn.f.fc1.weight"]
    assert float((w - w0).detach().abs().median()) == pytest.approx(1e-4, rel=0.05)  # ≈ lr · sign(g)


def test_output_change_is_quadratic_in_the_perturbation():
    """Small δ: ΔF is linear in δ, so ‖ΔF‖² scales with its square — for noise and for Adam."""
    m = _model(n_enc=2, n_dec=0, placement="post")
    assert probes.output_change(m, BATCH, scale=0.0) == 0.0
    big, small = (probes.output_change(m, BATCH, scale=s, seed=1) for s in (1e-2, 1e-3))
    assert big / small == pytest.approx(100, rel=0.1)
    big, small = (probes.output_change(m, BATCH, "adam", lr=lr) for lr in (1e-5, 1e-6))
    assert big / small == pytest.approx(100, rel=0.1)
    with pytest.raises(ValueError, match="perturbation"):
        probes.output_change(m, BATCH, "sgd")


def test_stack_output_and_sweep_shapes():
    m = _model(n_enc=2, n_dec=2)
    assert probes.stack_output(m, BATCH).shape == (8, 7, 32)
    assert probes.stack_output(m, BATCH, "decoder").shape == (8, 7, 32)
    with pytest.raises(ValueError, match="stack"):
        probes.stack_output(_model(n_enc=2, n_dec=0), BATCH, "decoder")
    r = probes.output_change_sweep(TASK, (1, 2), schemes=("post", "admin"), seeds=2, batch_size=8, **SIZES)
    assert r["post"].shape == (2, 2) and (r["admin"] > 0).all()


# ------------------------------------------------------------------ GV-3
def test_grad_update_sizes_one_step():
    """One step: SGD's update is lr · g, so update/grad = lr for every matrix; Adam's
    first step is lr · sign(g), so every d×d matrix moves by lr · d."""
    m = _model(n_enc=2, n_dec=1, placement="post")
    sgd = probes.grad_update_sizes(m, TASK, "sgd", lr=0.1, steps=1, batch_size=8)
    np.testing.assert_allclose(sgd["update"] / sgd["grad"], 0.1, rtol=1e-4)
    adam = probes.grad_update_sizes(m, TASK, "adam", lr=1e-3, steps=1, batch_size=8)
    np.testing.assert_allclose(adam["update"], 1e-3 * 32, rtol=1e-3)
    assert len(adam["names"]) == 4 * (2 + 2)  # q, k, v, out in 2 encoder + 2 decoder attentions
    assert probes.log_spread(adam["update"]) == pytest.approx(0, abs=1e-3)
    assert probes.log_spread([1, 10, 100, 1000], q=0) == pytest.approx(3)


# ------------------------------------------------------------------ AD-1, AD-2
def test_admin_omegas():
    pf = _model(n_enc=2, n_dec=2, placement="admin", init="admin-profiling-free")
    om = probes.admin_omegas(pf)
    np.testing.assert_allclose(om["encoder"], admin_omega_profiling_free(4), rtol=1e-6)
    np.testing.assert_allclose(om["decoder"], admin_omega_profiling_free(6), rtol=1e-6)
    prof = probes.admin_omegas(_model(n_enc=3, n_dec=0, placement="admin", init="admin"))["encoder"]
    assert prof[0] == 1.0 and np.all(np.diff(prof) > 0)  # ω_i² = 1 + Σ_{j<i} Var f_j grows
    assert np.isnan(probes.admin_omegas(_model(placement="post"))["encoder"]).all()


def test_max_output_difference():
    a = _model(n_enc=2, n_dec=2, placement="admin", init="admin")
    assert probes.max_output_difference(a, a, BATCH) == 0.0
    b = tfx.reparameterize_admin(a)
    assert probes.max_output_difference(a, b, BATCH) < 1e-5
    assert probes.max_output_difference(a, _model(n_enc=2, n_dec=2, seed=1), BATCH) > 1e-2
