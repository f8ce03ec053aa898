"""The options after 2020: DyT, Peri-LN, output-norm, Sub-LN (and its init), LayerNorm
scaling, QK-norm, soft-capping and ``Attention.scores``. Each has a test that fails if the
option has no effect: its formula checked by hand, or the same seed with it on and off."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import tfx
from tfx import ModelConfig, build_model
from tfx.nn.blocks import NORM_TYPES, Attention, DyT, FeedForward, Residual, make_norm
from tfx.nn.constants import subln_gain
from tfx.runs.diagnose import _attention_logits

NEW_PLACEMENTS = ("peri-ln", "output-norm", "sub-ln")
NORMS = ("layernorm", "rmsnorm", "dyt")
KINDS = {"encoder-decoder": dict(n_enc=2, n_dec=2), "encoder": dict(n_enc=2, n_dec=0),
         "decoder": dict(n_enc=0, n_dec=2)}
SMALL = dict(src_vocab=12, tgt_vocab=12, d_model=16, n_heads=2, d_ffn=24)


def _cfg(**kw):
    return ModelConfig(**{**SMALL, **kw})


def _logits(cfg, seed=0):
    """The model's output logits on a fixed batch, weights drawn with ``seed``."""
    model = build_model(cfg, seed=seed).eval()
    torch.manual_seed(123)
    src, tgt = torch.randint(4, 12, (3, 6)), torch.randint(4, 12, (3, 6))
    with torch.no_grad():
        if cfg.kind == "encoder":
            return model(src=src)
        return model(src=src if cfg.kind == "encoder-decoder" else None, tgt_in=tgt)


def _randomise_norms(module):
    """Non-trivial γ, β (and DyT's α), so that a norm's formula shows."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, NORM_TYPES):
                for p in m.parameters():
                    p.copy_(1 + 0.3 * torch.randn_like(p))


# ------------------------------------------------------------------ every option does something
OPTIONS = [  # (option on, the same model with it off)
    (dict(placement="peri-ln"), dict(placement="pre")),
    (dict(placement="output-norm"), dict(placement="pre")),
    (dict(placement="sub-ln"), dict(placement="pre")),
    (dict(placement="sub-ln", init="subln"), dict(placement="sub-ln")),
    (dict(norm="dyt"), dict(norm="layernorm")),
    (dict(norm="dyt", dyt_alpha=1.5), dict(norm="dyt")),
    (dict(placement="pre", ln_scaling=True), dict(placement="pre")),
    (dict(placement="peri-ln", ln_scaling=True), dict(placement="peri-ln")),
    (dict(placement="sub-ln", ln_scaling=True), dict(placement="sub-ln")),
    (dict(placement="pre", depth_mup=True), dict(placement="pre")),
    (dict(placement="peri-ln", depth_mup=True), dict(placement="peri-ln")),
    (dict(qk_norm=True), dict()),
    (dict(attn_softcap=0.5), dict()),
    (dict(logit_softcap=1.0), dict()),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("on, off", OPTIONS, ids=[str(on) for on, _ in OPTIONS])
def test_every_option_changes_the_output(on, off, kind):
    a, b = _logits(_cfg(**KINDS[kind], **on)), _logits(_cfg(**KINDS[kind], **off))
    assert (a - b).abs().amax() > 1e-4, f"{on} has no effect in a {kind} model"


# ------------------------------------------------------------------ DyT
def test_dyt_formula_and_parameters():
    torch.manual_seed(0)
    dyt = DyT(8, alpha=0.7)
    assert isinstance(dyt.alpha, nn.Parameter) and dyt.alpha.shape == () and dyt.alpha.item() == pytest.approx(0.7)
    assert torch.equal(dyt.weight, torch.ones(8)) and torch.equal(dyt.bias, torch.zeros(8))
    _randomise_norms(dyt)
    x = 3 * torch.randn(4, 5, 8)
    a, g, b = dyt.alpha.item(), dyt.weight.detach(), dyt.bias.detach()
    want = torch.tensor([[[g[k] * math.tanh(a * float(x[i, j, k])) + b[k] for k in range(8)]
                          for j in range(5)] for i in range(4)])
    torch.testing.assert_close(dyt(x).detach(), want, atol=1e-5, rtol=1e-5)
    assert {n for n, _ in dyt.named_parameters()} == {"alpha", "weight", "bias"}


def test_make_norm_kinds():
    assert type(make_norm("layernorm", 4)) is nn.LayerNorm and type(make_norm("rmsnorm", 4)) is nn.RMSNorm
    dyt = make_norm("dyt", 4, dyt_alpha=0.25)
    assert isinstance(dyt, DyT) and dyt.alpha.item() == 0.25
    with pytest.raises(ValueError, match="norm='batch'.*'dyt'"):
        make_norm("batch", 4)


@pytest.mark.parametrize("placement", ["post", "pre", "peri-ln", "sub-ln"])
def test_norm_dyt_replaces_every_norm_and_init_sets_its_alpha(placement):
    model = build_model(_cfg(norm="dyt", dyt_alpha=0.8, placement=placement, qk_norm=True))
    norms = [m for m in model.modules() if isinstance(m, NORM_TYPES)]
    assert norms and all(isinstance(m, DyT) for m in norms)
    assert all(m.alpha.item() == pytest.approx(0.8) for m in norms)  # initialize() resets α to dyt_alpha
    with torch.no_grad():
        for m in norms:
            m.alpha.fill_(3.0)
    tfx.initialize(model, "xavier")
    assert all(m.alpha.item() == pytest.approx(0.8) for m in norms)


# ------------------------------------------------------------------ the new placements, by hand
class _Affine(nn.Module):
    """A branch f(h) = h W + 1 (keyword arguments ignored), to check a placement's formula."""

    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, h, **ctx):
        return 2.0 * self.lin(h) + 1.0


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("placement", NEW_PLACEMENTS + ("pre",))
def test_placement_formulas(placement, norm):
    torch.manual_seed(0)
    d = 8
    res = Residual(_Affine(d), d, placement, norm, ln_scale=0.5)
    _randomise_norms(res)
    x = 2 * torch.randn(3, 5, d)
    f, N, N_out = res.f, res.norm, res.out_norm
    want = {
        "pre": lambda: x + f(0.5 * N(x)),
        "sub-ln": lambda: x + f(0.5 * N(x)),  # the inner norm lives in Attention / FeedForward
        "peri-ln": lambda: x + N_out(f(0.5 * N(x))),
        "output-norm": lambda: x + N_out(f(x)),  # no norm on the input: ln_scale unused
    }[placement]()
    torch.testing.assert_close(res(x), want)
    assert (N is None) == (placement == "output-norm") and (N_out is None) == (placement in ("pre", "sub-ln"))


