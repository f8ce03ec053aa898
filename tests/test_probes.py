"""Unit tests for the LayerNorm / gradients-at-init probes (tfx.probes, LN-1 … LN-5 section)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfx
from tfx import probes, theory



@pytest.mark.parametrize("d", [3, 16, 200])
@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.3])
def test_ln_jacobian_norm_exact_matches_closed_form(d, eps):
    x = 3.0 * torch.randn(d, dtype=torch.float64) + 1.0
    got = probes.ln_jacobian_norm(x, eps=eps, method="exact")
    assert got == pytest.approx(float(theory.layernorm_jacobian_norm(x, eps=eps)), rel=1e-9)


@pytest.mark.parametrize("d", [8, 64, 700])
def test_ln_jacobian_norm_power_iteration_agrees_with_exact(d):
    x = torch.randn(d, dtype=torch.float64) * 5
    exact = probes.ln_jacobian_norm(x, eps=1e-5, method="exact")
    power = probes.ln_jacobian_norm(x, eps=1e-5, method="power")
    assert power == pytest.approx(exact, rel=1e-8)


def test_ln_jacobian_norm_of_a_module_with_gain():
    """With a random gain γ the Jacobian is diag(γ) J and not symmetric: power
    iteration on JᵀJ must still find its largest singular value."""
    ln = torch.nn.LayerNorm(32, eps=1e-5).double()
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
    x = torch.randn(32, dtype=torch.float64)
    exact = probes.ln_jacobian_norm(x, ln, method="exact")
    power = probes.ln_jacobian_norm(x, ln, method="power", iters=2000, tol=1e-13)
    assert power == pytest.approx(exact, rel=1e-6)
    with torch.no_grad():  # γ = 1, β = 0: back to the closed form
        ln.weight.fill_(1.0)
        ln.bias.zero_()
    assert probes.ln_jacobian_norm(x, ln) == pytest.approx(float(theory.layernorm_jacobian_norm(x, 1e-5)), rel=1e-9)


def test_ln_jacobian_norm_batches_and_rejects_bad_method():
    x = torch.randn(4, 5, 16, dtype=torch.float64)
    got = probes.ln_jacobian_norm(x, eps=0.0)
    assert got.shape == (4, 5)
    np.testing.assert_allclose(got, theory.layernorm_jacobian_norm(x, eps=0.0).numpy(), rtol=1e-9)
    with pytest.raises(ValueError, match="method"):
        probes.ln_jacobian_norm(x[0, 0], method="svd")


def _tiny(placement="post", N=3, **kw):
    task = tfx.synthetic("reverse", vocab=8, length=5)
    m = tfx.build_model(n_enc=N, n_dec=0, placement=placement, d_model=16, n_heads=2, d_ffn=32,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab, **kw)
    return m, task, task.batch(0, 4)


def test_grad_norms_match_a_manual_backward_and_leave_no_grads():
    m, _, batch = _tiny()
    g = probes.grad_norms(m, batch)
    assert all(p.grad is None for p in m.parameters())
    m.loss(batch)["loss"].backward()
    manual = {n: float(p.grad.norm()) for n, p in m.named_parameters()}
    assert g.keys() == manual.keys()
    for n in g:
        assert g[n] == pytest.approx(manual[n], rel=1e-5, abs=1e-12)


def test_grad_norms_of_a_list_of_batches_is_the_norm_of_the_mean_gradient():
    m, task, _ = _tiny()
    b1, b2 = task.batch(1, 4), task.batch(2, 4)
    g = probes.grad_norms(m, [b1, b2])
    grads = []
    for b in (b1, b2):
        m.zero_grad()
        m.loss(b)["loss"].backward()
        grads.append(m.encoder.layers[-1].ffn.f.fc2.weight.grad.clone())
    assert g["encoder.layers.2.ffn.f.fc2.weight"] == pytest.approx(float(((grads[0] + grads[1]) / 2).norm()), rel=1e-5)


def test_layer_grad_norms_and_last_ffn():
    m, _, batch = _tiny(N=4)
    g = probes.grad_norms(m, batch)
    per = probes.layer_grad_norms(m, batch, "encoder", grads=g)
    assert per.shape == (4,)
    assert per[2] == g["encoder.layers.2.ffn.f.fc2.weight"]
    assert probes.last_ffn_grad_norm(m, grads=g) == per[-1]
    assert probes.last_ffn_grad_norm(m, batch) == pytest.approx(per[-1], rel=1e-6)
    with pytest.raises(ValueError, match="stack"):
        probes.layer_grad_norms(m, batch, "decoder")
    with pytest.raises(KeyError):
        probes.layer_grad_norms(m, batch, "encoder", "ffn.f.nope", grads=g)


def test_layer_grad_norms_default_stack_is_the_decoder_of_an_encoder_decoder():
    task = tfx.synthetic("reverse", vocab=8, length=5)
    m = tfx.build_model(n_enc=2, n_dec=3, d_model=16, n_heads=2, d_ffn=32,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab)
    assert probes.layer_grad_norms(m, task.batch(0, 4)).shape == (3,)


def test_hidden_norms_post_ln_output_is_d_and_pre_ln_stream_is_cumulative():
    d = 16
    m, _, batch = _tiny("post")
    h = probes.hidden_norms(m, batch)
    assert h["ffn_sum"].shape == h["attn_sum"].shape == h["output"].shape == (3,)
    np.testing.assert_allclose(h["output"], d, rtol=1e-3)  # an LN output has ‖y‖² = d (eps tiny)
    m, _, batch = _tiny("pre")
    h = probes.hidden_norms(m, batch)
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
    x0 = probes.gaussian_inputs(3, 7, 16, seed=1)
    assert x0.shape == (3, 7, 16)
    h = probes.hidden_norms(m, x0)
    assert h["input"] == pytest.approx(float((x0.double() ** 2).sum(-1).mean()))
    with torch.no_grad():
        x = m.encoder.layers[1](m.encoder.layers[0](x0))
    assert h["ffn_sum"][-1] == pytest.approx(float((x.double() ** 2).sum(-1).mean()), rel=1e-5)


def test_xiong_simplified_makes_attention_uniform_and_weights_xavier_normal():
    d = 64
    m = tfx.build_model(n_enc=2, n_dec=0, d_model=d, n_heads=1, d_ffn=d, src_vocab=10, tgt_vocab=10)
    probes.xiong_simplified(m, seed=3)
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


def test_profile_stats():
    up = probes.profile_stats([1, 2, 3, 4])
    assert up["spearman"] == pytest.approx(1.0) and up["last_over_first"] == 4 and up["slope"] == pytest.approx(1.0)
    down = probes.profile_stats([4, 3, 2.5, 1])
    assert down["spearman"] == pytest.approx(-1.0)
    flat = probes.profile_stats([2, 2, 2])
    assert flat["cv"] == 0 and flat["spearman"] == 0 and flat["slope"] == pytest.approx(0, abs=1e-12)
    with pytest.raises(ValueError):
        probes.profile_stats([1])


def test_ffn_grad_profiles_shape_and_seeds():
    task = tfx.synthetic("reverse", vocab=8, length=5)
    g = probes.ffn_grad_profiles(task, "pre", 3, seeds=2, batch_size=4, d_model=16, n_heads=2, d_ffn=32)
    assert g.shape == (2, 3) and np.all(g > 0)
    assert g[0, 0] != g[1, 0]
    m = tfx.build_model(n_enc=3, n_dec=0, placement="pre", seed=1, d_model=16, n_heads=2, d_ffn=32,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab)
    np.testing.assert_allclose(g[1], probes.layer_grad_norms(m, task.batch(1, 4)), rtol=1e-6)
