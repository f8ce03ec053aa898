"""``torch.nn.Transformer`` with a tfx model's weights: the parity test's and the bench's reference.

    ref = TorchReference.from_tfx(model)      # same weights, same embeddings, same output projection
    ref(src, tgt_in)                          # logits, as model(src, tgt_in)

torch's modules hold the Transformer body only; tfx's own embeddings (s · E[token] + P[position],
s = √d with ``embed_scale``) and output projection sit around it, copied from the model, so the
two differ in the body alone. An encoder–decoder maps onto ``nn.Transformer``; a decoder-only LM
onto ``nn.TransformerEncoder`` with the causal mask (its layers have no cross-attention either).

One difference is accounted for here, not hidden: ``nn.Transformer`` always ends each stack with
a LayerNorm, also with ``norm_first=False``, so its Post-LN is x_L ↦ LN(x_L) on top of the
Post-LN of Vaswani et al. (2017), whose last sub-layer already ends with a norm. tfx's Post-LN
stack ends there; its Pre-LN stack (Xiong et al. 2020) ends with the final LN that torch adds.
So the reference keeps torch's final norms for Pre-LN and drops them for Post-LN.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch import PAD
from ..nn.model import Embedding, Transformer

PLACEMENTS = {"post": False, "pre": True}  # tfx placement → torch's norm_first


def _check(cfg):
    """Raise ValueError unless torch's layers compute exactly what this config does."""
    if cfg.kind == "encoder":
        raise ValueError("TorchReference: an encoder-only model (n_dec=0) has no torch.nn.Transformer twin here")
    placements = {cfg.dec_placement} | ({cfg.enc_placement} if cfg.n_enc else set())
    if len(placements) != 1 or not placements <= set(PLACEMENTS):
        raise ValueError(f"TorchReference needs one placement in {tuple(PLACEMENTS)} for both stacks, "
                         f"got enc_placement={cfg.enc_placement!r}, dec_placement={cfg.dec_placement!r}")
    extras = {"norm": cfg.norm != "layernorm", "ln_scaling": cfg.ln_scaling, "depth_mup": cfg.depth_mup,
              "qk_norm": cfg.qk_norm, "attn_softcap": cfg.attn_softcap is not None,
              "logit_softcap": cfg.logit_softcap is not None}
    if any(extras.values()):
        raise ValueError(f"TorchReference: torch's layers have no {', '.join(k for k, v in extras.items() if v)}")


class TorchReference(nn.Module):
    """``torch.nn.Transformer`` (or, for a decoder-only LM, ``nn.TransformerEncoder`` with the
    causal mask) between tfx embeddings and an output projection, for a Post-LN or Pre-LN
    ``cfg``. Its own initial weights are torch's; :meth:`from_tfx` copies a model's.

    torch has one dropout rate for attention, activations and branches: ``cfg.dropout`` (equal
    to tfx's in eval mode, where dropout is off)."""

    def __init__(self, cfg):
        super().__init__()
        _check(cfg)
        self.cfg = cfg
        norm_first = PLACEMENTS[cfg.dec_placement]
        layer = dict(d_model=cfg.d_model, nhead=cfg.n_heads, dim_feedforward=cfg.d_ffn, dropout=cfg.dropout,
                     activation=cfg.activation, layer_norm_eps=cfg.norm_eps, batch_first=True,
                     norm_first=norm_first)

        def final():  # Pre-LN's final norm; none after Post-LN (this module's docstring)
            return nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps) if norm_first else None

        # nested tensors (torch's inference fast path, Post-LN only) would leave the arithmetic as it is
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), cfg.n_enc or cfg.n_dec, final(),
                                        enable_nested_tensor=False)
        self.tgt_embed = Embedding(cfg.tgt_vocab, cfg)
        if cfg.n_enc:
            self.src_embed = Embedding(cfg.src_vocab, cfg)
            decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer), cfg.n_dec, final())
            self.body = nn.Transformer(cfg.d_model, cfg.n_heads, custom_encoder=encoder, custom_decoder=decoder,
                                       batch_first=True)
        else:
            self.body = encoder
        self.out_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)
        if cfg.tie_embeddings:
            self.out_proj.weight = self.tgt_embed.tok.weight

    @classmethod
    def from_tfx(cls, model: Transformer) -> "TorchReference":
        """A reference with ``model``'s weights (copies: training one leaves the other as it is)."""
        w = model.out_proj.weight
        ref = cls(model.cfg).to(w.device, w.dtype)
        with torch.no_grad():
            for theirs, ours in weight_pairs(model, ref):
                theirs.copy_(torch.cat(ours))
        for name in ("src_embed", "tgt_embed"):  # buffers too (the sinusoidal table)
            if hasattr(ref, name):
                getattr(ref, name).load_state_dict(getattr(model, name).state_dict())
        return ref

    def forward(self, src, tgt_in, src_padded: bool = True, tgt_padded: bool = True):
        """Logits (B, T, tgt_vocab). ``*_padded=False``: no PAD in that input, no padding mask."""
        tgt_pad = (tgt_in == PAD) if tgt_padded else None  # torch's boolean masks: True = do not attend
        T = tgt_in.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt_in.device).triu(1)
        x = self.tgt_embed(tgt_in)
        if self.cfg.n_enc:
            src_pad = (src == PAD) if src_padded else None
            h = self.body(self.src_embed(src), x, tgt_mask=causal, src_key_padding_mask=src_pad,
                          tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        else:
            h = self.body(x, mask=causal, src_key_padding_mask=tgt_pad, is_causal=True)
        return self.out_proj(h)

    def loss(self, src, tgt, src_padded: bool = True, tgt_padded: bool = True):
        """Cross-entropy (nats) of the next target token, PAD ignored: tfx's training loss."""
        logits = self(src, tgt[:, :-1], src_padded, tgt_padded)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tgt[:, 1:].reshape(-1),
                               ignore_index=PAD)


