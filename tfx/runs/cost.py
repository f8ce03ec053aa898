"""What a planned run costs on one H100 before that GPU has timed it: the GPU half's budget.

A training step's seconds are the larger of two bounds:

* **the launch floor**: at the book's GPU sizes (width 512, a few thousand tokens a step) a
  step is bound by the number of kernels it launches, not by its arithmetic, so its time
  grows with the number of sub-layers (two per encoder or decoder-only layer, three per
  encoder–decoder decoder layer: self-attention, cross-attention, FFN) and hardly with the
  width or the batch: ``LAUNCH_BASE_S + LAUNCH_PER_SUBLAYER_S × sub-layers``;
* **the arithmetic**: :func:`flops_per_step` (forward and backward, attention included) ÷
  ``THROUGHPUT`` (FLOP/s), the rate a large bf16 step sustains; it takes over only for
  large models or batches.

The effective throughput at a model size is thus ``flops_per_step / step_seconds``: a few
tens of TFLOP/s for the book's models, far below the H100's peak. ``tfx.train`` adds its own
bookkeeping to a bare step (``TRAIN_OVERHEAD``; ``UPDATE_RECORD_OVERHEAD`` more with
``record_updates``, whose ‖Δθ‖ reads the optimiser state), a probed step (``probes``) counts
``PROBE_STEP`` steps, and each evaluation costs its held-out batches and, on translation,
the greedy decoding of BLEU (:func:`eval_step_equivalents`). ``JOBS_SLOWDOWN``: runs trained
side by side on one GPU each take longer than alone, but less than the number of them.

The constants are planning defaults from H100 timings of earlier ``tfx`` code (bf16 autocast,
fused Adam, eager; a 6+6 encoder–decoder of width 512 took ≈ 41 ms a bare step at 4,096 and
at 16,384 tokens, an 18+18 ≈ 96 ms; ``tfx.train`` ≈ 1.15× a bare loop without the update
record, ≈ 1.6× with it; eight runs at once ≈ 1.5–2× the wall time of one). They are a guess
until the GPU measures itself: ``python -m tfx.sweep … --budget-minutes M`` times a few steps
of every model size on the device (:func:`tfx.runs.sweep.measure_step_seconds`) and plans
with those; a number from this module is never shown as a measurement.
"""
from __future__ import annotations

import math

# The GPU half's experiments, in the order a burst runs them: the runs that settle a claim
# first (experiments/README.md says why; the Makefile's GPU_PLAN is this list).
GPU_PLAN = ("lr-sensitivity", "warmup-axis", "depth", "warmup", "warmup-fixes", "stability-map", "admin-profiling",
            "translation", "lm", "logits", "norms", "placements")
BUDGET_MINUTES = 27.0  # the whole GPU half, on one H100 (25 until lr-sensitivity took 1e-4 to bracket Post-LN)

LAUNCH_BASE_S = 0.0137  # per step: the optimiser, the embeddings and the loss
LAUNCH_PER_SUBLAYER_S = 0.00091  # per residual sub-layer, forward and backward
THROUGHPUT = 300e12  # FLOP/s a large bf16 training step sustains (≈ 30 % of the dense peak)
TRAIN_OVERHEAD = 1.15  # tfx.train's step against a bare loop's (record_updates off)
UPDATE_RECORD_OVERHEAD = 1.4  # a further factor with record_updates (the ‖Δθ‖ record)
PROBE_STEP = 2.0  # a probed (logged) step, eager and hooked, in steps
EVAL_BATCH_STEP = 0.35  # one held-out batch (forward only), in steps
RUN_SECONDS = 3.0  # per run: building the model (Admin's profiling pass), the record
BENCH_SECONDS = 90.0  # python -m tfx.bench at the GPU target size, once
BURST_SECONDS = 60.0  # per burst: install, start, the step-time measurement, the workers' start
BURST_MINUTES = 9.0  # a burst: one command of at most 10 minutes on a lent GPU
DEFAULT_JOBS = 8  # runs at once on one GPU (the GPU is launch-bound: it has room for more)


