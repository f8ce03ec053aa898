"""Every initialiser's scale factors, and Admin's profiling and reparameterisation (AD-2)."""
import math

import pytest
import torch

import tfx
import tfx.theory.dependency
import tfx.nn.init
from tfx import ModelConfig, build_model, reparameterize_admin
from tfx.nn.blocks import Residual
from tfx.nn.constants import admin_omega_profiling_free, deepnorm_constants
from tfx.nn.hooks import record_branches

D = 128


def _cfg(**kw):
    base = dict(src_vocab=40, tgt_vocab=40, d_model=D, n_heads=4, d_ffn=4 * D, n_enc=4, n_dec=3)
    base.update(kw)
    return ModelConfig(**base)


def _xavier_std(fan_in, fan_out):
    return math.sqrt(2 / (fan_in + fan_out))


def test_xavier_defaults():
    m = build_model(_cfg())
    w = m.encoder.layers[0].self_attn.f.q_proj.weight
    assert w.std().item() == pytest.approx(_xavier_std(D, D), rel=0.03)
    w = m.encoder.layers[0].ffn.f.fc1.weight
    assert w.std().item() == pytest.approx(_xavier_std(D, 4 * D), rel=0.03)
    assert m.src_embed.tok.weight.std().item() == pytest.approx(D**-0.5, rel=0.05)
    assert m.encoder.layers[0].self_attn.f.q_proj.bias.abs().max() == 0


