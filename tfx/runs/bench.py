"""Training-step throughput: tfx (eager and compiled) against ``torch.nn.Transformer``, how near
the device's limit it runs, and ``tfx.train`` against a bare loop.

    python -m tfx.bench                  # the book's two CPU sizes, Post-LN and Pre-LN, on this device
    python -m tfx.bench --threads 1 --cpu-time --no-compile --profile
    python -m tfx.bench --size reverse --placements post --threads 1 --cpu-time --ensemble 8
                                         # + K = 8 runs as one ensemble against 8 runs one by one
    python -m tfx.bench --size custom --d-model 512 --layers 6 --batch 128 --length 32 --vocab 10000 --placements pre
                                         # the GPU target: 6+6, d 512, FFN 2048, 4,096-token batches

Sizes (``--size``): ``reverse``, the book profile's 6+6 encoder–decoder on the reverse task (d 64,
FFN 256, batch 32; experiments/warmup-axis.toml); ``lm``, its 6-layer decoder-only LM on
``libreoffice-en`` (vocabulary 2,000, tied embeddings, batch 32; experiments/lm.toml); ``custom``,
an encoder–decoder of the sizes given, on random tokens.

Both models get the same weights, placement, embeddings and output projection
(:mod:`tfx.runs.reference`); only the Transformer body's code differs. A step is a training
step: the cross-entropy (for tfx, without the accuracy and log Z records, as the trainer needs
it between logged steps), backward, Adam. Steps alternate (tfx, compiled, torch, the GEMMs, …)
in one run so that drifts in machine load hit all alike; medians give ms/step and tokens/s
(tokens: the input positions, PAD included).

FLOPs per step (forward + backward) are counted with ``torch.utils.flop_counter``, attention
included (full attention also where it is causal: what a masked kernel computes). The
utilisation divides the achieved FLOP/s by a peak: on a CPU the fp32 GEMM rate measured in
the same rounds, on the same threads (the better of a 1024² matmul and the model's first FFN
matmul, tokens × d_model by d_model × d_ffn); on a GPU the dense bf16 peak of its datasheet
(MFU; unknown for a GPU not in ``PEAK_BF16``). Ratios ≥ 1 mean tfx is not slower.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from ..nn.batch import Batch
from ..nn.config import ModelConfig, TrainConfig, autocast_dtype
from ..nn.model import build_model
from ..nn.optim import make_optimizer, pick_device, take_step
from .data import SyntheticTask, load_task
from .reference import TorchReference
from .train import train

# Dense (no sparsity) bf16 tensor-core peaks from the vendors' datasheets, FLOP/s.
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10G": 70e12,
             "RTX 4090": 165e12}

# The book profile's CPU sizes: (task, ModelConfig fields, batch size)
BOOK_SIZES = {
    "reverse": ("reverse", dict(n_enc=6, n_dec=6, d_model=64, n_heads=4, d_ffn=256), 32),
    "lm": ("libreoffice-en", dict(n_enc=0, n_dec=6, d_model=64, n_heads=4, d_ffn=256, tie_embeddings=True), 32),
}
SQUARE = 1024  # the side of the square GEMM whose rate is a CPU's peak

# torch's FLOP counter knows the GPU attention kernels; a CPU runs these, with the same matrix
# products (QKᵀ and PV forward; four backward). They get the shapes of the kernels' arguments.
_ATTENTION_FLOPS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:
        lambda q, k, v, *_, **__: sdpa_flop_count(q, k, v),
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
        lambda grad, q, k, v, *_, **__: sdpa_backward_flop_count(grad, q, k, v),
}


def peak_flops(device: torch.device) -> tuple[str, float]:
    """(device name, dense bf16 peak FLOP/s; nan when not in PEAK_BF16)."""
    if device.type != "cuda":
        return "cpu", float("nan")
    name = torch.cuda.get_device_name(device)
    return name, next((v for k, v in PEAK_BF16.items() if k in name), float("nan"))


_clock = time.perf_counter  # --cpu-time: time.process_time, robust to other processes on a shared CPU


def default_amp(device: torch.device, amp: str | None = None) -> str:
    """``amp`` as given, else the bench's default: bf16 on CUDA, fp32 on a CPU."""
    return amp or ("bf16" if device.type == "cuda" else "fp32")


def _synchronize(device):
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def step_flops(loss_fn) -> int:
    """FLOPs of one forward and backward of ``loss_fn()`` (matrix products and attention)."""
    with FlopCounterMode(display=False, custom_mapping=_ATTENTION_FLOPS) as fc:
        loss_fn().backward()
    return fc.get_total_flops()