def jobs_slowdown(jobs: int) -> float:
    """How much longer each of ``jobs`` runs trained side by side on one GPU takes than alone
    (1 for one; 1.75 for eight, the middle of 1.5–2×)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r} must be an integer ≥ 1")
    return 1.0 + 0.75 * (jobs - 1) / 7


def sublayers(model: dict) -> int:
    """Residual sub-layers of a model (ModelConfig fields ``n_enc``, ``n_dec``)."""
    n_enc, n_dec = _int(model, "n_enc"), _int(model, "n_dec")
    return 2 * n_enc + (3 if n_enc else 2) * n_dec


def flops_per_step(model: dict, batch: int, src_len: int, tgt_len: int, vocab: int) -> float:
    """FLOPs of one training step (forward and backward: three times the forward's matrix
    products; attention 3.5 times) of an encoder–decoder (``n_enc`` > 0) or a decoder-only
    model (``n_enc`` = 0; ``src_len`` unused) on ``batch`` sequences."""
    d, ffn = _int(model, "d_model"), _int(model, "d_ffn")
    n_enc, n_dec = _int(model, "n_enc"), _int(model, "n_dec")
    for name, v in (("batch", batch), ("tgt_len", tgt_len), ("vocab", vocab)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be an integer ≥ 1")
    enc, dec = batch * src_len * (n_enc > 0), batch * tgt_len
    per_layer = 4 * d * d + 2 * d * ffn  # q, k, v, out; the FFN's two matrices
    linear = 2 * enc * n_enc * per_layer + 2 * dec * n_dec * per_layer + 2 * dec * d * vocab
    attention = n_enc * 4 * batch * src_len ** 2 * d + n_dec * 4 * batch * tgt_len ** 2 * d
    if n_enc:  # cross-attention: q and out on the decoder, k and v on the memory
        linear += n_dec * 2 * (dec + enc) * 2 * d * d
        attention += n_dec * 4 * batch * tgt_len * src_len * d
    return 3.0 * linear + 3.5 * attention


def bare_step_seconds(model: dict, batch: int, src_len: int, tgt_len: int, vocab: int) -> float:
    """A bare training step's seconds on one H100: the launch floor or the arithmetic,
    whichever is longer."""
    floor = LAUNCH_BASE_S + LAUNCH_PER_SUBLAYER_S * sublayers(model)
    return max(floor, flops_per_step(model, batch, src_len, tgt_len, vocab) / THROUGHPUT)


def step_seconds(model: dict, train, batch: int, src_len: int, tgt_len: int, vocab: int) -> float:
    """A ``tfx.train`` step's seconds on one H100 (``train``: the TrainConfig)."""
    s = bare_step_seconds(model, batch, src_len, tgt_len, vocab) * TRAIN_OVERHEAD
    return s * (UPDATE_RECORD_OVERHEAD if train.record_updates else 1.0)


def eval_step_equivalents(model: dict, train, tgt_len: int, translation: bool) -> float:
    """What the run's evaluations and probed steps cost, in training steps: each evaluation
    (every ``eval_every`` steps and at the end) runs ``eval_batches`` held-out batches and, on a
    translation task with ``bleu_sentences``, a greedy decoding of up to ``tgt_len`` positions,
    each a forward pass of the decoder; a probed step (every ``log_every`` with ``probes``)
    costs ``PROBE_STEP`` steps in place of one."""
    steps = train.steps
    evals = 1 + ((steps - 1) // train.eval_every if train.eval_every else 0)
    per_eval = EVAL_BATCH_STEP * train.eval_batches
    if translation and train.bleu_sentences and _int(model, "n_enc"):
        share = 3 * _int(model, "n_dec") / max(sublayers(model), 1)  # the decoder's part of a step
        per_eval += tgt_len * share / 3  # each position: a forward pass (a third of a step) of the decoder
    probed = (steps // train.log_every) * (PROBE_STEP - 1) if train.probes else 0.0
    return evals * per_eval + probed


def run_seconds(steps: int, step_s: float, extra_steps: float, jobs: int = 1) -> float:
    """A run's expected wall time: its steps (10 % more for the host's reading back and
    checkpoints) and ``extra_steps`` (evaluations, probes) at ``step_s`` seconds a step, plus
    ``RUN_SECONDS``; × :func:`jobs_slowdown` when ``jobs`` run at once."""
    return jobs_slowdown(jobs) * (step_s * (1.1 * steps + extra_steps) + RUN_SECONDS)


def bursts(minutes: float) -> int:
    """Bursts of ``BURST_MINUTES`` the plan's runs need (at least one)."""
    return max(1, math.ceil(minutes / BURST_MINUTES))


def _int(model: dict, name: str) -> int:
    from ..nn.config import ModelConfig

    v = model.get(name, getattr(ModelConfig, name, None))
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"model field {name}={v!r} must be an integer ≥ 0")
    return v
