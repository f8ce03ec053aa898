"""What a planned run costs on one H100 or H200 before that GPU has timed it: the GPU half's budget.

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
tens of TFLOP/s for the book's models, far below the GPU's peak. ``tfx.train`` adds its own
bookkeeping to a bare step (``TRAIN_OVERHEAD``; ``UPDATE_RECORD_OVERHEAD`` more with
``record_updates``, whose ‖Δθ‖ reads the optimiser state), a probed step (``probes``) counts
``PROBE_STEP`` steps, and each evaluation costs its held-out batches and, on translation,
the greedy decoding of BLEU (:func:`eval_step_equivalents`). Runs trained side by side on one
GPU each take longer than alone (:func:`jobs_slowdown`), and a sweep runs each experiment's
runs in order on ``jobs`` workers (:func:`makespan`), with a start of its own
(:func:`sweep_seconds`).

Where each constant comes from:

* **H100 timings of earlier ``tfx`` code** (bf16 autocast, fused Adam, eager), not refitted:
  ``LAUNCH_BASE_S``, ``LAUNCH_PER_SUBLAYER_S`` (a bare step of a 6+6 encoder–decoder of width
  512 ≈ 41 ms at 4,096 and at 16,384 tokens, an 18+18 ≈ 96 ms), ``THROUGHPUT``,
  ``TRAIN_OVERHEAD`` (≈ 1.15× a bare loop), ``UPDATE_RECORD_OVERHEAD``, ``PROBE_STEP``,
  ``EVAL_BATCH_STEP``, ``RUN_SECONDS``. The H200 (``results/gpu-bench.txt``: a 6+6 of width
  512, one run alone: 41–48 ms a step, ``tfx.train`` 47 ms) runs these launch-bound steps
  as fast as the H100 model says (41 ms bare, 47 ms in ``tfx.train``): both are the GH100
  chip, and the H200's larger, faster memory does not shorten a launch-bound step, so the
  H100/H200 conversion is 1 and the same constants serve both.
* **Fitted on the first two H200 bursts** (``results/gpu-bursts/2026-11-27T2308Z.log`` and
  ``…T2317Z.log``, 8 jobs, and the 110 records they made: ``results`` of ``lr-sensitivity``
  and ``warmup-axis``, profile full; :mod:`tfx.runs.calibrate` holds the rule and
  ``tests/runs/test_cost_calibration.py`` refits it and checks these values):

  - ``SLOWDOWN_AT_8_JOBS``: the geometric mean, over the 110 records, of the record's
    ``wall_time`` ÷ the run alone by this model (its ``steps_done``, not its planned steps:
    a diverged run stops early) — least squares on the log ratios, both bursts;
  - ``POOL_SECONDS``: a worker pool's start (8 spawned processes importing torch and loading
    the task), from the one change of experiment in a burst (the T2317Z burst: the last
    ``lr-sensitivity`` record to the first ``warmup-axis`` run's start);
  - ``SWEEP_SECONDS``: the sweep's own start and end (its plan, the device's step-time
    measurement, packing the records): per burst, the log's sweep start to its first run's
    start, less one ``POOL_SECONDS``, plus its last record to the log's end; the mean of
    the two bursts;
  - ``INSTALL_SECONDS``: the mean of the two logs' "tfx-book installed … (N s)";
  - ``BENCH_SECONDS``: the bench's seconds in the T2308Z log (its start to "bench exit").

  Every run they timed is one model size (a 6+6 encoder–decoder of width 512, batch 64):
  the logs cannot refit the launch floor's split into base and per-sub-layer, nor the
  arithmetic bound, which these runs never reach; those stay the H100 timings above.

A number from this module is never shown as a measurement: ``python -m tfx.sweep …
--budget-minutes M`` times a few steps of every model size on the device
(:func:`tfx.runs.sweep.measure_step_seconds`) and plans with those.
"""
from __future__ import annotations

import heapq
import math

