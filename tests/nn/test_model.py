"""The model: parity with torch.nn, masks, every kind of stack and placement."""
import pytest
import torch
from torch import nn

import tfx
from tfx import ModelConfig, build_model
from tfx.nn.blocks import EncoderLayer
from tfx.nn.batch import PAD, Batch
from tfx.nn.config import PLACEMENTS
from tfx.runs.reference import layer_pairs


def _copy_into_torch_layer(ours: EncoderLayer, ref: nn.TransformerEncoderLayer):
    with torch.no_grad():
        for theirs, mine in layer_pairs(ours, ref):
            theirs.copy_(torch.cat(mine))


@pytest.mark.parametrize("placement, norm_first", [("post", False), ("pre", True)])
def test_parity_with_torch_encoder_layer(placement, norm_first):
    torch.manual_seed(0)
    cfg = ModelConfig(d_model=32, n_heads=4, d_ffn=64, placement=placement)
    ours = EncoderLayer(cfg, placement).eval()
    for p in ours.parameters():  # non-trivial norms and biases too
        nn.init.normal_(p, std=0.3)
    ref = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    _copy_into_torch_layer(ours, ref)
    x = torch.randn(3, 7, 32)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-5)
    # with key padding: torch masks True = ignore, ours True = attend
    pad = torch.zeros(3, 7, dtype=torch.bool); pad[0, 5:] = True
    got = ours(x, mask=(~pad)[:, None, None, :])
    want = ref(x, src_key_padding_mask=pad)
    torch.testing.assert_close(got[~pad], want[~pad], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("n_enc, n_dec", [(2, 2), (2, 0), (0, 2)])
def test_every_placement_and_kind_runs(placement, n_enc, n_dec):
    task = tfx.synthetic("reverse", vocab=8, length=5)
    init = {"admin": "admin", "rezero": "rezero", "deepnorm": "deepnorm", "none": "t-fixup"}.get(placement, "xavier")
    cfg = ModelConfig.for_task(task, d_model=16, n_heads=2, d_ffn=32, n_enc=n_enc, n_dec=n_dec,
                               placement=placement, init=init)
    b = task.batch(0, 4)
    model = build_model(cfg, batch=b)
    out = model.loss(b)
    assert torch.isfinite(out["loss"]) and out["tokens"] == 4 * 6
    out["loss"].backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_rezero_is_identity_at_init():
    """RZ-1: with α = 0 every stack is the identity, so the encoder returns its embedding."""
    model = build_model(ModelConfig(placement="rezero", init="rezero", n_dec=0)).eval()
    src = torch.randint(4, 36, (2, 9))
    torch.testing.assert_close(model.encode(src), model.src_embed(src))


def _lm_batch(lengths, T=8, vocab=36):
    torch.manual_seed(1)
    tgt = torch.randint(4, vocab, (len(lengths), T))
    for i, n in enumerate(lengths):
        tgt[i, n:] = PAD
    return tgt


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_padding_does_not_change_real_tokens(placement):
    model = build_model(ModelConfig(placement=placement, d_model=32, n_heads=4)).eval()
    src = torch.randint(4, 36, (1, 6)); tgt = torch.randint(4, 36, (1, 5))
    padded_src = torch.cat([src, torch.full((1, 3), PAD)], 1)
    padded_tgt = torch.cat([tgt, torch.full((1, 2), PAD)], 1)
    a = model(src, tgt)
    b = model(padded_src, padded_tgt)[:, :5]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_decoder_is_causal():
    model = build_model(ModelConfig(n_enc=0, placement="pre")).eval()
    tgt = torch.randint(4, 36, (2, 8))
    changed = tgt.clone(); changed[:, 5:] = 7
    torch.testing.assert_close(model(tgt_in=tgt)[:, :5], model(tgt_in=changed)[:, :5])


def test_tied_embeddings_share_storage():
    model = build_model(ModelConfig(tie_embeddings=True))
    assert model.out_proj.weight is model.tgt_embed.tok.weight


def test_encoder_only_needs_aligned_task():
    model = build_model(ModelConfig(n_dec=0))
    with pytest.raises(ValueError, match="encoder-only"):
        model.loss(Batch(src=torch.randint(4, 36, (2, 5)), tgt=torch.randint(4, 36, (2, 9))))


def test_too_long_input_is_a_clear_error():
    model = build_model(ModelConfig(max_len=8, n_dec=0))
    with pytest.raises(ValueError, match="max_len=8"):
        model.encode(torch.randint(4, 36, (1, 9)))


def test_greedy_decodes_a_learned_copy():
    task = tfx.synthetic("copy", vocab=6, length=4)
    model = build_model(ModelConfig.for_task(task, d_model=32, n_heads=4, d_ffn=64, placement="pre"))
    h = tfx.train(model, task, steps=150, lr=3e-3, batch_size=32)
    assert h.status == "learned"
    b = task.batch(0, 8, "valid")
    out = model.eval().greedy(b.src, max_len=5)
    assert out.shape[1] <= 5
    acc = (out[:, :4] == b.tgt[:, 1:5]).float().mean()
    assert acc > 0.9


# --------------------------------------------------------------------------- no host syncs, one graph
def _padded_batch():
    b = tfx.synthetic("reverse", vocab=8, length=6).batch(0, 4)
    src, tgt = b.src.clone(), b.tgt.clone()
    src[0, 4:] = PAD  # a shorter sentence: EOS moved, the rest padding
    src[0, 3] = 2
    tgt[0, 5:] = PAD
    tgt[0, 4] = 2
    return Batch(src, tgt)


def test_padding_flags_are_found_on_the_host_and_travel():
    b = _padded_batch()
    assert b.src_padded and b.tgt_padded and b.n_tokens == int((b.tgt[:, 1:] != PAD).sum())
    moved = b.to("cpu")
    assert (moved.src_padded, moved.tgt_padded, moved.n_tokens) == (True, True, b.n_tokens)
    clean = tfx.synthetic("reverse", vocab=8, length=6).batch(0, 4)
    assert clean.src_padded is False and clean.tgt_padded is False


def test_masks_given_or_found_give_the_same_loss():
    """A mask that hides nothing (what an accelerator builds when it does not know) changes nothing."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(src_vocab=12, tgt_vocab=12, d_model=32, n_heads=4, d_ffn=64)).eval()
    b = _padded_batch()
    found = model.loss_and_accuracy(b.src, b.tgt)[0]  # flags None: looked up on the CPU tensor
    given = model.loss_and_accuracy(b.src, b.tgt, 0.0, True, True)[0]
    torch.testing.assert_close(found, given)
    clean = tfx.synthetic("reverse", vocab=8, length=6).batch(1, 4)
    no_mask = model.loss_and_accuracy(clean.src, clean.tgt, 0.0, False, False)[0]
    full_mask = model.loss_and_accuracy(clean.src, clean.tgt, 0.0, True, True)[0]
    torch.testing.assert_close(no_mask, full_mask)


@pytest.mark.parametrize("kind", [dict(n_enc=2, n_dec=2), dict(n_enc=0, n_dec=2)])
def test_skipped_records_leave_loss_and_gradients_bit_identical(kind):
    """accuracy=False / log_z=False (a step whose records nobody reads) skip work, not bits:
    the loss and every gradient are equal to the last bit, and what is skipped is None."""
    b = _padded_batch()
    grads, losses = {}, {}
    for flags in ((True, True), (False, True), (True, False), (False, False)):
        model = build_model(ModelConfig(src_vocab=12, tgt_vocab=12, d_model=32, n_heads=4, d_ffn=64, **kind))
        out = model.loss_and_accuracy(b.src, b.tgt, 0.1, b.src_padded, b.tgt_padded, accuracy=flags[0],
                                      log_z=flags[1])
        assert (out[1] is None) == (not flags[0]) and all((v is None) == (not flags[1]) for v in out[2:])
        out[0].backward()
        losses[flags], grads[flags] = out[0], [p.grad for p in model.parameters()]
    for flags in losses:
        assert torch.equal(losses[flags], losses[True, True])
        assert all(torch.equal(g, h) for g, h in zip(grads[flags], grads[True, True]))


@pytest.mark.parametrize("kind", [dict(n_enc=2, n_dec=2), dict(n_enc=0, n_dec=2), dict(n_enc=2, n_dec=0)])
def test_the_training_loss_compiles_to_one_graph(kind):
    """torch._dynamo.explain: no graph break on the loss the trainer compiles, with and without padding."""
    import torch._dynamo

    torch._dynamo.reset()
    model = build_model(ModelConfig(src_vocab=12, tgt_vocab=12, d_model=32, n_heads=4, d_ffn=64, **kind))
    b = _padded_batch()
    if kind["n_dec"] == 0:  # encoder-only: one output per source token
        b = tfx.synthetic("reverse", vocab=8, length=6).batch(0, 4)
    for padded in (True, False):
        ex = torch._dynamo.explain(model.loss_and_accuracy)(b.src, b.tgt, 0.1, padded, padded)
        assert ex.graph_break_count == 0 and ex.graph_count == 1, ex.break_reasons
