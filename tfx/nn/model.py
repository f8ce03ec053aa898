"""Encoder, decoder, encoder–decoder and decoder-only LM, built from `tfx.nn.blocks`.

    cfg = ModelConfig(n_enc=6, n_dec=6, placement="pre")
    model = build_model(cfg)              # initialised with cfg.init
    out = model.loss(task.batch(0, 32))   # {'loss', 'acc', 'tokens'}
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .batch import BOS, EOS, PAD, Batch
from .blocks import DecoderLayer, EncoderLayer, Residual, make_norm, softcap
from .config import FINAL_NORM, ModelConfig
from .constants import deepnorm_constants
from .init import initialize
from .mup import readout_multiplier


def sinusoidal_table(max_len: int, d: int) -> torch.Tensor:
    """PE[p, 2k] = sin(p / 10000^{2k/d}), PE[p, 2k+1] = cos(…)  (Vaswani et al. 2017)."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    table = torch.zeros(max_len, d)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)[:, : d // 2]
    return table


class Embedding(nn.Module):
    """x_0 = s · E[token] + P[position], s = sqrt(d) if ``embed_scale`` else 1."""

    def __init__(self, vocab: int, cfg: ModelConfig):
        super().__init__()
        self.tok = nn.Embedding(vocab, cfg.d_model)
        self.scale = math.sqrt(cfg.d_model) if cfg.embed_scale else 1.0
        if cfg.positions == "learned":
            self.pos = nn.Parameter(torch.zeros(cfg.max_len, cfg.d_model))
        else:  # a buffer, not a constant: reparameterize_admin may rescale it
            self.register_buffer("pos", sinusoidal_table(cfg.max_len, cfg.d_model))
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, ids):
        if ids.shape[1] > self.pos.shape[0]:
            raise ValueError(f"sequence length {ids.shape[1]} exceeds max_len={self.pos.shape[0]}")
        return self.dropout(self.scale * self.tok(ids) + self.pos[: ids.shape[1]])


class Stack(nn.Module):
    """N layers of one kind, layer ℓ = 1, …, N; Pre-LN, Peri-LN, output-norm and Sub-LN stacks
    end with a final normalisation (``config.FINAL_NORM``)."""

    def __init__(self, layer_cls, n: int, cfg: ModelConfig, placement: str, alpha: float = 1.0):
        super().__init__()
        self.placement = placement
        self.layers = nn.ModuleList(layer_cls(cfg, placement, alpha, layer=l) for l in range(1, n + 1))
        self.final_norm = (make_norm(cfg.norm, cfg.d_model, cfg.norm_eps, cfg.dyt_alpha)
                           if placement in FINAL_NORM else None)
        if cfg.depth_mup:  # depth-μP: every branch × 1/√L, L this stack's residual sub-layers
            subs = self.residuals()
            for _, r in subs:
                r.branch_scale = len(subs) ** -0.5

    def residuals(self) -> list:
        """[(name, Residual)] of this stack in forward order, names like 'layers.0.ffn'."""
        return [(n, m) for n, m in self.named_modules() if isinstance(m, Residual)]

    def forward(self, x, **kw):
        for layer in self.layers:
            x = layer(x, **kw)
        return x if self.final_norm is None else self.final_norm(x)


def _padded(ids, padded):
    """Does ``ids`` hold a PAD? ``padded`` when the caller knows (found on the host, see
    data.Batch); else a look at a CPU tensor; on an accelerator, assume so (reading the
    device would stall the host and break ``torch.compile``'s graph; a mask that hides
    nothing gives the same result)."""
    if padded is not None:
        return padded
    return bool((ids == PAD).any()) if ids.device.type == "cpu" else True


def _key_mask(ids, padded=None):
    """(B, 1, 1, L) True where the key is a real token; None when nothing is padded."""
    return (ids != PAD)[:, None, None, :] if _padded(ids, padded) else None