# The GPU half's experiments, in the order a burst runs them (experiments/README.md says why; the
# Makefile's GPU_PLAN is this list). First the core: AD-3's failure half in the paper's regime
# (ad3-deep's full profile: 6+6 and 18+18, d 512, 2,000 steps, BLEU). Then the rest, the runs
# that settle a claim first; a shortfall cuts the rest from its end.
GPU_CORE = ("ad3-deep",)
GPU_PLAN = GPU_CORE + ("lr-sensitivity", "warmup-axis", "depth", "depth-rates", "warmup", "warmup-fixes", "stability-map",
                       "admin-profiling", "translation", "lm", "logits", "norms", "placements")
CORE_BUDGET_MINUTES = 25.0  # the core, on one H100 (issue 42)
# the rest (25; 27 with lr-sensitivity's 1e-4 column; 28 with 3e-5; 38 with depth-rates at 18+18;
# 40 with lm's 1e-4 and 3e-4)
REST_BUDGET_MINUTES = 40.0

LAUNCH_BASE_S = 0.0137  # per step: the optimiser, the embeddings and the loss
LAUNCH_PER_SUBLAYER_S = 0.00091  # per residual sub-layer, forward and backward
THROUGHPUT = 300e12  # FLOP/s a large bf16 training step sustains (≈ 30 % of the dense peak)
TRAIN_OVERHEAD = 1.15  # tfx.train's step against a bare loop's (record_updates off)
UPDATE_RECORD_OVERHEAD = 1.4  # a further factor with record_updates (the ‖Δθ‖ record)
PROBE_STEP = 2.0  # a probed (logged) step, eager and hooked, in steps
EVAL_BATCH_STEP = 0.35  # one held-out batch (forward only), in steps
RUN_SECONDS = 3.0  # per run: building the model (Admin's profiling pass), the record
SLOWDOWN_AT_8_JOBS = 1.52  # fitted: each of 8 runs side by side on one H200 against one alone (was 1.75, a guess)
POOL_SECONDS = 12.0  # fitted: per experiment with runs to do, its worker pool's start
SWEEP_SECONDS = 54.0  # fitted: per burst's sweep, its plan and step-time measurement, and its end (was in BURST_SECONDS)
INSTALL_SECONDS = 19.0  # fitted: per burst, installing tfx-book from the carried tree
BENCH_SECONDS = 179.0  # fitted: python -m tfx.bench at the GPU target size, once (was 90, a guess)
BURST_SECONDS = INSTALL_SECONDS + SWEEP_SECONDS  # per burst, besides its runs (was 60, a guess)
BURST_MINUTES = 9.0  # a burst: one command of at most 10 minutes on a lent GPU
DEFAULT_JOBS = 8  # runs at once on one GPU (the GPU is launch-bound: it has room for more)


def jobs_slowdown(jobs: int) -> float:
    """How much longer each of ``jobs`` runs trained side by side on one GPU takes than alone:
    1 for one, ``SLOWDOWN_AT_8_JOBS`` for eight (measured), linear between and beyond (a
    guess: only eight at once has been timed)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r} must be an integer ≥ 1")
    return 1.0 + (SLOWDOWN_AT_8_JOBS - 1.0) * (jobs - 1) / 7


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
    """A bare training step's seconds on one H100 or H200, alone: the launch floor or the arithmetic,
    whichever is longer."""
    floor = LAUNCH_BASE_S + LAUNCH_PER_SUBLAYER_S * sublayers(model)
    return max(floor, flops_per_step(model, batch, src_len, tgt_len, vocab) / THROUGHPUT)


def step_seconds(model: dict, train, batch: int, src_len: int, tgt_len: int, vocab: int) -> float:
    """A ``tfx.train`` step's seconds on one H100 or H200, alone (``train``: the TrainConfig)."""
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


def makespan(seconds, jobs: int) -> float:
    """Seconds until the last of runs taking ``seconds`` ends, when they start in order, each on
    the first of ``jobs`` workers to come free (what a sweep's pool does with one experiment):
    more than ``sum(seconds) / jobs`` when the last wave is not full."""
    jobs_slowdown(jobs)  # checks jobs
    free = [0.0] * min(jobs, len(seconds))
    for s in seconds:
        heapq.heapreplace(free, free[0] + s)
    return max(free, default=0.0)