def book_setup(size: str, placement: str, batches: int = 4) -> tuple[ModelConfig, list[Batch]]:
    """(config, the first ``batches`` training batches) of a book size (``BOOK_SIZES``)."""
    task_name, model, batch_size = BOOK_SIZES[size]
    task = load_task(task_name)
    cfg = ModelConfig.for_task(task, placement=placement, **model)
    return cfg, [task.batch(i, batch_size) for i in range(batches)]


def custom_setup(placement: str = "post", d_model: int = 128, n_heads: int = 4, layers: int = 3, batch: int = 32,
                 length: int = 32, vocab: int = 1000) -> tuple[ModelConfig, list[Batch]]:
    """(config, [one batch of random tokens]) of a ``layers``+``layers`` encoder–decoder, FFN 4·d."""
    cfg = ModelConfig(src_vocab=vocab, tgt_vocab=vocab, d_model=d_model, n_heads=n_heads, d_ffn=4 * d_model,
                      n_enc=layers, n_dec=layers, placement=placement, max_len=length + 1)
    g = torch.Generator().manual_seed(0)
    return cfg, [Batch(torch.randint(4, vocab, (batch, length), generator=g),
                       torch.randint(4, vocab, (batch, length + 1), generator=g))]


def _loss(loss_and_accuracy, records: bool = True):
    """A batch's training loss as ``tfx.train`` computes it (``records``: the accuracy and log Z
    it records every step beside the cross-entropy), or the cross-entropy alone, what a bare
    loop of one's own needs (``loss_and_accuracy(accuracy=False, log_z=False)``)."""
    return lambda b: loss_and_accuracy(b.src, b.tgt, 0.0, b.src_padded, b.tgt_padded, accuracy=records,
                                       log_z=records)[0]


def _gemm(m: int, k: int, n: int, device) -> tuple:
    """(the product of an m×k and a k×n fp32 matrix as a function, its FLOPs 2mkn)."""
    a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
    return (lambda: a @ b), 2 * m * k * n


