"""Training-step throughput of tfx against ``torch.nn.Transformer``.

    python -m tfx.bench                 # encoder–decoder, Post-LN and Pre-LN, on this device
    python -m tfx.bench --d-model 256 --layers 6 --rounds 30

Both models get the same sizes, placement, embeddings and output projection;
only the Transformer body differs. Steps alternate (tfx, torch, tfx, …) in one
run so that drifts in machine load hit both alike; the median time per step
gives tokens/s and the ratio tfx / torch (≥ 1: tfx is not slower).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .data import PAD
from .model import Embedding, build_model


class TorchReference(nn.Module):
    """``torch.nn.Transformer`` between the same embeddings and output projection as tfx."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.src_embed, self.tgt_embed = Embedding(cfg.src_vocab, cfg), Embedding(cfg.tgt_vocab, cfg)
        self.body = nn.Transformer(
            cfg.d_model, cfg.n_heads, cfg.n_enc, cfg.n_dec, cfg.d_ffn, dropout=cfg.dropout,
            activation=cfg.activation, batch_first=True, norm_first=cfg.placement == "pre",
        )
        self.out_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)

    def loss(self, src, tgt):
        tgt_in, gold = tgt[:, :-1], tgt[:, 1:]
        mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)
        h = self.body(self.src_embed(src), self.tgt_embed(tgt_in), tgt_mask=mask, tgt_is_causal=True)
        logits = self.out_proj(h)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), gold.reshape(-1), ignore_index=PAD)


def _step(loss_fn, opt):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn()
    loss.backward()
    opt.step()


def bench(placement: str = "post", d_model: int = 128, n_heads: int = 4, layers: int = 3, batch: int = 32,
          length: int = 32, vocab: int = 1000, rounds: int = 20, warmup: int = 3, device: str | None = None) -> dict:
    """Median step times and tokens/s of both models; ``ratio`` = tfx tokens/s ÷ torch tokens/s."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cfg = ModelConfig(src_vocab=vocab, tgt_vocab=vocab, d_model=d_model, n_heads=n_heads, d_ffn=4 * d_model,
                      n_enc=layers, n_dec=layers, placement=placement, max_len=length + 1)
    torch.manual_seed(0)
    ours = build_model(cfg).to(device)
    ref = TorchReference(cfg).to(device)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, vocab, (batch, length), generator=g).to(device)
    tgt = torch.randint(4, vocab, (batch, length + 1), generator=g).to(device)
    from .data import Batch

    b = Batch(src, tgt)
    runs = {
        "tfx": (lambda: ours.loss(b)["loss"], torch.optim.Adam(ours.parameters(), 1e-4)),
        "torch": (lambda: ref.loss(src, tgt), torch.optim.Adam(ref.parameters(), 1e-4)),
    }
    times = {k: [] for k in runs}
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for r in range(warmup + rounds):
        for name, (fn, opt) in (runs.items() if r % 2 == 0 else reversed(list(runs.items()))):
            sync()
            t = time.perf_counter()
            _step(fn, opt)
            sync()
            if r >= warmup:
                times[name].append(time.perf_counter() - t)
    tokens = batch * length * 2  # source + target tokens per step
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"placement": placement, "device": str(device), "tokens_per_step": tokens,
            "tfx_ms": 1e3 * med["tfx"], "torch_ms": 1e3 * med["torch"],
            "tfx_tok_s": tokens / med["tfx"], "torch_tok_s": tokens / med["torch"],
            "ratio": med["torch"] / med["tfx"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=3, help="encoder layers = decoder layers")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--placements", default="post,pre")
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; encoder–decoder "
          f"{a.layers}+{a.layers} layers, d {a.d_model}, batch {a.batch} × length {a.length}")
    print(f"{'placement':10s} {'tfx ms':>8s} {'torch ms':>9s} {'tfx tok/s':>10s} {'torch tok/s':>12s} {'ratio':>6s}")
    results = []
    for p in a.placements.split(","):
        r = bench(p, a.d_model, a.heads, a.layers, a.batch, a.length, rounds=a.rounds, device=a.device)
        results.append(r)
        print(f"{p:10s} {r['tfx_ms']:8.1f} {r['torch_ms']:9.1f} {r['tfx_tok_s']:10.0f} {r['torch_tok_s']:12.0f} "
              f"{r['ratio']:6.2f}")
    return results


if __name__ == "__main__":
    main()