def _norms_per(model):
    return sum(isinstance(m, NORM_TYPES) for m in model.modules())


@pytest.mark.parametrize("kind", KINDS)
def test_norm_and_parameter_counts(kind):
    """Pre-LN: a norm a sub-layer and a final one per stack; Peri-LN two a sub-layer; output-norm
    one; Sub-LN Pre-LN's plus one inside each self-attention (over d) and each FFN (over d_ffn)."""
    kw = KINDS[kind]
    d, d_ffn = SMALL["d_model"], SMALL["d_ffn"]
    models = {p: build_model(_cfg(placement=p, **kw)) for p in ("pre",) + NEW_PLACEMENTS}
    subs = len(models["pre"].residuals())
    stacks = len(models["pre"].stacks())
    layers = kw["n_enc"] + kw["n_dec"]
    count = {p: _norms_per(m) for p, m in models.items()}
    assert count["pre"] == subs + stacks
    assert count["peri-ln"] == 2 * subs + stacks
    assert count["output-norm"] == subs + stacks
    assert count["sub-ln"] == subs + stacks + 2 * layers  # each layer: one self-attention, one FFN
    n_params = {p: sum(t.numel() for t in m.parameters()) for p, m in models.items()}
    assert n_params["peri-ln"] - n_params["pre"] == subs * 2 * d  # one more LayerNorm (γ, β) a sub-layer
    assert n_params["output-norm"] == n_params["pre"]
    assert n_params["sub-ln"] - n_params["pre"] == layers * (2 * d + 2 * d_ffn)