def bench(placement: str = "post", size: str = "custom", rounds: int = 20, warmup: int = 3, device: str | None = None,
          compile: bool = True, amp: str | None = None, **custom) -> dict:
    """Median ms/step, tokens/s, FLOP/s and utilisation of tfx eager, tfx compiled (``compile``)
    and torch.nn.Transformer, at a book size (``BOOK_SIZES``) or a custom one (``custom``:
    :func:`custom_setup`'s sizes). On a CPU also the measured GEMM rates: ``gemm_square`` (1024²)
    and ``gemm_model`` (the first FFN matmul's shape), their maximum the ``peak``.
    ``ratio`` = torch ms ÷ tfx ms (the step ``tfx.train`` takes: accuracy and log Z recorded every
    step), ``ratio_loss_only`` the same for the cross-entropy alone (what torch's reference
    computes), ``compiled_speedup`` = eager ms ÷ compiled ms.
    ``amp``: 'bf16' or 'fp32' (default: bf16 on CUDA, fp32 on a CPU)."""
    device = pick_device(device)
    amp = default_amp(device, amp)
    dtype = autocast_dtype(amp)
    cfg, batches = custom_setup(placement, **custom) if size == "custom" else book_setup(size, placement)
    batches = [b.to(device) for b in batches]
    ours = build_model(cfg).to(device)
    ref = TorchReference.from_tfx(ours)  # the same weights: only the Transformer body's code differs
    tc = TrainConfig(lr=1e-4)

    loss_only = build_model(cfg).to(device)  # the same step without the per-step records
    variants = {"tfx": (_loss(ours.loss_and_accuracy), ours),
                "tfx loss only": (_loss(loss_only.loss_and_accuracy, records=False), loss_only),
                "torch": (lambda b: ref.loss(b.src, b.tgt, b.src_padded, b.tgt_padded), ref)}
    if compile:
        twin = build_model(cfg).to(device)  # its own weights and optimiser, like the others
        variants["tfx compiled"] = (_loss(torch.compile(twin.loss_and_accuracy)), twin)
    opts = {k: make_optimizer(m.parameters(), tc, device) for k, (_, m) in variants.items()}
    gemms = {}
    if device.type == "cpu":  # the peak a CPU's step is measured against, in the same rounds
        tokens_per_stack = max(b.tgt[:, :-1].numel() for b in batches)
        gemms = {"gemm_square": _gemm(SQUARE, SQUARE, SQUARE, device),
                 "gemm_model": _gemm(tokens_per_stack, cfg.d_model, cfg.d_ffn, device)}
    sync = _synchronize(device)

    def step(name, b):
        fn, _ = variants[name]
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = fn(b)
        take_step(opts[name], loss)

    def timed(run):
        sync()
        t = _clock()
        run()
        sync()
        return _clock() - t

    times = {k: [] for k in [*variants, *gemms]}
    names = list(times)
    for r in range(warmup + rounds):
        i = r % len(batches)
        for name in (names if r % 2 == 0 else names[::-1]):
            t = timed(gemms[name][0] if name in gemms else lambda: step(name, batches[i]))
            if r >= warmup:
                times[name].append((t, i))
    flops = {}  # (variant, batch index) → FLOPs of a step on it
    for name in ("tfx", "torch"):
        for i, b in enumerate(batches):
            with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
                flops[name, i] = step_flops(lambda: variants[name][0](b))
    out = {"placement": placement, "size": size, "device": peak_flops(device)[0], "amp": amp,
           "threads": torch.get_num_threads(), "config": cfg.to_dict(),
           "tokens_per_step": statistics.mean(_tokens(b) for b in batches)}
    for name, (_, f) in gemms.items():
        out[name] = statistics.median(f / t for t, _ in times[name])
    out["peak"] = max(out[k] for k in gemms) if gemms else peak_flops(device)[1]
    for name in variants:
        key = name.replace(" ", "_")
        f = {"tfx compiled": "tfx", "tfx loss only": "tfx"}.get(name, name)  # the same model FLOPs
        out[f"{key}_ms"] = 1e3 * statistics.median(t for t, _ in times[name])
        out[f"{key}_tok_s"] = statistics.median(_tokens(batches[i]) / t for t, i in times[name])
        out[f"{key}_flops"] = statistics.mean(flops[f, i] for i in range(len(batches)))
        out[f"{key}_flop_s"] = statistics.median(flops[f, i] / t for t, i in times[name])
        out[f"{key}_util"] = out[f"{key}_flop_s"] / out["peak"]
    out["ratio"] = out["torch_ms"] / out["tfx_ms"]
    out["ratio_loss_only"] = out["torch_ms"] / out["tfx_loss_only_ms"]  # torch's reference computes the loss only
    if compile:
        out["compiled_speedup"] = out["tfx_ms"] / out["tfx_compiled_ms"]
        out["compiled_ratio"] = out["torch_ms"] / out["tfx_compiled_ms"]
    return out


def _tokens(b: Batch) -> int:
    """Input positions of a step: source and decoder input, PAD included."""
    return b.tgt[:, :-1].numel() + (0 if b.src is None else b.src.numel())


class _OpTimes(TorchDispatchMode):
    """Each aten op's time on ``_clock`` (the process's CPU time with --cpu-time, which a
    shared CPU does not inflate as it does torch.profiler's wall clock), summed by op. The
    dispatch through Python adds a few µs to each op: the many tiny ones (views) read high."""

    def __init__(self):
        super().__init__()
        self.total, self.calls = collections.Counter(), collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        t = _clock()
        out = func(*args, **(kwargs or {}))
        name = str(func.overloadpacket)
        self.total[name] += _clock() - t
        self.calls[name] += 1
        return out


def profile(placement: str = "post", size: str = "lm", steps: int = 10, warmup: int = 3, cpu_time: bool = False,
            rows: int = 15, **custom) -> str:
    """The top ops of ``steps`` tfx training steps (CPU) as a table: torch.profiler's by self
    CPU time, or with ``cpu_time`` each op's process CPU time (:class:`_OpTimes`)."""
    cfg, batches = custom_setup(placement, **custom) if size == "custom" else book_setup(size, placement)
    model = build_model(cfg)
    opt = make_optimizer(model.parameters(), TrainConfig(lr=1e-4), torch.device("cpu"))

    loss = _loss(model.loss_and_accuracy)

    def step(i):
        take_step(opt, loss(batches[i % len(batches)]))

    for i in range(warmup):
        step(i)
    if not cpu_time:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for i in range(steps):
                step(i)
        return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)
    t = _clock()
    for i in range(steps):
        step(i)
    per_step = (_clock() - t) / steps
    with _OpTimes() as ops:
        for i in range(steps):
            step(i)
    lines = [f"  {'op (process CPU time)':58s} {'ms/step':>8s} {'share':>6s} {'calls':>6s}"]
    for name, total in ops.total.most_common(rows):
        lines.append(f"  {name:58s} {1e3 * total / steps:8.2f} {100 * total / steps / per_step:5.1f}% "
                     f"{ops.calls[name] // steps:6d}")
    return "\n".join(lines + [f"  step: {1e3 * per_step:.1f} ms without the timer"])


