"""Attention is causal whenever asked, with or without a padding mask."""
import pytest
import torch

from tfx import ModelConfig
from tfx.nn.blocks import Attention, DecoderLayer, EncoderLayer

CFG = ModelConfig(d_model=32, n_heads=4, d_ffn=64)
B, T, S = 3, 7, 5


def _padding_mask(lengths, L):
    """(B, 1, 1, L) True on real tokens: padding only, no causal triangle."""
    return (torch.arange(L)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


def _perturb_after(x, t):
    y = x.clone()
    y[:, t + 1:] += 10 * torch.randn_like(y[:, t + 1:])
    return y


@pytest.mark.parametrize("layer_cls", [DecoderLayer, EncoderLayer])
def test_decoder_layer_with_padding_mask_never_sees_the_future(layer_cls):
    """A padding-only self-mask with causal self-attention: changing positions > t
    leaves the outputs at positions ≤ t unchanged (they did change before the fix)."""
    torch.manual_seed(0)
    layer = layer_cls(CFG, "post").eval()
    x, memory = torch.randn(B, T, CFG.d_model), torch.randn(B, S, CFG.d_model)
    mask = _padding_mask([T, T - 2, T - 3], T)  # padding at the end of rows 2 and 3
    if layer_cls is DecoderLayer:
        run = lambda x: layer(x, memory, self_mask=mask, memory_mask=_padding_mask([S, S - 1, S], S))
    else:  # a decoder-only LM's layer: self-attention with causal=True
        run = lambda x: layer(x, mask=mask, causal=True)
    with torch.no_grad():
        out = run(x)
        for t in range(T - 1):
            moved = run(_perturb_after(x, t))
            torch.testing.assert_close(moved[:, : t + 1], out[:, : t + 1], atol=1e-6, rtol=1e-6)
            assert (moved[:, t + 1:] - out[:, t + 1:]).abs().amax() > 1e-3  # the perturbation is seen later on


def test_causal_with_mask_equals_mask_and_triangle():
    """causal=True plus a padding mask gives what an explicit mask ∧ tril gives, and
    causal=True alone what SDPA's is_causal gives."""
    torch.manual_seed(0)
    att = Attention(CFG.d_model, CFG.n_heads).eval()
    x = torch.randn(B, T, CFG.d_model)
    pad = _padding_mask([T, 4, 6], T)
    tril = torch.ones(T, T, dtype=torch.bool).tril()
    with torch.no_grad():
        torch.testing.assert_close(att(x, mask=pad, causal=True), att(x, mask=pad & tril))
        torch.testing.assert_close(att(x, causal=True), att(x, mask=tril))
        # without causal the padding mask alone lets position 0 see later tokens
        assert (att(x, mask=pad)[:, 0] - att(x, mask=pad, causal=True)[:, 0]).abs().amax() > 1e-4