class Transformer(nn.Module):
    """Encoder–decoder (n_enc, n_dec > 0), encoder-only (n_dec = 0, one output per
    source token) or decoder-only LM (n_enc = 0, trained on ``batch.tgt``)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        dn = deepnorm_constants(cfg.n_enc, cfg.n_dec)  # DeepNorm's α; unused by other placements
        if cfg.n_enc:
            self.src_embed = Embedding(cfg.src_vocab, cfg)
            self.encoder = Stack(EncoderLayer, cfg.n_enc, cfg, cfg.enc_placement, dn["encoder"]["alpha"])
        if cfg.n_dec:
            self.tgt_embed = Embedding(cfg.tgt_vocab, cfg)
            layer = DecoderLayer if cfg.n_enc else EncoderLayer  # an LM's layer has no cross-attention
            self.decoder = Stack(layer, cfg.n_dec, cfg, cfg.dec_placement, dn["decoder"]["alpha"])
        self.out_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)
        if cfg.tie_embeddings:
            self.out_proj.weight = self.output_embedding.tok.weight

    @property
    def output_embedding(self) -> Embedding:
        """The embedding of the stack that produces the outputs (tied when ``tie_embeddings``)."""
        return self.tgt_embed if self.cfg.n_dec else self.src_embed

    def stacks(self) -> dict:
        """{'encoder': Stack, 'decoder': Stack} for the stacks this model has."""
        return {name: getattr(self, name) for name in ("encoder", "decoder") if hasattr(self, name)}

    def encode(self, src, src_padded=None):
        return self.encoder(self.src_embed(src), mask=_key_mask(src, src_padded))

    def decode(self, tgt_in, memory=None, src=None, tgt_padded=None, src_padded=None):
        x = self.tgt_embed(tgt_in)
        # the key mask only: self-attention is causal=True, and blocks.allowed_pairs (the one place
        # that combines the two) adds the triangle; nothing padded: SDPA's is_causal, faster
        if memory is None:  # decoder-only LM
            return self.decoder(x, mask=_key_mask(tgt_in, tgt_padded), causal=True)
        return self.decoder(x, memory=memory, self_mask=_key_mask(tgt_in, tgt_padded),
                            memory_mask=None if src is None else _key_mask(src, src_padded))

    def forward(self, src=None, tgt_in=None, src_padded=None, tgt_padded=None):
        """Logits (B, L, tgt_vocab): over ``tgt_in`` positions, or over source positions for an encoder-only model.
        ``src_padded`` / ``tgt_padded``: whether the inputs hold PAD, if known (see data.Batch)."""
        kind = self.cfg.kind
        if kind == "encoder":
            h = self.encode(src, src_padded)
        elif kind == "decoder":
            h = self.decode(tgt_in, tgt_padded=tgt_padded)
        else:
            h = self.decode(tgt_in, self.encode(src, src_padded), src, tgt_padded, src_padded)
        return self.logits(h)

    def logits(self, h):
        """Output logits z = out_proj(h) (× base_width/d under μP, yang2022tp5; tfx.nn.mup), soft-capped
        c · tanh(z / c) with ``logit_softcap`` = c (gemma2024)."""
        z = self.out_proj(h)
        m = readout_multiplier(self.cfg)
        z = z if m == 1.0 else z * m
        return z if self.cfg.logit_softcap is None else softcap(z, self.cfg.logit_softcap)

    def loss(self, batch: Batch, label_smoothing: float = 0.0) -> dict:
        """Token-level cross-entropy (nats) on the next target token, PAD ignored; accuracy alongside,
        and the output softmax's log partition function log Z over the real tokens: its mean
        ``log_z``, the mean of its square ``log_z_sq`` (PaLM's z-loss, chowdhery2022palm) and its
        largest magnitude ``log_z_absmax``."""
        if self.cfg.kind == "encoder" and (batch.src is None or batch.src.shape != batch.tgt[:, 1:].shape):
            raise ValueError("an encoder-only model predicts one token per source token: "
                             "it needs a task whose src and tgt[:, 1:] have the same shape (copy/reverse/sort)")
        loss, acc, log_z, log_z_sq, log_z_absmax = self.loss_and_accuracy(
            batch.src, batch.tgt, label_smoothing, batch.src_padded, batch.tgt_padded)
        return {"loss": loss, "acc": acc, "tokens": batch.n_tokens,
                "log_z": log_z, "log_z_sq": log_z_sq, "log_z_absmax": log_z_absmax}

    def loss_and_accuracy(self, src, tgt, label_smoothing: float = 0.0, src_padded=None, tgt_padded=None,
                          accuracy: bool = True, log_z: bool = True):
        """(loss, accuracy, log Z mean, (log Z)² mean, max |log Z|) as device tensors: what the
        trainer compiles. Tensors and flags in, tensors out; nothing reads the device, so
        ``torch.compile`` sees one graph.

        log Z = log Σ_v exp(logit_v) at each real (non-PAD) target token. Its mean square is the
        z-loss (chowdhery2022palm; wortsman2023proxies), which keeps its gradient; the other two are
        detached records.

        ``accuracy=False`` skips the argmax, ``log_z=False`` the logsumexp (a pass over the logits
        each, as long as the loss's own on an LM's vocabulary): a step whose records nobody reads
        (and, for log Z, that has no z-loss) need not pay for them. What is skipped comes back as
        None; the loss is the same to the bit."""
        gold = tgt[:, 1:]
        if self.cfg.kind == "encoder":
            logits = self(src=src, src_padded=src_padded)
        else:
            logits = self(src=src, tgt_in=tgt[:, :-1], src_padded=src_padded, tgt_padded=tgt_padded)
        flat = logits.reshape(-1, logits.shape[-1]).float()
        loss = F.cross_entropy(flat, gold.reshape(-1), ignore_index=PAD, label_smoothing=label_smoothing)
        if not (accuracy or log_z):
            return loss, None, None, None, None
        real = (gold != PAD).reshape(-1)
        n_real = real.sum().clamp(min=1)
        acc = log_z_mean = log_z_sq = log_z_absmax = None
        if log_z:
            lse = torch.where(real, torch.logsumexp(flat, -1), 0.0)  # PAD positions count 0
            log_z_sq = lse.square().sum() / n_real
        with torch.no_grad():
            if accuracy:
                acc = ((logits.argmax(-1) == gold).reshape(-1) & real).sum() / n_real
            if log_z:
                log_z_mean, log_z_absmax = lse.sum() / n_real, lse.abs().amax()
        return loss, acc, log_z_mean, log_z_sq, log_z_absmax

    @torch.no_grad()
    def greedy(self, src, max_len: int | None = None):
        """Greedy decoding for an encoder–decoder: ids (B, ≤ max_len) after BOS, PAD after EOS."""
        if self.cfg.kind != "encoder-decoder":
            raise ValueError(f"greedy decoding needs an encoder-decoder model, this one is {self.cfg.kind!r}")
        max_len = max_len or self.cfg.max_len - 1
        memory = self.encode(src)
        ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            nxt = self.logits(self.decode(ys, memory, src)[:, -1]).argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            ys = torch.cat([ys, nxt[:, None]], 1)
            done |= nxt == EOS
            if bool(done.all()):
                break
        return ys[:, 1:]

    def residuals(self):
        """Every residual sub-layer in forward order, as (name, Residual)."""
        return [(f"{name}.{n}", m) for name, stack in self.stacks().items() for n, m in stack.residuals()]


def build_model(cfg: ModelConfig | None = None, batch: Batch | None = None, seed: int | None = 0, **kw) -> Transformer:
    """Make a model and initialise it with ``cfg.init``.

    ``batch`` is needed by initialisers that look at data (Admin's profiling pass).
    ``seed`` fixes the initial weights (None: leave torch's RNG as it is).
    Keyword arguments are ModelConfig fields, e.g. ``build_model(n_enc=6, placement="pre")``.
    """
    cfg = ModelConfig(**kw) if cfg is None else (cfg.replace(**kw) if kw else cfg)
    if seed is not None:
        torch.manual_seed(seed)
    model = Transformer(cfg)
    initialize(model, cfg.init, batch=batch)
    return model


def build_scheme(scheme: str, task, n_enc: int, n_dec: int, batch: Batch | None = None, seed: int | None = 0,
                 **kw) -> Transformer:
    """A fresh model of ``scheme`` (a key of :data:`tfx.nn.config.SCHEMES`) for ``task``:
    ``n_enc`` encoder and ``n_dec`` decoder layers (``ModelConfig.for_scheme``; 0: no such
    stack), sizes from ``kw`` (e.g. ``P.model_kwargs()``). ``batch`` feeds Admin's profiling
    pass; the other initialisers do not look at it. The one builder the theory and the
    book use."""
    return build_model(ModelConfig.for_scheme(scheme, task, n_enc, n_dec, **kw), batch=batch, seed=seed)