def test_sub_ln_inner_norms_sit_before_out_proj_and_fc2():
    model = build_model(_cfg(placement="sub-ln", n_enc=1, n_dec=1))
    enc, dec = model.encoder.layers[0], model.decoder.layers[0]
    for attn in (enc.self_attn.f, dec.self_attn.f):
        assert attn.inner_norm.normalized_shape == (SMALL["d_model"],)
    for ffn in (enc.ffn.f, dec.ffn.f):
        assert ffn.inner_norm.normalized_shape == (SMALL["d_ffn"],)
    assert dec.cross_attn.f.inner_norm is None  # as torchscale's subln
    assert all(getattr(m, "inner_norm", None) is None
               for m in build_model(_cfg(placement="pre")).modules())
    seen = []
    hooks = [lin.register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
             for lin in (enc.self_attn.f.out_proj, enc.ffn.f.fc2)]
    model.eval()(src=torch.randint(4, 12, (2, 5)), tgt_in=torch.randint(4, 12, (2, 4)))
    for h in hooks:
        h.remove()
    for h in seen:  # LayerNorm with γ = 1, β = 0: every token mean 0, variance 1
        torch.testing.assert_close(h.mean(-1), torch.zeros(h.shape[:-1]), atol=1e-5, rtol=0)
        torch.testing.assert_close(h.var(-1, unbiased=False), torch.ones(h.shape[:-1]), atol=1e-3, rtol=0)


def test_feed_forward_inner_norm_formula():
    torch.manual_seed(0)
    norm = nn.LayerNorm(24)
    ffn = FeedForward(16, 24, inner_norm=norm)
    _randomise_norms(ffn)
    x = torch.randn(2, 3, 16)
    torch.testing.assert_close(ffn(x), ffn.fc2(norm(torch.relu(ffn.fc1(x)))))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("placement", NEW_PLACEMENTS)
@pytest.mark.parametrize("kind", KINDS)
def test_new_placements_train_in_every_kind_with_every_norm(placement, norm, kind):
    task = tfx.synthetic("reverse", vocab=8, length=5)
    init = "subln" if placement == "sub-ln" else "xavier"
    cfg = ModelConfig.for_task(task, d_model=16, n_heads=2, d_ffn=32, placement=placement, norm=norm,
                               init=init, qk_norm=True, **KINDS[kind])
    model = build_model(cfg)
    for name, stack in model.stacks().items():
        assert stack.final_norm is not None, f"{placement}: no final norm after the {name}"
    out = model.loss(task.batch(0, 4))
    assert torch.isfinite(out["loss"])
    out["loss"].backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


@pytest.mark.parametrize("placement", NEW_PLACEMENTS)
@torch.no_grad()
def test_hook_sees_the_term_added_to_the_stream(placement):
    """x_i = x_{i-1} + fx for the additive placements: the branch hook's fx includes N_out."""
    from tfx.nn import hooks

    m = build_model(_cfg(placement=placement, n_dec=0, n_enc=3))
    task = tfx.synthetic("reverse", vocab=8, length=5)
    with hooks.mode(m), hooks.record_branches(m) as rec:
        m.encode(task.batch(0, 4).src)
    enc = rec["encoder"]
    for a, b in zip(enc, enc[1:]):
        torch.testing.assert_close(a["x"] + a["f"], b["x"])


# ------------------------------------------------------------------ Sub-LN's initialiser
def test_subln_gain_values():
    assert subln_gain(6, 0) == {"encoder": pytest.approx(math.sqrt(math.log(12)))}
    assert subln_gain(0, 24) == {"decoder": pytest.approx(math.sqrt(math.log(48)))}
    g = subln_gain(6, 4)
    assert g["encoder"] == pytest.approx(math.sqrt(math.log(12) * math.log(12) / 3))
    assert g["decoder"] == pytest.approx(math.sqrt(math.log(12)))
    with pytest.raises(ValueError):
        subln_gain(0, 0)


@pytest.mark.parametrize("kind", KINDS)
def test_subln_init_scales_value_output_ffn_weights(kind):
    """Same draws as Xavier, then v_proj, out_proj, fc1, fc2 × γ; q_proj, k_proj, the
    decoder's cross-attention and the embeddings untouched."""
    kw = dict(KINDS[kind], n_enc=KINDS[kind]["n_enc"] and 3, placement="sub-ln")
    xav, sub = build_model(_cfg(**kw), seed=4), build_model(_cfg(init="subln", **kw), seed=4)
    gain = subln_gain(kw["n_enc"], kw["n_dec"])
    params = dict(xav.named_parameters())
    for name, w in sub.named_parameters():
        if not name.endswith("weight") or w.dim() != 2:
            continue
        stack = name.split(".")[0]
        scaled = stack in gain and "cross_attn" not in name and any(
            k in name for k in ("v_proj", "out_proj.", "fc1", "fc2")) and not name.startswith("out_proj")
        want = params[name] * (gain[stack] if scaled else 1.0)
        torch.testing.assert_close(w, want, msg=name)
    assert any(gain[s] != 1.0 for s in gain)