def experiment_seconds(seconds, jobs: int) -> float:
    """An experiment's part of a sweep: its runs (their :func:`run_seconds`, in order) on
    ``jobs`` workers, after ``POOL_SECONDS`` to start them; 0 with no run to do."""
    return POOL_SECONDS + makespan(seconds, jobs) if len(seconds) else 0.0


def sweep_seconds(experiments, jobs: int) -> float:
    """A budgeted sweep's wall time (``python -m tfx.sweep … --budget-minutes``, as a burst runs
    it): ``SWEEP_SECONDS`` and each experiment's :func:`experiment_seconds`; ``experiments``:
    per experiment, the run seconds of its runs to do, in order."""
    return SWEEP_SECONDS + sum(experiment_seconds(s, jobs) for s in experiments)


def bursts(minutes: float) -> int:
    """Bursts of ``BURST_MINUTES`` the plan's runs need (at least one)."""
    return max(1, math.ceil(minutes / BURST_MINUTES))


def _int(model: dict, name: str) -> int:
    from ..nn.config import ModelConfig

    v = model.get(name, getattr(ModelConfig, name, None))
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"model field {name}={v!r} must be an integer ≥ 0")
    return v


# ---------------------------------------------------------------------- the CPU half: hours from recorded runs
# What a CPU step's time depends on: the task's shapes, the model's sizes and the batch. A CPU
# step at the book's sizes (d 64, a few hundred tokens) is bound by neither launches nor a
# large-batch throughput that a formula could give, so the CPU plan reads it off the records.
CPU_SIZE_FIELDS = ("d_model", "n_heads", "d_ffn", "n_enc", "n_dec")


def cpu_size(task: str, model: dict, batch_size: int) -> tuple:
    """A run's CPU size: ``(task, d_model, n_heads, d_ffn, n_enc, n_dec, batch_size)``; a noisy
    task is its clean one (the noise changes the targets, not the shapes)."""
    from .data import NOISY_TASKS

    return (NOISY_TASKS.get(task, (task,))[0], *(_int(model, k) for k in CPU_SIZE_FIELDS), batch_size)


def size_text(size: tuple) -> str:
    """'6+6, d 64' (an encoder–decoder) or '8-layer LM, d 64' for a :func:`cpu_size`."""
    _, d, _, _, n_enc, n_dec, _ = size
    return f"{n_enc}+{n_dec}, d {d}" if n_enc else f"{n_dec}-layer LM, d {d}"


def cpu_step_seconds(records) -> dict:
    """``{cpu_size: median seconds a step}`` over ``records`` (Records of any experiments of one
    profile, trained one thread each): each record's ``wall_time`` over the steps it took
    (``steps_done``: a diverged run stops early), its evaluations and model building included.
    The median, not the least: background sweeps share the machine, and so will the next."""
    import statistics

    per: dict = {}
    for r in records:
        done = getattr(r.history, "steps_done", 0) or 0
        if done > 0 and r.wall_time and r.wall_time > 0:
            key = cpu_size(r.task, r.config.to_dict(), r.train_config.batch_size)
            per.setdefault(key, []).append(r.wall_time / done)
    return {k: statistics.median(v) for k, v in per.items()}


def cpu_seconds_a_step(size: tuple, step_seconds: dict) -> tuple[float, tuple] | None:
    """``(seconds a step, the recorded size it comes from)`` for ``size``: its own recorded
    median, else the nearest recorded size of the same task and batch (in sub-layers × d²)
    scaled by their ratio of sub-layers × d² (a step's matrix work at a fixed number of tokens;
    at the book's sizes this overstates: a 6+6 step costs ≈ 2× a 2+2's, not 3×, and width 128
    ≈ 2.5× width 64's, not 4×); None where no recorded size shares the task and batch."""
    if size in step_seconds:
        return step_seconds[size], size

    def work(s):
        return sublayers({"n_enc": s[4], "n_dec": s[5]}) * s[1] ** 2

    near = [s for s in step_seconds if s[0] == size[0] and s[-1] == size[-1] and work(s) > 0]
    if not near or work(size) <= 0:
        return None
    src = min(near, key=lambda s: (s[1] != size[1], abs(math.log(work(size) / work(s)))))
    return step_seconds[src] * work(size) / work(src), src
