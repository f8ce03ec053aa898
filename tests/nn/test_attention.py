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


@pytest.mark.parametrize("causal, lengths", [(False, None), (True, None), (False, [T, T - 2, T - 3]),
                                             (True, [T, T - 2, T - 3])])
def test_attention_written_out_is_the_fused_kernels_and_calls_no_sdpa(causal, lengths, monkeypatch):
    """``Attention.fused = False`` (what an ensemble on CUDA sets, tfx.runs.ensemble.FUSED_ATTENTION)
    computes softmax(S)V by hand: in float64 the same outputs and gradients as SDPA to ~1e-15, with
    and without the causal triangle and a padding mask, and without calling SDPA."""
    torch.manual_seed(0)
    attn = Attention(CFG.d_model, CFG.n_heads).double()
    x = torch.randn(B, T, CFG.d_model, dtype=torch.float64, requires_grad=True)
    mask = None if lengths is None else _padding_mask(lengths, T)
    fused = attn(x, mask=mask, causal=causal)
    (g_fused,) = torch.autograd.grad(fused.square().sum(), x)

    def no_sdpa(*args, **kwargs):
        raise AssertionError("fused = False called F.scaled_dot_product_attention")

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", no_sdpa)
    attn.fused = False
    out = attn(x, mask=mask, causal=causal)
    (g_out,) = torch.autograd.grad(out.square().sum(), x)
    torch.testing.assert_close(out, fused, rtol=0, atol=1e-13)
    torch.testing.assert_close(g_out, g_fused, rtol=0, atol=1e-12)
    attn.fused = True
    with pytest.raises(AssertionError, match="called F.scaled_dot_product_attention"):
        attn(x, mask=mask, causal=causal)  # the option is what kept SDPA out


def test_written_out_attention_backpropagates_under_vmap_in_bf16():
    """The ensemble's case on CUDA, on the CPU: members stacked under ``vmap``, in bf16, a
    backward pass. The softmax runs in float32 and its result is cast back to V's dtype, so no
    half-to-float softmax reaches a batching rule and ·V multiplies one dtype (the CPU's autocast
    does not reach inside ``vmap``: the members are bf16 themselves)."""
    from torch.func import functional_call, stack_module_state, vmap

    torch.manual_seed(0)
    members = [Attention(CFG.d_model, CFG.n_heads).to(torch.bfloat16) for _ in range(3)]
    for m in members:
        m.fused = False
    params, buffers = stack_module_state(members)
    x = torch.randn(3, B, T, CFG.d_model, dtype=torch.bfloat16)
    out = vmap(lambda p, b, x: functional_call(members[0], (p, b), (x,), {"causal": True}))(params, buffers, x)
    out.float().square().sum().backward()
    assert out.dtype == torch.bfloat16
    assert all(p.grad.dtype == torch.bfloat16 and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0
               for p in params.values())