# ------------------------------------------------------------------ LayerNorm scaling
@pytest.mark.parametrize("placement", ["pre", "peri-ln", "sub-ln"])
@torch.no_grad()
def test_ln_scaling_multiplies_the_branch_input_of_layer_l_by_one_over_sqrt_l(placement):
    model = build_model(_cfg(placement=placement, ln_scaling=True, n_enc=3, n_dec=0)).eval()
    for l, layer in enumerate(model.encoder.layers, start=1):
        for res in (layer.self_attn, layer.ffn):
            assert res.ln_scale == pytest.approx(l**-0.5)
    seen = {}
    hooks = []
    for name, res in model.residuals():
        hooks.append(res.register_forward_pre_hook(lambda m, a, name=name: seen.setdefault(name, {}).update(x=a[0])))
        hooks.append(res.f.register_forward_pre_hook(lambda m, a, name=name: seen[name].update(h=a[0])))
    model.encode(torch.randint(4, 12, (2, 6)))
    for h in hooks:
        h.remove()
    for name, res in model.residuals():
        l = int(name.split(".")[2]) + 1
        torch.testing.assert_close(seen[name]["h"], res.norm(seen[name]["x"]) / math.sqrt(l))
    assert model.encoder.final_norm is not None  # the final norm is not scaled



# ------------------------------------------------------------------ depth-μP's branch multiplier
@pytest.mark.parametrize("kind", sorted(KINDS))
@torch.no_grad()
def test_depth_mup_multiplies_every_branch_by_one_over_sqrt_of_its_stacks_sublayers(kind):
    """x_i = x_{i-1} + f_i/√L with L the residual sub-layers of the stack (2 per layer; 3 in
    an encoder–decoder's decoder): the branch term is exactly 1/√L times the same model's
    without the option, seed for seed."""
    on = build_model(_cfg(placement="pre", depth_mup=True, **KINDS[kind]), seed=0).eval()
    off = build_model(_cfg(placement="pre", **KINDS[kind]), seed=0).eval()
    x = torch.randn(2, 5, SMALL["d_model"], generator=torch.Generator().manual_seed(0))
    for stack in on.stacks():
        subs_on, subs_off = on.stacks()[stack].residuals(), off.stacks()[stack].residuals()
        L = len(subs_on)
        assert L == (3 if kind == "encoder-decoder" and stack == "decoder" else 2) * 2
        for (name, a), (_, b) in zip(subs_on, subs_off):
            if "cross_attn" in name:
                continue  # needs the encoder's output; same Residual.branch code path
            assert a.branch_scale == pytest.approx(L ** -0.5) and b.branch_scale == 1.0
            causal = dict(causal=True) if stack == "decoder" and "self_attn" in name else {}
            torch.testing.assert_close(a.branch(x, **causal), b.branch(x, **causal) / math.sqrt(L))


def test_depth_mup_is_refused_where_the_branch_is_not_added_to_the_stream():
    for placement in ("post", "admin", "deepnorm", "rezero"):
        init = {"admin": "admin", "deepnorm": "deepnorm", "rezero": "rezero"}.get(placement, "xavier")
        with pytest.raises(ValueError, match=r"depth_mup=True .* enc_placement=" + repr(placement)):
            _cfg(placement=placement, init=init, depth_mup=True)


@pytest.mark.parametrize("kw, words", [
    (dict(placement="post", ln_scaling=True), ["ln_scaling=True", "enc_placement='post'", "'pre'"]),
    (dict(placement="output-norm", ln_scaling=True), ["ln_scaling=True", "'output-norm'", "'peri-ln'"]),
    (dict(placement="admin", init="admin", ln_scaling=True), ["ln_scaling=True", "'admin'"]),
    (dict(placement="none", ln_scaling=True), ["ln_scaling=True", "'none'"]),
    (dict(placement="pre", dec_placement="rezero", ln_scaling=True), ["ln_scaling=True", "dec_placement='rezero'"]),
])
def test_ln_scaling_needs_a_norm_on_the_branch_input(kw, words):
    with pytest.raises(ValueError) as e:
        ModelConfig(**kw)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert ModelConfig(placement="pre", dec_placement="post", n_dec=0, ln_scaling=True).ln_scaling  # no decoder