def test_t_fixup_scale_factors():
    """TF-2: the same draws as Xavier, times the T-Fixup factors, q/k untouched."""
    xav = build_model(_cfg(placement="none"), seed=3)
    tfix = build_model(_cfg(placement="none", init="t-fixup"), seed=3)
    Ne, Nd = 4, 3
    enc, dec = 0.67 * Ne**-0.25, (9 * Nd) ** -0.25

    def ratio(get):
        return (get(tfix) / get(xav)).flatten()

    for get, want in [
        (lambda m: m.encoder.layers[1].self_attn.f.v_proj.weight, enc),
        (lambda m: m.encoder.layers[1].self_attn.f.out_proj.weight, enc),
        (lambda m: m.encoder.layers[2].ffn.f.fc1.weight, enc),
        (lambda m: m.encoder.layers[2].ffn.f.fc2.weight, enc),
        (lambda m: m.decoder.layers[0].self_attn.f.v_proj.weight, dec),
        (lambda m: m.decoder.layers[0].cross_attn.f.out_proj.weight, dec),
        (lambda m: m.decoder.layers[2].ffn.f.fc2.weight, dec),
        (lambda m: m.src_embed.tok.weight, (9 * Ne) ** -0.25),
        (lambda m: m.tgt_embed.tok.weight, (9 * Nd) ** -0.25),
        (lambda m: m.encoder.layers[0].self_attn.f.q_proj.weight, 1.0),
        (lambda m: m.decoder.layers[1].cross_attn.f.k_proj.weight, 1.0),
    ]:
        torch.testing.assert_close(ratio(get), torch.full_like(ratio(get), want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("init, weights, embeddings", [("t-fixup-weights", True, False),
                                                       ("t-fixup-embeddings", False, True)])
def test_t_fixup_ablations_apply_one_factor_each(init, weights, embeddings):
    """TF-2's ablation: each keeps one of T-Fixup's two factors and leaves the other at Xavier."""
    xav = build_model(_cfg(placement="none"), seed=3)
    full = build_model(_cfg(placement="none", init="t-fixup"), seed=3)
    part = build_model(_cfg(placement="none", init=init), seed=3)
    for get, applied in ((lambda m: m.encoder.layers[1].self_attn.f.v_proj.weight, weights),
                         (lambda m: m.decoder.layers[2].ffn.f.fc2.weight, weights),
                         (lambda m: m.src_embed.tok.weight, embeddings),
                         (lambda m: m.tgt_embed.tok.weight, embeddings)):
        torch.testing.assert_close(get(part), get(full if applied else xav))
        assert not torch.equal(get(full), get(xav))  # the factor is there to leave out


def test_lipschitz_linears_keep_xaviers_embeddings():
    """LP-3's ablation: Xu et al.'s linear rule, U(±sqrt(1/isize)), with Xavier's embeddings."""
    xav = build_model(_cfg(), seed=5)
    lip = build_model(_cfg(init="lipschitz"), seed=5)
    part = build_model(_cfg(init="lipschitz-linears"), seed=5)
    torch.testing.assert_close(part.src_embed.tok.weight, xav.src_embed.tok.weight)
    assert not torch.equal(lip.src_embed.tok.weight, xav.src_embed.tok.weight)
    for lin in (part.encoder.layers[0].self_attn.f.q_proj, part.decoder.layers[1].ffn.f.fc2):
        l = math.sqrt(1 / lin.in_features)
        assert lin.weight.abs().max() <= l and lin.weight.std().item() == pytest.approx(l / math.sqrt(3), rel=0.03)


def test_lipschitz_bounds():
    """LP-3: embeddings U(±sqrt(2/(esize+vsize))), linears U(±sqrt(1/isize))."""
    m = build_model(_cfg(init="lipschitz"))
    e = math.sqrt(2 / (D + 40))
    emb = m.src_embed.tok.weight
    assert emb.abs().max() <= e and emb.abs().max() > 0.95 * e
    for lin in (m.encoder.layers[0].self_attn.f.q_proj, m.decoder.layers[1].ffn.f.fc2):
        l = math.sqrt(1 / lin.in_features)
        assert lin.weight.abs().max() <= l and lin.weight.abs().max() > 0.95 * l
        assert lin.weight.std().item() == pytest.approx(l / math.sqrt(3), rel=0.03)


def test_deepnorm_gains_and_alpha():
    m = build_model(_cfg(placement="deepnorm", init="deepnorm"))
    c = deepnorm_constants(4, 3)
    for stack, side in ((m.encoder, "encoder"), (m.decoder, "decoder")):
        v = stack.layers[0].self_attn.f.v_proj.weight
        q = stack.layers[0].self_attn.f.q_proj.weight
        assert v.std().item() == pytest.approx(c[side]["beta"] * _xavier_std(D, D), rel=0.03)
        assert q.std().item() == pytest.approx(_xavier_std(D, D), rel=0.03)
        assert float(stack.layers[0].ffn.alpha) == pytest.approx(c[side]["alpha"])


def test_rezero_alpha_zero():
    m = build_model(_cfg(placement="rezero", init="rezero"))
    assert all(float(r.alpha.detach()) == 0.0 for _, r in m.residuals())


def test_admin_needs_a_batch():
    with pytest.raises(ValueError, match="batch"):
        build_model(_cfg(placement="admin", init="admin"))


def test_admin_profiling_recurrence():
    """AD-1: ω_1 = 1 and ω_{k+1} = sqrt(Var[x_k·ω_k] + Var[f_k]) per stack, recomputed
    independently from a recorded forward pass (which sees the same ω)."""
    task = tfx.synthetic("reverse", vocab=36, length=10)
    b = task.batch(0, 16)
    m = build_model(_cfg(placement="admin", init="admin", src_vocab=40, tgt_vocab=40), batch=b).eval()
    with torch.no_grad(), record_branches(m) as rec:
        m.loss(b)
    for stack, res in (("encoder", m.encoder), ("decoder", m.decoder)):
        subs = [r for r in res.modules() if isinstance(r, Residual)]
        assert len(subs) == len(rec[stack]) == (8 if stack == "encoder" else 9)
        assert torch.all(subs[0].omega == 1.0)
        for k in range(len(subs) - 1):
            x, f = rec[stack][k]["x"], rec[stack][k]["f"]
            want = math.sqrt(float((x * subs[k].omega.detach()).var()) + float(f.var()))
            assert float(subs[k + 1].omega[0]) == pytest.approx(want, rel=1e-5)
            assert torch.all(subs[k + 1].omega == subs[k + 1].omega[0])  # a constant vector at init
        assert float(subs[-1].omega[0]) > float(subs[1].omega[0]) > 1.0


def _admin_omegas(profiling, **kw):
    b = tfx.synthetic("reverse", vocab=36, length=10).batch(0, 16)
    cfg = _cfg(placement="admin", init="admin", **kw)
    if profiling is not None:
        cfg = cfg.replace(admin_profiling=profiling)
    return tfx.theory.dependency.admin_omegas(build_model(cfg, batch=b))


DROPOUTS = dict(dropout=0.3, attn_dropout=0.1, act_dropout=0.1)


def test_admin_profiles_in_training_mode_by_default():
    """AD-1, as the authors' code does it: ω is set in the first *training* forward pass, with
    dropout active, so the measured variances (and ω) are larger than with dropout off."""
    assert ModelConfig().admin_profiling == "train"
    train, evl, default = (_admin_omegas(p, **DROPOUTS) for p in ("train", "eval", None))
    for stack in ("encoder", "decoder"):
        assert list(default[stack]) == list(train[stack])  # the default is the authors' way
        assert train[stack][0] == evl[stack][0] == 1.0  # the running ratio starts at 1
        assert (train[stack][1:] > evl[stack][1:]).all()
        assert train[stack][-1] > 1.1 * evl[stack][-1]  # dropout 0.3 inflates each Var[f] by up to 1/0.7


def test_admin_eval_profiling_reproduces_dropout_free_omegas():
    """``admin_profiling='eval'`` is tfx's earlier behaviour: dropout off, so ω does not
    depend on the dropout rate — the same ω as a model without dropout, in either mode."""
    evl = _admin_omegas("eval", **DROPOUTS)
    for no_dropout in (_admin_omegas("eval"), _admin_omegas("train")):
        for stack in ("encoder", "decoder"):
            assert evl[stack] == pytest.approx(no_dropout[stack], rel=1e-6)


def test_admin_profiling_mode_is_validated():
    with pytest.raises(ValueError, match="admin_profiling='dropout'.*'train', 'eval'"):
        _cfg(placement="admin", init="admin", admin_profiling="dropout")
    m = tfx.Transformer(_cfg(placement="admin", init="admin"))
    with pytest.raises(ValueError, match="profiling='x'"):
        tfx.nn.init.admin(m, tfx.synthetic("reverse", vocab=36, length=10).batch(0, 2), profiling="x")


def test_admin_profiling_free_values():
    m = build_model(_cfg(placement="admin", init="admin-profiling-free"))
    assert float(m.encoder.layers[0].ffn.omega[0]) == pytest.approx(admin_omega_profiling_free(8))
    assert float(m.decoder.layers[2].cross_attn.omega[5]) == pytest.approx(admin_omega_profiling_free(9))


@pytest.mark.parametrize("kw", [
    dict(),
    dict(n_dec=0),
    dict(n_enc=0),
    dict(tie_embeddings=True),
    dict(positions="learned", norm="rmsnorm"),
    dict(enc_placement="admin", dec_placement="pre", init="xavier"),
])
def test_admin_reparameterisation_round_trip(kw):
    """AD-2: folding ω into the weights gives a plain Post-LN model with the same outputs."""
    task = tfx.synthetic("reverse", vocab=36, length=10)
    b = task.batch(0, 8)
    cfg = _cfg(**{"placement": "admin", "init": "admin", "d_model": 32, "n_heads": 4, "d_ffn": 64, **kw})
    m = build_model(cfg, batch=b)
    with torch.no_grad():  # a trained model's ω and norms are no longer constants
        for name, p in m.named_parameters():
            if name.endswith("omega") or ".norm." in name:
                p.add_(0.3 * torch.randn_like(p))
    plain = reparameterize_admin(m)
    assert not any(n.endswith("omega") for n, _ in plain.named_parameters())
    assert plain.cfg.enc_placement in ("post", "pre") and plain.cfg.init == "xavier"
    m.eval(); plain.eval()
    kwargs = {}
    if cfg.n_enc:
        kwargs["src"] = b.src
    if cfg.kind != "encoder":
        kwargs["tgt_in"] = b.tgt[:, :-1]
    with torch.no_grad():
        torch.testing.assert_close(plain(**kwargs), m(**kwargs), atol=1e-5, rtol=1e-5)
        assert float((plain(**kwargs) - m(**kwargs)).abs().max()) < 1e-5


def test_admin_reparameterisation_keeps_dtype_and_device():
    """AD-2 in float64: the Post-LN copy is float64 too (not float32), on the same device,
    equal to float64 rounding; the random state is not consumed."""
    task = tfx.synthetic("reverse", vocab=36, length=10)
    b = task.batch(0, 8)
    cfg = _cfg(placement="admin", init="admin", d_model=32, n_heads=4, d_ffn=64, tie_embeddings=True)
    m = build_model(cfg, batch=b).double().eval()
    rng = torch.get_rng_state()
    plain = reparameterize_admin(m).eval()
    assert torch.equal(torch.get_rng_state(), rng)
    tensors = {**dict(plain.named_parameters()), **dict(plain.named_buffers())}
    assert {t.dtype for t in tensors.values()} == {torch.float64}
    assert {t.device for t in tensors.values()} == {next(m.parameters()).device}
    with torch.no_grad():
        out, ref = plain(src=b.src, tgt_in=b.tgt[:, :-1]), m(src=b.src, tgt_in=b.tgt[:, :-1])
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)


def test_unknown_initialiser():
    m = build_model(_cfg())
    with pytest.raises(ValueError, match="init='he'"):
        tfx.initialize(m, "he")