def _attention_pairs(ours, theirs: nn.MultiheadAttention) -> list:
    return [(theirs.in_proj_weight, [ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]),
            (theirs.in_proj_bias, [ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]),
            (theirs.out_proj.weight, [ours.out_proj.weight]), (theirs.out_proj.bias, [ours.out_proj.bias])]


def _norm_pairs(ours, theirs) -> list:
    return [(theirs.weight, [ours.weight]), (theirs.bias, [ours.bias])]


def layer_pairs(ours, theirs) -> list:
    """[(torch parameter, [tfx parameters])] of one layer, the torch one the concatenation of
    the tfx ones: a tfx EncoderLayer and an ``nn.TransformerEncoderLayer``, or a DecoderLayer
    and an ``nn.TransformerDecoderLayer``. Used to copy weights, and to compare gradients."""
    attention = [ours.self_attn] + ([ours.cross_attn] if hasattr(ours, "cross_attn") else [])
    torch_attention = [theirs.self_attn] + ([theirs.multihead_attn] if len(attention) == 2 else [])
    norms = [r.norm for r in attention + [ours.ffn]]
    pairs = [p for a, b in zip(attention, torch_attention) for p in _attention_pairs(a.f, b)]
    pairs += [p for i, n in enumerate(norms, 1) for p in _norm_pairs(n, getattr(theirs, f"norm{i}"))]
    ffn = ours.ffn.f
    return pairs + [(theirs.linear1.weight, [ffn.fc1.weight]), (theirs.linear1.bias, [ffn.fc1.bias]),
                    (theirs.linear2.weight, [ffn.fc2.weight]), (theirs.linear2.bias, [ffn.fc2.bias])]


def weight_pairs(model: Transformer, ref: TorchReference) -> list:
    """[(``ref`` parameter, [``model`` parameters])] covering every parameter of both (a tied
    output projection once)."""
    if ref.cfg.n_enc:
        stacks = [(model.encoder, ref.body.encoder), (model.decoder, ref.body.decoder)]
    else:
        stacks = [(model.decoder, ref.body)]
    pairs = []
    for ours, theirs in stacks:
        for a, b in zip(ours.layers, theirs.layers):
            pairs += layer_pairs(a, b)
        if ours.final_norm is not None:
            pairs += _norm_pairs(ours.final_norm, theirs.norm)
    for name in ("src_embed", "tgt_embed"):
        if hasattr(ref, name):
            pairs += [(p, [q]) for p, q in zip(getattr(ref, name).parameters(), getattr(model, name).parameters())]
    if not ref.cfg.tie_embeddings:
        pairs.append((ref.out_proj.weight, [model.out_proj.weight]))
    return pairs