# ------------------------------------------------------------------ QK-norm, soft-capping, scores
def _attention(norm="layernorm", qk_norm=False, softcap=None, inner=False, d=16, h=2, seed=0):
    torch.manual_seed(seed)
    mk = lambda n: make_norm(norm, n) if qk_norm else None
    att = Attention(d, h, q_norm=mk(d // h), k_norm=mk(d // h), softcap=softcap,
                    inner_norm=make_norm(norm, d) if inner else None).eval()
    for p in att.parameters():
        nn.init.normal_(p, std=0.5)  # non-trivial norms, large enough logits for the cap to bite
    return att


def _heads(att, x):
    return att._heads(x)


@pytest.mark.parametrize("norm", NORMS)
def test_qk_norm_scores_by_hand(norm):
    att = _attention(norm, qk_norm=True)
    x = torch.randn(2, 5, 16)
    q, k = _heads(att, att.q_proj(x)), _heads(att, att.k_proj(x))
    want = att.q_norm(q) @ att.k_norm(k).transpose(-1, -2) / math.sqrt(8)
    torch.testing.assert_close(att.scores(x), want)
    assert att.q_norm is not att.k_norm  # one norm for the queries, one for the keys, each over d_h
    assert att.q_norm.weight.shape == (8,)
    plain = _attention(norm, qk_norm=False)
    assert (plain.scores(x) - att.scores(x)).abs().amax() > 1e-3


def test_attn_softcap_scores_by_hand():
    raw, capped = _attention(softcap=None), _attention(softcap=2.0)  # the same weights
    x = 3 * torch.randn(2, 5, 16)
    torch.testing.assert_close(capped.scores(x), 2.0 * torch.tanh(raw.scores(x) / 2.0))
    assert raw.scores(x).abs().amax() > 2.0 and capped.scores(x).abs().amax() <= 2.0


@pytest.mark.parametrize("causal", [False, True])
def test_explicit_path_matches_sdpa_when_the_cap_is_far(causal):
    """With a cap far above every score the explicit path (masks, causal, softmax) gives SDPA's output."""
    sdpa, explicit = _attention(softcap=None), _attention(softcap=1e6)
    x = torch.randn(3, 6, 16)
    pad = (torch.arange(6)[None] < torch.tensor([6, 4, 5])[:, None])[:, None, None, :]
    for mask in (None, pad):
        torch.testing.assert_close(explicit(x, mask=mask, causal=causal), sdpa(x, mask=mask, causal=causal),
                                   atol=1e-5, rtol=1e-5)


def test_logit_softcap_by_hand():
    kw = dict(n_enc=0, n_dec=2)
    raw, capped = _logits(_cfg(**kw)), _logits(_cfg(logit_softcap=0.5, **kw))
    torch.testing.assert_close(capped, 0.5 * torch.tanh(raw / 0.5))
    assert raw.abs().amax() > 0.5 and capped.abs().amax() <= 0.5


def test_logit_softcap_reaches_the_training_loss():
    b = tfx.synthetic("reverse", vocab=8, length=5).batch(0, 4)
    cfg = ModelConfig.for_task(tfx.synthetic("reverse", vocab=8, length=5), d_model=16, n_heads=2, d_ffn=32)
    losses = [build_model(cfg.replace(logit_softcap=c)).loss(b)["loss"].item() for c in (None, 0.1)]
    assert losses[1] == pytest.approx(math.log(cfg.tgt_vocab), abs=0.05)  # logits within ±0.1: ≈ uniform
    assert abs(losses[0] - losses[1]) > 1e-3


@settings(max_examples=30, deadline=None, database=None)
@given(norm=st.sampled_from(NORMS), qk_norm=st.booleans(), softcap=st.sampled_from([None, 0.3, 3.0]),
       inner=st.booleans(), cross=st.booleans(), causal=st.booleans(), padded=st.booleans(),
       seed=st.integers(0, 2**16))
def test_softmax_of_scores_is_what_the_forward_attends_with(norm, qk_norm, softcap, inner, cross, causal, padded,
                                                          seed):
    """softmax(scores) @ V equals the forward's output before the inner norm / out_proj."""
    att = _attention(norm, qk_norm, softcap, inner, seed=seed)
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16) if cross else None
    Lk = 7 if cross else 5
    mask = (torch.arange(Lk)[None] < torch.tensor([Lk, Lk - 2])[:, None])[:, None, None, :] if padded else None
    causal = causal and not cross
    seen = []
    target = att.inner_norm if inner else att.out_proj
    handle = target.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    with torch.no_grad():
        att(x, memory=memory, mask=mask, causal=causal)
    handle.remove()
    s = att.scores(x, memory)
    assert s.shape == (2, 2, 5, Lk)
    allowed = torch.ones(5, Lk, dtype=torch.bool)
    if causal:
        allowed = allowed.tril()
    if mask is not None:
        allowed = allowed & mask
    v = _heads(att, att.v_proj(x if memory is None else memory))
    want = (s.masked_fill(~allowed, float("-inf")).softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 16)
    torch.testing.assert_close(seen[0], want.detach(), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(_attention_logits(att, x, memory), s)  # the diagnosis reads the same scores


def test_options_are_built_from_the_config():
    m = build_model(_cfg(qk_norm=True, norm="rmsnorm", attn_softcap=30.0, n_enc=1, n_dec=1))
    atts = [mod for mod in m.modules() if isinstance(mod, Attention)]
    assert len(atts) == 3
    for a in atts:
        assert isinstance(a.q_norm, nn.RMSNorm) and a.q_norm.normalized_shape == (8,) and a.softcap == 30.0
    assert all(a.q_norm is None and a.softcap is None for a in build_model(_cfg()).modules()
               if isinstance(a, Attention))


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("kw, words", [
    (dict(norm="dyt", dyt_alpha=0), ["dyt_alpha=0", "> 0"]),
    (dict(norm="dyt", dyt_alpha=-1.0), ["dyt_alpha=-1.0"]),
    (dict(dyt_alpha=1.0), ["dyt_alpha=1.0", "norm='layernorm'", "norm='dyt'"]),
    (dict(qk_norm="yes"), ["qk_norm='yes'", "True or False"]),
    (dict(ln_scaling=1), ["ln_scaling=1", "True or False"]),
    (dict(attn_softcap=0), ["attn_softcap=0", "or None"]),
    (dict(attn_softcap=-50.0), ["attn_softcap=-50.0"]),
    (dict(logit_softcap=float("inf")), ["logit_softcap=inf", "finite"]),
    (dict(logit_softcap="30"), ["logit_softcap='30'"]),
    (dict(init="subln", placement="pre"), ["init='subln'", "enc_placement='pre'", "'sub-ln'"]),
    (dict(init="subln", placement="sub-ln", dec_placement="peri-ln"), ["init='subln'", "dec_placement='peri-ln'"]),
])
def test_new_fields_reject(kw, words):
    with pytest.raises(ValueError) as e:
        ModelConfig(**kw)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


@pytest.mark.parametrize("init", ["admin", "admin-profiling-free", "t-fixup", "deepnorm", "rezero"])
@pytest.mark.parametrize("placement", NEW_PLACEMENTS)
def test_initialisers_of_other_placements_are_rejected(init, placement):
    with pytest.raises(ValueError, match=f"init='{init}' needs enc_placement in .*got enc_placement='{placement}'"):
        ModelConfig(placement=placement, init=init)


@pytest.mark.parametrize("init", ["xavier", "lipschitz"])
@pytest.mark.parametrize("placement", NEW_PLACEMENTS)
def test_placement_free_initialisers_work_with_the_new_placements(init, placement):
    m = build_model(_cfg(placement=placement, init=init))
    assert torch.isfinite(_logits(m.cfg)).all()


@pytest.mark.parametrize("kind", ["decoder", "encoder-decoder"])
def test_every_option_on_still_compiles_to_one_graph(kind):
    """The explicit attention path (soft-cap), QK-norm, DyT, Peri-LN, LayerNorm scaling and the
    logit cap: no graph break in the loss the trainer compiles."""
    import torch._dynamo

    torch._dynamo.reset()
    m = build_model(_cfg(placement="peri-ln", norm="dyt", qk_norm=True, attn_softcap=5.0, logit_softcap=10.0,
                         ln_scaling=True, **KINDS[kind]))
    b = tfx.synthetic("reverse", vocab=8, length=6).batch(0, 4)
    for padded in (True, False):
        ex = torch._dynamo.explain(m.loss_and_accuracy)(b.src, b.tgt, 0.1, padded, padded)
        assert ex.graph_break_count == 0 and ex.graph_count == 1, ex.break_reasons