def train_overhead(placement: str = "post", d_model: int = 128, n_heads: int = 4, layers: int = 3, batch: int = 32,
                   length: int = 32, vocab: int = 1000, steps: int = 30, warmup: int = 5, log_every: int = 10,
                   device: str | None = None, compile: bool = False, amp: str | None = None) -> dict:
    """Steps/s of ``tfx.train`` and of a bare loop (batch, forward, backward, optimiser step;
    same model, data, optimiser and precision). ``ratio`` = train steps/s ÷ bare steps/s.
    Each is timed as (``warmup + steps`` steps − ``warmup`` steps) so that set-up, compilation
    and the final evaluation cancel out."""
    device = pick_device(device)
    amp = default_amp(device, amp)
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
        dtype = autocast_dtype(amp)
        sync()
        t = _clock()
        for s in range(n):
            b = task.batch(s, batch).to(device)
            with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
                loss = fn(b.src, b.tgt, 0.0, b.src_padded, b.tgt_padded)[0]
            take_step(opt, loss)
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


def ensemble_throughput(size: str = "reverse", placement: str = "post", members: int = 8, steps: int = 6,
                        warmup: int = 2, device: str | None = None, amp: str | None = None, **custom) -> dict:
    """Runs per hour of ``members`` runs of one size (a book size, or ``custom``: the sizes of
    :func:`train_overhead`, on the reverse task) trained as one ensemble
    (:func:`tfx.runs.ensemble.train_ensemble`) against the same runs trained one after the
    other with ``tfx.train``, in ``amp`` (default: bf16 on CUDA, fp32 on a CPU). Members differ in seed and lr.
    Each is timed as (``warmup + steps`` steps − ``warmup`` steps), so set-up and the final
    evaluation cancel out. ``speedup`` = the singles' time ÷ the ensemble's: runs per
    core-hour gained; ``flop_s`` the aggregate model FLOP/s (members × one step's FLOPs ÷ time);
    on a GPU ``util`` divides the ensemble's by the dense bf16 peak (:func:`peak_flops`)."""
    from .ensemble import build_members, train_ensemble

    device = pick_device(device)
    amp = default_amp(device, amp)
    if size == "custom":
        length, vocab, layers = custom["length"], custom["vocab"], custom["layers"]
        task = SyntheticTask("reverse", vocab=vocab - 4, length=length - 1)
        cfg = ModelConfig.for_task(task, d_model=custom["d_model"], n_heads=custom["n_heads"],
                                   d_ffn=4 * custom["d_model"], n_enc=layers, n_dec=layers, placement=placement)
        batch_size = custom["batch"]
    else:
        task_name, model, batch_size = BOOK_SIZES[size]
        task = load_task(task_name)
        cfg = ModelConfig.for_task(task, placement=placement, **model)
    tc = TrainConfig(batch_size=batch_size, device=str(device), amp_dtype=amp, eval_batches=1, bleu_sentences=0,
                     log_every=10)
    cfgs = [tc.replace(seed=k, lr=1e-4 * (1 + k)) for k in range(members)]
    sync = _synchronize(device)

    def alone(n):
        models = build_members(cfg, task, cfgs)
        sync()
        t = _clock()
        for model, c in zip(models, cfgs):
            train(model, task, c.replace(steps=n))
        sync()
        return _clock() - t

    def together(n):
        models = build_members(cfg, task, cfgs)
        sync()
        t = _clock()
        train_ensemble(models, task, [c.replace(steps=n) for c in cfgs])
        sync()
        return _clock() - t

    per_step = {name: (fn(warmup + steps) - fn(warmup)) / steps for name, fn in (("alone", alone),
                                                                                  ("ensemble", together))}
    one = build_members(cfg, task, cfgs[:1])[0].to(device)
    flops = members * step_flops(lambda: _loss(one.loss_and_accuracy)(task.batch(0, batch_size).to(device)))
    peak = peak_flops(device)[1] if device.type == "cuda" else float("nan")
    return {"size": size, "placement": placement, "members": members, "device": str(device), "amp": amp,
            "threads": torch.get_num_threads(), "config": cfg.to_dict(), "batch_size": batch_size,
            "util": flops / per_step["ensemble"] / peak, "alone_util": flops / per_step["alone"] / peak,
            "alone_ms": 1e3 * per_step["alone"], "ensemble_ms": 1e3 * per_step["ensemble"],
            "alone_flop_s": flops / per_step["alone"], "ensemble_flop_s": flops / per_step["ensemble"],
            "speedup": per_step["alone"] / per_step["ensemble"]}


