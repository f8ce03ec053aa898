"""Whole-model parity with torch (minGPT's test, for both norm placements): a tfx model and
``torch.nn.Transformer`` with the same weights give the same logits and the same gradients.

The weights go tfx → torch through ``tfx.runs.reference`` (the bench's reference too). What
torch's modules do not have sits outside them, copied from the tfx model: the embeddings
(s · E[token] + P[position], s = √d: torch's Transformer takes vectors, not tokens) and the
output projection. One real difference is accounted for explicitly: ``nn.Transformer`` ends
each stack with a LayerNorm also in Post-LN (tfx's Post-LN stack ends with its last
sub-layer's norm), so the reference drops those two norms for Post-LN and keeps them for
Pre-LN, where tfx has the same final norm (``test_torch_post_ln_has_an_extra_final_norm``).

Float64 so that the tolerance can be tight (1e-12): a real difference (a norm missing, a
mask off by one, a scale) is ≥ 1e-6 here; float32 is checked at its own rounding level.
"""
import pytest
import torch
from torch import nn

from tfx import ModelConfig, build_model
from tfx.nn.batch import PAD
from tfx.runs.reference import TorchReference, weight_pairs

KINDS = {"3+2 encoder–decoder": dict(n_enc=3, n_dec=2), "3-layer decoder-only LM": dict(n_enc=0, n_dec=3,
                                                                                        tie_embeddings=True)}
TOL = {torch.float64: dict(atol=1e-12, rtol=1e-12), torch.float32: dict(atol=2e-5, rtol=2e-5)}


def _pair(placement, kind, dtype=torch.float64, seed=0):
    """A tfx model with every parameter drawn at random (norm gains and biases too, so that a
    swapped norm shows), in eval mode, and its torch twin."""
    cfg = ModelConfig(src_vocab=19, tgt_vocab=23, d_model=16, n_heads=2, d_ffn=24, placement=placement,
                      dropout=0.1, attn_dropout=0.1, act_dropout=0.1, **KINDS[kind])  # off in eval mode
    model = build_model(cfg, seed=seed).to(dtype).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model, TorchReference.from_tfx(model).eval()


def _batch(padded, seed=1):
    """src (4, 7) and tgt (4, 6), right-padded to different lengths when ``padded``."""
    g = torch.Generator().manual_seed(seed)
    src, tgt = torch.randint(4, 19, (4, 7), generator=g), torch.randint(4, 23, (4, 6), generator=g)
    if padded:
        for row, (s, t) in enumerate([(7, 6), (4, 6), (6, 3), (2, 2)]):
            src[row, s:], tgt[row, t:] = PAD, PAD
    return src, tgt


def _logits(model, src, tgt_in):
    return model(src=src if model.cfg.n_enc else None, tgt_in=tgt_in)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("padded", [True, False], ids=["padding masks", "no padding"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("placement", ["post", "pre"])
def test_logits_match_torch(placement, kind, padded, dtype):
    model, ref = _pair(placement, kind, dtype)
    src, tgt = _batch(padded)
    tgt_in = tgt[:, :-1]
    real = tgt_in != PAD  # a padded query's output is read by nothing (and torch zeroes some)
    with torch.no_grad():
        ours, theirs = _logits(model, src, tgt_in), ref(src, tgt_in, padded, padded)
    assert ours.shape == theirs.shape == (4, 5, 23)
    torch.testing.assert_close(ours[real], theirs[real], **TOL[dtype])
    if padded:  # the causal mask and the padding masks both bite in this batch
        assert not real.all() and (src == PAD).any()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("placement", ["post", "pre"])
def test_gradients_match_torch(placement, kind):
    """Backward on the same loss (tfx's training cross-entropy, PAD ignored): every parameter's
    gradient equals its torch twin's (q, k, v concatenated as torch stores them)."""
    model, ref = _pair(placement, kind)
    src, tgt = _batch(padded=True)
    loss = model.loss_and_accuracy(src if model.cfg.n_enc else None, tgt)[0]
    ref_loss = ref.loss(src, tgt)
    torch.testing.assert_close(loss, ref_loss, **TOL[torch.float64])
    loss.backward()
    ref_loss.backward()
    pairs = weight_pairs(model, ref)
    assert {id(p) for _, ps in pairs for p in ps} == {id(p) for p in model.parameters()}  # none left out
    assert {id(t) for t, _ in pairs} == {id(p) for p in ref.parameters()}
    for theirs, ours in pairs:
        torch.testing.assert_close(torch.cat([p.grad for p in ours]), theirs.grad, **TOL[torch.float64])
    assert all(p.grad.abs().sum() > 0 for p in model.parameters())  # every gradient was compared, none vacuous


def test_torch_post_ln_has_an_extra_final_norm():
    """The difference the reference accounts for: torch's Post-LN Transformer ends each stack
    with a LayerNorm (tfx's does not); put it back and the logits are no longer tfx's."""
    plain = nn.Transformer(16, 2, 1, 1, 24, norm_first=False, batch_first=True)
    assert isinstance(plain.encoder.norm, nn.LayerNorm) and isinstance(plain.decoder.norm, nn.LayerNorm)
    model, ref = _pair("post", "3+2 encoder–decoder")
    assert ref.body.encoder.norm is None and ref.body.decoder.norm is None
    src, tgt = _batch(padded=False)
    with torch.no_grad():
        ours = _logits(model, src, tgt[:, :-1])
        torch.testing.assert_close(ref(src, tgt[:, :-1]), ours, **TOL[torch.float64])
        ref.body.decoder.norm = nn.LayerNorm(16, dtype=torch.float64)  # torch's default: γ = 1, β = 0
        assert (ref(src, tgt[:, :-1]) - ours).abs().max() > 1e-6


def test_the_reference_refuses_what_torch_cannot_compute():
    for kw in (dict(placement="admin", init="admin"), dict(placement="pre", qk_norm=True),
               dict(placement="pre", norm="rmsnorm"), dict(n_dec=0)):
        with pytest.raises(ValueError, match="TorchReference"):
            TorchReference(ModelConfig(**kw))
