"""Training-step throughput: tfx (eager and compiled) against ``torch.nn.Transformer``, and
``tfx.train`` against a bare loop.

    python -m tfx.bench                 # small encoder–decoder, Post-LN and Pre-LN, on this device
    python -m tfx.bench --d-model 512 --layers 6 --batch 128 --length 32 --vocab 10000 --placements pre
                                        # the GPU target: 6+6, d 512, FFN 2048, 4,096-token batches

All models get the same sizes, placement, embeddings and output projection; only the
Transformer body differs. Steps alternate (tfx, compiled, torch, …) in one run so that
drifts in machine load hit all alike; the median time per step gives tokens/s. FLOPs per
step (forward + backward) are counted with ``torch.utils.flop_counter``; model FLOP
utilisation (MFU) divides the achieved FLOP/s by the device's dense bf16 peak, named in
the output (unknown on a CPU). Ratios ≥ 1 mean tfx is not slower.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from ..nn.batch import Batch
from ..nn.config import ModelConfig, TrainConfig
from ..nn.model import build_model
from .data import SyntheticTask
from .reference import TorchReference
from .train import make_optimizer, train

# Dense (no sparsity) bf16 tensor-core peaks from the vendors' datasheets, FLOP/s.
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10G": 70e12,
             "RTX 4090": 165e12}


def peak_flops(device: torch.device) -> tuple[str, float]:
    """(device name, dense bf16 peak FLOP/s; nan when not in PEAK_BF16)."""
    if device.type != "cuda":
        return "cpu", float("nan")
    name = torch.cuda.get_device_name(device)
    return name, next((v for k, v in PEAK_BF16.items() if k in name), float("nan"))


_clock = time.perf_counter  # --cpu-time: time.process_time, robust to other processes on a shared CPU


def _synchronize(device):
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def bench(placement: str = "post", d_model: int = 128, n_heads: int = 4, layers: int = 3, batch: int = 32,
          length: int = 32, vocab: int = 1000, rounds: int = 20, warmup: int = 3, device: str | None = None,
          compile: bool = True, amp: str | None = None) -> dict:
    """Median ms/step, tokens/s, TFLOP/s and MFU of tfx eager, tfx compiled (``compile``)
    and torch.nn.Transformer; ``ratio`` = torch ms ÷ tfx ms, ``compiled_speedup`` = eager
    ms ÷ compiled ms. ``amp``: 'bf16' or 'fp32' (default: bf16 on CUDA, fp32 on a CPU)."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    amp = amp or ("bf16" if device.type == "cuda" else "fp32")
    dtype = torch.bfloat16 if amp == "bf16" else None
    cfg = ModelConfig(src_vocab=vocab, tgt_vocab=vocab, d_model=d_model, n_heads=n_heads, d_ffn=4 * d_model,
                      n_enc=layers, n_dec=layers, placement=placement, max_len=length + 1)
    torch.manual_seed(0)
    ours = build_model(cfg).to(device)
    ref = TorchReference.from_tfx(ours)  # the same weights: only the Transformer body's code differs
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, vocab, (batch, length), generator=g)
    tgt = torch.randint(4, vocab, (batch, length + 1), generator=g)
    b = Batch(src, tgt).to(device)
    src, tgt = b.src, b.tgt
    tc = TrainConfig(lr=1e-4)

    def eager():
        return ours.loss_and_accuracy(src, tgt, 0.0, b.src_padded, b.tgt_padded)[0]

    variants = {"tfx": (eager, ours), "torch": (lambda: ref.loss(src, tgt, b.src_padded, b.tgt_padded), ref)}
    if compile:
        twin = build_model(cfg).to(device)  # its own weights and optimiser, like the others
        compiled_fn = torch.compile(twin.loss_and_accuracy)
        variants["tfx compiled"] = (lambda: compiled_fn(src, tgt, 0.0, b.src_padded, b.tgt_padded)[0], twin)
    opts = {k: make_optimizer(m.parameters(), tc, device) for k, (_, m) in variants.items()}
    sync = _synchronize(device)

    def step(name):
        fn, _ = variants[name]
        opts[name].zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = fn()
        loss.backward()
        opts[name].step()

    times = {k: [] for k in variants}
    names = list(variants)
    for r in range(warmup + rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            sync()
            t = _clock()
            step(name)
            sync()
            if r >= warmup:
                times[name].append(_clock() - t)
    flops = {}
    for name in ("tfx", "torch"):
        with FlopCounterMode(display=False) as fc, torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            variants[name][0]().backward()
        flops[name] = fc.get_total_flops()
    flops["tfx compiled"] = flops["tfx"]  # the same arithmetic
    dev_name, peak = peak_flops(device)
    tokens = batch * length * 2  # source + target tokens per step
    out = {"placement": placement, "device": dev_name, "amp": amp, "peak_flops": peak, "tokens_per_step": tokens,
           "layers": layers, "d_model": d_model, "batch": batch, "length": length}
    for name in variants:
        med = statistics.median(times[name])
        key = name.replace(" ", "_")
        out[f"{key}_ms"] = 1e3 * med
        out[f"{key}_tok_s"] = tokens / med
        out[f"{key}_tflops"] = flops[name] / med / 1e12
        out[f"{key}_mfu"] = flops[name] / med / peak
    out["ratio"] = out["torch_ms"] / out["tfx_ms"]
    if compile:
        out["compiled_speedup"] = out["tfx_ms"] / out["tfx_compiled_ms"]
        out["compiled_ratio"] = out["torch_ms"] / out["tfx_compiled_ms"]
    return out


def train_overhead(placement: str = "post", d_model: int = 128, n_heads: int = 4, layers: int = 3, batch: int = 32,
                   length: int = 32, vocab: int = 1000, steps: int = 30, warmup: int = 5, log_every: int = 10,
                   device: str | None = None, compile: bool = False, amp: str | None = None) -> dict:
    """Steps/s of ``tfx.train`` and of a bare loop (batch, forward, backward, optimiser step;
    same model, data, optimiser and precision). ``ratio`` = train steps/s ÷ bare steps/s.
    Each is timed as (``warmup + steps`` steps − ``warmup`` steps) so that set-up, compilation
    and the final evaluation cancel out."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    amp = amp or ("bf16" if device.type == "cuda" else "fp32")
    task = SyntheticTask("reverse", vocab=vocab - 4, length=length - 1)  # src (B, length), tgt (B, length + 1)
    cfg = ModelConfig.for_task(task, d_model=d_model, n_heads=n_heads, d_ffn=4 * d_model, n_enc=layers,
                               n_dec=layers, placement=placement)
    tc = TrainConfig(lr=1e-4, batch_size=batch, device=str(device), amp_dtype=amp, compile=compile,
                     log_every=log_every, eval_batches=1, bleu_sentences=0)
    sync = _synchronize(device)

    def bare(n):
        model = build_model(cfg).to(device)
        opt = make_optimizer(model.parameters(), tc, device)
        fn = torch.compile(model.loss_and_accuracy) if compile else model.loss_and_accuracy
        dtype = torch.bfloat16 if amp == "bf16" else None
        sync()
        t = _clock()
        for s in range(n):
            b = task.batch(s, batch).to(device)
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
                loss = fn(b.src, b.tgt, 0.0, b.src_padded, b.tgt_padded)[0]
            loss.backward()
            opt.step()
        sync()
        return _clock() - t

    def trained(n):
        model = build_model(cfg)
        sync()
        t = _clock()
        train(model, task, tc.replace(steps=n))
        sync()
        return _clock() - t

    per_step = {}
    for name, fn in (("bare", bare), ("train", trained)):
        per_step[name] = (fn(warmup + steps) - fn(warmup)) / steps
    return {"device": str(device), "log_every": log_every, "compile": compile, "amp": amp,
            "bare_ms": 1e3 * per_step["bare"], "train_ms": 1e3 * per_step["train"],
            "bare_steps_s": 1 / per_step["bare"], "train_steps_s": 1 / per_step["train"],
            "ratio": per_step["bare"] / per_step["train"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=3, help="encoder layers = decoder layers")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--amp", choices=("bf16", "fp32"), default=None, help="default: bf16 on CUDA, fp32 on a CPU")
    ap.add_argument("--placements", default="post,pre")
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="skip the compiled tfx variant")
    ap.add_argument("--train-steps", type=int, default=30, help="steps timed for tfx.train vs a bare loop (0: skip)")
    ap.add_argument("--log-every", type=int, default=10, help="tfx.train's log_every in that comparison")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the process's CPU time, not the wall clock (a CPU shared with other work, "
                         "--threads 1)")
    a = ap.parse_args(argv)
    global _clock
    _clock = time.process_time if a.cpu_time else time.perf_counter
    if a.threads:
        torch.set_num_threads(a.threads)
    sizes = dict(d_model=a.d_model, n_heads=a.heads, layers=a.layers, batch=a.batch, length=a.length, vocab=a.vocab)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {'CPU' if a.cpu_time else 'wall'} time; encoder–decoder {a.layers}+{a.layers} "
          f"layers, d {a.d_model}, FFN {4 * a.d_model}, batch {a.batch} × length {a.length} "
          f"({2 * a.batch * a.length} tokens/step)")
    results = []
    for p in a.placements.split(","):
        r = bench(p, rounds=a.rounds, device=a.device, compile=a.compile, amp=a.amp, **sizes)
        peak = "unknown" if r["peak_flops"] != r["peak_flops"] else f"{r['peak_flops'] / 1e12:.0f} TFLOP/s"
        print(f"\n{p}: device {r['device']} (dense bf16 peak {peak}), {r['amp']}")
        print(f"  {'model':14s} {'ms/step':>8s} {'tok/s':>9s} {'TFLOP/s':>8s} {'MFU':>6s}")
        for name in ("tfx", "tfx compiled", "torch"):
            k = name.replace(" ", "_")
            if f"{k}_ms" in r:
                mfu = "  n/a" if r[f"{k}_mfu"] != r[f"{k}_mfu"] else f"{100 * r[f'{k}_mfu']:5.1f}%"
                label = "torch.nn.Tr." if name == "torch" else name
                print(f"  {label:14s} {r[f'{k}_ms']:8.1f} {r[f'{k}_tok_s']:9.0f} {r[f'{k}_tflops']:8.3f} {mfu:>6s}")
        line = f"  tfx/torch speed ratio {r['ratio']:.2f}"
        if "compiled_speedup" in r:
            line += f"; compiled/eager {r['compiled_speedup']:.2f}×; compiled/torch {r['compiled_ratio']:.2f}"
        print(line)
        if a.train_steps:
            o = train_overhead(p, steps=a.train_steps, log_every=a.log_every, device=a.device, amp=a.amp, **sizes)
            r["train"] = o
            print(f"  tfx.train {o['train_steps_s']:.2f} steps/s, bare loop {o['bare_steps_s']:.2f} steps/s: "
                  f"ratio {o['ratio']:.2f} (log_every {o['log_every']})")
        results.append(r)
    return results


if __name__ == "__main__":
    main()