def _ensemble_line(r: dict) -> str:
    return (f"  ensemble of {r['members']} ({r['size']}, {r['placement']}, batch {r['batch_size']}): "
            f"{r['ensemble_ms']:.0f} ms a step for all, {r['ensemble_flop_s'] / 1e9:.3g} GFLOP/s; alone, one after "
            f"another: {r['alone_ms']:.0f} ms, {r['alone_flop_s'] / 1e9:.3g} GFLOP/s: {r['speedup']:.2f}× the runs "
            f"per core-hour" + ("" if r["util"] != r["util"] else
                                f"; {r['util']:.1%} of the dense bf16 peak (alone {r['alone_util']:.1%})"))


def ensemble_check(device=None, steps: int = 3) -> str:
    """Train two tiny ensembles of two members for ``steps`` steps on ``device`` (default: CUDA
    when present), in the precision a sweep would (bf16 autocast on CUDA): an encoder–decoder
    with dropout, and a decoder-only LM with probes, what the GPU plan ensembles. Returns a line
    saying so; raises what the ensemble raised. ``scripts/gpu_burst.sh`` runs it before a sweep
    with ``ENSEMBLE`` > 1 and trains runs alone when it fails, so a kernel that fails on a new
    device costs a burst seconds, not its runs."""
    from .ensemble import build_members, train_ensemble

    device = pick_device(device)
    runs = ((SyntheticTask("reverse", vocab=8, length=6), dict(n_enc=2, n_dec=2, dropout=0.1), {}),
            (load_task("libreoffice-en"), dict(n_enc=0, n_dec=2), dict(probes=True)))
    for task, model, extra in runs:
        cfg = ModelConfig.for_task(task, d_model=32, n_heads=4, d_ffn=64, **model)
        base = TrainConfig(steps=steps, batch_size=8, device=str(device), eval_batches=1, bleu_sentences=0,
                           log_every=1, **extra)
        cfgs = [base.replace(seed=0, lr=1e-3), base.replace(seed=1, lr=3e-3)]
        hists = train_ensemble(build_members(cfg, task, cfgs), task, cfgs)
    return (f"ensemble check on {device} ({hists[0].amp_dtype}): two ensembles of 2 (an encoder–decoder with "
            f"dropout, an LM with probes) trained {steps} steps")


def _describe(cfg: dict, r: dict) -> str:
    body = (f"{cfg['n_enc']}+{cfg['n_dec']} encoder–decoder" if cfg["n_enc"] else f"{cfg['n_dec']}-layer LM")
    return (f"{r['size']} ({body}, d {cfg['d_model']}, FFN {cfg['d_ffn']}, vocabulary {cfg['tgt_vocab']}; "
            f"{r['tokens_per_step']:.0f} tokens/step), {r['placement']}: {r['device']}, {r['amp']}, "
            f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}")


def _report(r: dict):
    cpu = r["device"] == "cpu"
    unit, scale = ("GFLOP/s", 1e9) if cpu else ("TFLOP/s", 1e12)
    print(f"\n{_describe(r['config'], r)}")
    if cpu:
        print(f"  fp32 GEMM: {SQUARE}² {r['gemm_square'] / 1e9:.0f} GFLOP/s, model's FFN matmul "
              f"{r['gemm_model'] / 1e9:.0f} GFLOP/s: peak {r['peak'] / 1e9:.0f} GFLOP/s (measured in these rounds)")
    else:
        peak = "unknown" if r["peak"] != r["peak"] else f"{r['peak'] / 1e12:.0f} TFLOP/s"
        print(f"  dense bf16 peak {peak}")
    print(f"  {'model':14s} {'ms/step':>8s} {'tok/s':>9s} {unit:>8s} {'util' if cpu else 'MFU':>6s}")
    for name in ("tfx", "tfx loss only", "tfx compiled", "torch"):
        k = name.replace(" ", "_")
        if f"{k}_ms" in r:
            util = "  n/a" if r[f"{k}_util"] != r[f"{k}_util"] else f"{100 * r[f'{k}_util']:5.1f}%"
            label = "torch.nn.Tr." if name == "torch" else name
            print(f"  {label:14s} {r[f'{k}_ms']:8.1f} {r[f'{k}_tok_s']:9.0f} {r[f'{k}_flop_s'] / scale:8.3g} {util:>6s}")
    line = (f"  tfx/torch speed ratio {r['ratio']:.2f} (tfx.train's step, accuracy and log Z recorded every step); "
            f"loss only {r['ratio_loss_only']:.2f}")
    if "compiled_speedup" in r:
        line += f"; compiled/eager {r['compiled_speedup']:.2f}×; compiled/torch {r['compiled_ratio']:.2f}"
    print(line)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="reverse,lm", help="comma-separated: reverse, lm (the book's), custom")
    ap.add_argument("--d-model", type=int, default=128, help="--size custom: model width (FFN 4×)")
    ap.add_argument("--heads", type=int, default=4, help="--size custom")
    ap.add_argument("--layers", type=int, default=3, help="--size custom: encoder layers = decoder layers")
    ap.add_argument("--batch", type=int, default=32, help="--size custom")
    ap.add_argument("--length", type=int, default=32, help="--size custom")
    ap.add_argument("--vocab", type=int, default=1000, help="--size custom")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=None, help="torch's intra-op threads (default: torch's own)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--amp", choices=("bf16", "fp32"), default=None,
                    help="default: bf16 on CUDA, fp32 on a CPU (fp16 needs the trainer's gradient scaler)")
    ap.add_argument("--placements", default="post,pre")
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="skip the compiled tfx variant")
    ap.add_argument("--train-steps", type=int, default=30,
                    help="--size custom: steps timed for tfx.train vs a bare loop (0: skip)")
    ap.add_argument("--log-every", type=int, default=10, help="tfx.train's log_every in that comparison")
    ap.add_argument("--profile", action="store_true", help="print the top ops of the tfx step (CPU)")
    ap.add_argument("--ensemble", type=int, default=0, metavar="K",
                    help="also time K runs of each size trained as one ensemble (tfx.runs.ensemble) against "
                         "the same K runs one after another (default 0: skip)")
    ap.add_argument("--ensemble-steps", type=int, default=6, help="steps timed in that comparison")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the process's CPU time, not the wall clock (a CPU shared with other work, "
                         "--threads 1)")
    ap.add_argument("--ensemble-check", action="store_true",
                    help="only train two tiny ensembles a few steps on this device (ensemble_check) and say so")
    a = ap.parse_args(argv)
    if a.ensemble_check:
        print(ensemble_check(a.device))
        return []
    global _clock
    _clock = time.process_time if a.cpu_time else time.perf_counter
    if a.threads:
        torch.set_num_threads(a.threads)
    custom = dict(d_model=a.d_model, n_heads=a.heads, layers=a.layers, batch=a.batch, length=a.length, vocab=a.vocab)
    n = torch.get_num_threads()
    print(f"torch {torch.__version__}, {n} thread{'s' if n > 1 else ''}, {'CPU' if a.cpu_time else 'wall'} time")
    results = []
    for size in a.size.split(","):
        for p in a.placements.split(","):
            kw = custom if size == "custom" else {}
            r = bench(p, size, rounds=a.rounds, device=a.device, compile=a.compile, amp=a.amp, **kw)
            _report(r)
            if a.profile:
                print(profile(p, size, cpu_time=a.cpu_time, **kw))
            if a.train_steps and size == "custom":
                o = train_overhead(p, steps=a.train_steps, log_every=a.log_every, device=a.device, amp=a.amp,
                                   **custom)
                r["train"] = o
                print(f"  tfx.train {o['train_steps_s']:.2f} steps/s, bare loop {o['bare_steps_s']:.2f} steps/s: "
                      f"ratio {o['ratio']:.2f} (log_every {o['log_every']})")
            if a.ensemble:
                try:
                    e = ensemble_throughput(size, p, a.ensemble, steps=a.ensemble_steps, device=a.device,
                                            amp=a.amp, **(custom if size == "custom" else {}))
                except RuntimeError as err:  # say so and go on: the rest of the bench still runs
                    r["ensemble"] = {"error": str(err).splitlines()[0]}
                    print(f"  ensemble of {a.ensemble}: failed: {r['ensemble']['error']}")
                else:
                    r["ensemble"] = e
                    print(_ensemble_line(e))
            results.append(r)
    return results


if __name__ == "__main__":
    main()
