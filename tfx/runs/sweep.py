"""Run many training runs and record every one: in a notebook, or as a sweep that survives a night.

In process (a chapter's small grid):

    configs = {"Post-LN": ModelConfig.for_task(task, placement="post"),
               "Pre-LN": ModelConfig.for_task(task, placement="pre")}
    records = run_grid(configs, task, TrainConfig(steps=200, lr=1e-3), seeds=2)
    by_label(records)["Pre-LN"][0].outcome             # learned / did not learn / diverged

From an experiment file (``experiments/NAME.toml``, see :mod:`tfx.runs.experiment`), each
finished run appended to ``results/NAME.PROFILE.jsonl`` (see :mod:`tfx.runs.results`):

    python -m tfx.sweep experiments/warmup --profile book --jobs 8
    python -m tfx.sweep experiments/warmup --shard $SLURM_ARRAY_TASK_ID/16   # one job of 16
    python -m tfx.sweep experiments/warmup --executor ray --ray-address auto --gpus-per-task 0.25

A rerun skips the runs already recorded (same experiment, profile, label, configs, seed,
task and :func:`code_hash` of the training code: a commit elsewhere keeps them) and resumes an interrupted run from its checkpoint, so after a
``kill -9`` the rerun's records equal an uninterrupted sweep's. ``--jobs N`` trains N runs
at once in separate processes; ``--shard I/N`` (0 ≤ I < N) keeps every N-th run, for a
scheduler's array job, each shard writing its own file that :func:`tfx.runs.results.load` merges.
``--executor ray`` trains the runs as Ray tasks on a Ray cluster (:func:`ray_executor`, the
optional extra ``tfx-book[ray]``); this process still claims and records every run.

Each record says what ran, where and with which code (device, AMP dtype, code version),
how long it took and how it ended (status, reason and the full History), so a chapter's
figures and verdicts can be read from the records alone and a reader can rerun any of them.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import math
import os
import sys
import time
import traceback
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, NamedTuple

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None

from ..nn.config import ModelConfig, TrainConfig, torch_dtype
from . import lineage, outcome, results
from .codeversion import code_hash, code_version  # noqa: F401 (tfx.runs.sweep.code_version: what a record says)
from .results import Record
from .train import CheckpointError, History, build_for_run, train  # noqa: F401 (build_for_run: also from here)

def run_one(label: str, config: ModelConfig, task, train_cfg: TrainConfig, seed: int = 0,
            init_batch_size: int | None = None, checkpoint_path: str | None = None,
            checkpoint_every: int = 0) -> Record:
    """Build ``config`` with initial weights from ``seed``, train it on ``task`` with
    ``train_cfg`` (its ``seed`` replaced by ``seed``) and return the Record.

    Initialisers that look at data (Admin's profiling pass) get ``task.batch(0, …)``
    of ``init_batch_size`` sequences (default: the training batch size).
    ``checkpoint_path``: save there every ``checkpoint_every`` steps and, if the file
    exists, continue from it (``tfx.train(..., resume=True)``); where checkpoints go is
    bookkeeping, not part of what ran, so the Record's configs leave it out.
    """
    tc = train_cfg.replace(seed=seed)
    t0 = time.perf_counter()
    model = build_for_run(config, task, tc, init_batch_size)
    build_time = time.perf_counter() - t0
    if checkpoint_path:
        hist = train(model, task, tc.replace(checkpoint_path=str(checkpoint_path),
                                             checkpoint_every=checkpoint_every), resume=True)
        hist.train_config = json.loads(json.dumps(tc.to_dict()))
    else:
        hist = train(model, task, tc)
    return _record(label, config, task, tc, hist, build_time + hist.wall_time)  # training time summed over restarts


def run_ensemble(labels, configs, task, train_cfgs, seeds, init_batch_size: int | None = None) -> list[Record]:
    """:func:`run_one` for K runs of one architecture trained together as one program
    (:func:`tfx.runs.ensemble.train_ensemble`): member k is ``labels[k]``, ``configs[k]``,
    ``train_cfgs[k]`` with seed ``seeds[k]``; returns their Records, each saying
    ``ensemble = {"members": K, "index": k}``, its wall time the ensemble's / K. Raises
    :class:`tfx.runs.ensemble.EnsembleError`, naming the field, for runs that cannot be one."""
    from .ensemble import build_members, train_ensemble

    tcs = [tc.replace(seed=seed) for tc, seed in zip(train_cfgs, seeds)]
    t0 = time.perf_counter()
    models = build_members(list(configs), task, tcs, init_batch_size)
    build_time = (time.perf_counter() - t0) / len(models)
    hists = train_ensemble(models, task, tcs)
    recs = [_record(label, config, task, tc, hist, build_time + hist.wall_time)
            for label, config, tc, hist in zip(labels, configs, tcs, hists)]
    for k, rec in enumerate(recs):
        rec.ensemble = {"members": len(recs), "index": k}
    return recs


def _record(label, config, task, tc, hist, wall_time) -> Record:
    return Record(label=label, config=config, train_config=tc, seed=tc.seed, code_version=code_version(),
                  device=hist.device, wall_time=wall_time,
                  status=hist.status, history=hist, reason=getattr(hist, "reason", ""),
                  task=getattr(hist, "task", "") or getattr(task, "name", ""),
                  amp_dtype=_amp_dtype(hist), bleu=_bleu(hist), device_name=_device_name(hist.device),
                  finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def _device_name(device: str) -> str:
    """A Record's ``device_name``: the GPU's own name ('NVIDIA H200') where the run was on CUDA,
    so a GPU result says which card made it; '' on a CPU."""
    if not str(device).startswith("cuda"):
        return ""
    import torch

    return torch.cuda.get_device_name(torch.device(device))


def _bleu(hist) -> float | None:
    """The run's last BLEU, where its History measured one (one per evaluation)."""
    return hist.bleu[-1] if hist.bleu else None


def _amp_dtype(hist) -> str:
    """A Record's ``amp_dtype``: torch's name ('bfloat16', 'float32') of the precision the
    History ran in (``History.amp_dtype``, a name of tfx.nn.config.AMP_DTYPES)."""
    return str(torch_dtype(hist.amp_dtype)).removeprefix("torch.")


def run_grid(configs: dict, task, train_cfg: TrainConfig, seeds=1, progress: bool = False) -> list[Record]:
    """Train every ``{label: ModelConfig}`` once per seed; returns the Records in order
    (labels outer, seeds inner).

    ``seeds``: a number n (seeds 0 … n−1) or an explicit list of seeds.
    ``train_cfg`` may also be a dict ``{label: TrainConfig}`` (e.g. one run with warmup).
    A run that fails to train does not stop the grid: its status says so.
    """
    if not configs:
        raise ValueError("configs is empty: give at least one {label: ModelConfig}")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise ValueError(f"seeds={seeds!r}: need at least one seed")
    for label, cfg in configs.items():
        if not isinstance(cfg, ModelConfig):
            raise ValueError(f"configs[{label!r}] is a {type(cfg).__name__}, not a ModelConfig")
    if isinstance(train_cfg, dict):
        missing = [k for k in configs if k not in train_cfg]
        if missing:
            raise ValueError(f"train_cfg has no TrainConfig for {', '.join(map(repr, missing))}")
    records = []
    for label, cfg in configs.items():
        tc = train_cfg[label] if isinstance(train_cfg, dict) else train_cfg
        for seed in seed_list:
            rec = run_one(label, cfg, task, tc, seed)
            if progress:
                print(f"{label} seed {seed}: {rec.status}, final loss {rec.final_loss:.3f} "
                      f"({rec.wall_time:.1f} s)", flush=True)
            records.append(rec)
    return records


def by_label(records) -> dict:
    """``{label: [Record, …]}`` in the order the labels first appear."""
    out: dict = {}
    for r in records:
        out.setdefault(r.label, []).append(r)
    return out


def histories(records, seed: int | None = None) -> dict:
    """``{label: History}`` for ``tfx.book.plot.loss_curves``: the run with ``seed``
    (default: each label's first run)."""
    out = {}
    for label, recs in by_label(records).items():
        pick = recs if seed is None else [r for r in recs if r.seed == seed]
        if pick:
            out[label] = pick[0].history
    return out


def summary(records) -> dict:
    """Per label, :func:`tfx.runs.outcome.summarize` of its runs (``verdicts``, held-out
    ``losses``, ``counts`` per outcome, ``n``, ``median`` / ``low`` / ``high`` held-out loss,
    ``median_excess``) with ``describe`` (one line of it), ``final_losses`` (training) and
    ``wall_time``."""
    out = {}
    for label, recs in by_label(records).items():
        out[label] = outcome.summarize(recs) | {
            "describe": outcome.describe(recs),
            "final_losses": [r.final_loss for r in recs],
            "wall_time": sum(r.wall_time for r in recs),
        }
    return out


def steps_to_loss(history: History, level: float, smooth: int = 5):
    """The first step at which the ``smooth``-step moving average of the training loss
    is below ``level`` (None if it never is): how fast a run learns."""
    loss = history.loss
    for i in range(smooth - 1, len(loss)):
        window = loss[i - smooth + 1:i + 1]
        if all(math.isfinite(v) for v in window) and sum(window) / smooth < level:
            return history.step[i]
    return None


def first_step_below(steps, values, level):
    """The first of ``steps`` whose value is ≤ ``level`` (None if none is): e.g. a run's
    ``history.eval_step`` and ``history.eval_loss``, for the steps to a target validation loss."""
    for s, v in zip(steps, values):
        if math.isfinite(v) and v <= level:
            return s
    return None


# ---------------------------------------------------------------------- sweeps from experiment files
def run_key(experiment: str, profile: str, task: str, run, version: str | None = None) -> str:
    """A run's identity as a hash: experiment, profile, task, label, model fields, TrainConfig
    and seed; with ``version`` (the code version) the key a rerun looks for."""
    what = {"experiment": experiment, "profile": profile, "task": task, "label": run.label,
            "model": run.model, "train": run.train.to_dict(), "seed": run.seed}
    if version is not None:
        what["code_version"] = version
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:20]


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` → (I, N) with 0 ≤ I < N (SLURM's ``$SLURM_ARRAY_TASK_ID/N`` with ``--array=0-(N-1)``)."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ValueError(f"shard={text!r} must be I/N with integers 0 ≤ I < N, e.g. 0/4") from None
    if not 0 <= i < n:
        raise ValueError(f"shard={text!r} must be I/N with 0 ≤ I < N, e.g. 0/4 … 3/4")
    return i, n


_TASKS: dict = {}  # per process: a worker loads each task once

# A fixture run goes through the whole pipeline of its profile (task, configs, trainer,
# records) at a size a CPU trains in a second: a stand-in that lets the chapters' GPU
# cells be tested before GPU results exist. Its record says fixture=True, and
# results.provenance labels it; it is never shipped or shown as a result.
FIXTURE_MODEL = {"d_model": 16, "n_heads": 2, "d_ffn": 32}
FIXTURE_TRAIN = {"steps": 6, "batch_size": 4, "eval_every": 3, "eval_batches": 1, "log_every": 1,
                 "bleu_sentences": 4, "max_tokens": None, "compile": False}


def fixture_run(run):
    """``run`` shrunk to a fixture: tiny widths and 6 steps; placement, initialiser, depth,
    optimiser and seed kept."""
    import dataclasses

    tc = run.train.replace(**FIXTURE_TRAIN, warmup=min(run.train.warmup, 2),
                           checkpoint_every=0, device="cpu", amp=False)
    return dataclasses.replace(run, model={**run.model, **FIXTURE_MODEL}, train=tc)


# The fields a step's time depends on (tfx.runs.cost): runs that share them share one
# measured step time, whatever their placement, initialiser or learning rate.
_COST_MODEL_FIELDS = ("d_model", "n_heads", "d_ffn", "n_enc", "n_dec")
_COST_TRAIN_FIELDS = ("batch_size", "max_tokens", "amp", "amp_dtype", "compile", "record_updates", "probes")


def _size_key(job) -> str:
    """Runs that cost the same per step: the same task, sizes, batch, precision and records."""
    run = job["run"]
    model = {k: run.model.get(k, getattr(ModelConfig, k)) for k in _COST_MODEL_FIELDS}
    train = {k: getattr(run.train, k) for k in _COST_TRAIN_FIELDS}
    return json.dumps([job["task"], model, train], sort_keys=True, default=str)


def measure_step_seconds(job, steps: int = 8) -> float:
    """Seconds per training step of ``job``'s model size on this device, from three short
    runs: a 2-step run thrown away (the first run in a process pays for starting the device:
    the CUDA context, kernel selection, the allocator's first blocks), then a 2-step and a
    (2 + ``steps``)-step run, whose difference is ``steps`` steady steps (the first steps and
    the final evaluation cancel). Where noise makes that difference not positive, the longer
    run's time per step (which overstates, never understates, a step)."""
    task, run = _task(job), job["run"]
    cfg = ModelConfig.for_task(task, **run.model)
    times = []
    for n in (2, 2, 2 + steps):
        tc = run.train.replace(steps=n, eval_every=0, eval_batches=1, checkpoint_every=0, checkpoint_path=None,
                               diagnose=False, progress=False)
        model = build_for_run(cfg, task, tc)
        t0 = time.perf_counter()
        train(model, task, tc)
        times.append(time.perf_counter() - t0)
    _, short, long = times
    return (long - short) / steps if long > short else long / (2 + steps)


def modelled_step_seconds(job) -> float:
    """Seconds per training step of ``job`` on one H100 from :mod:`tfx.runs.cost` (FLOPs and
    the launch floor at the task's batch shapes): the plan's default until the GPU measures."""
    from . import cost

    task, run = _task(job), job["run"]
    shapes = _batch_shapes(task, run.train.batch_size)
    return cost.step_seconds(run.model, run.train, run.train.batch_size, *shapes)


def _batch_shapes(task, batch_size: int) -> tuple[int, int, int]:
    """(source length, target length, vocabulary) of ``task``'s first training batch."""
    b = task.batch(0, batch_size)
    src_len = b.src.shape[1] if getattr(b, "src", None) is not None else 0
    return int(src_len), int(b.tgt.shape[1]), int(task.tgt_vocab)


def estimate_seconds(job, step_seconds: dict, jobs: int = 1) -> float:
    """A run's expected wall time (:func:`tfx.runs.cost.run_seconds`): its steps, evaluations
    and probed steps at the seconds per step of its size (``step_seconds``, measured on this
    device by :func:`measure_step_seconds`; a size missing from it gets
    :func:`modelled_step_seconds`), with ``jobs`` runs trained at once."""
    from . import cost

    run = job["run"]
    s = step_seconds.get(_size_key(job))
    if s is None:
        s = modelled_step_seconds(job)
    translation = hasattr(_task(job), "references")
    shapes = _batch_shapes(_task(job), run.train.batch_size)
    extra = cost.eval_step_equivalents(run.model, run.train, shapes[1], translation)
    return cost.run_seconds(run.train.steps, s, extra, jobs)


def _task(job: dict):
    """The task of ``job``, loaded once per process."""
    from .profiles import load_task_or_fallback

    if job["task"] not in _TASKS:
        _TASKS[job["task"]] = load_task_or_fallback(job["task"], length=job["seq_len"])
    return _TASKS[job["task"]]


@contextlib.contextmanager
def claim(path, wait: bool = False):
    """Hold ``path`` (a lock file) while a run trains, so that two sweeps of one experiment in
    one results folder never train the same run at once: yields True when this process holds
    it, False when another does and ``wait`` is off. An exclusive ``flock`` is released when
    its holder exits, killed or not, so a crashed sweep never leaves a run claimed."""
    if fcntl is None:  # no flock (Windows): one sweep per folder
        yield True
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock


def recorded_line(files, key: str) -> dict | None:
    """The record dict with ``key`` in ``files`` (None if none): what another sweep wrote.
    ``files``: paths, or a function that lists them, called again if one vanishes while it is
    read (another sweep sealed that open batch: its records are in the sealed file)."""
    needle = f'"key":"{key}"'
    for _ in range(5):
        try:
            for f in (files() if callable(files) else files):
                if not Path(f).exists():
                    continue
                for _, line in results.lines(f):
                    if needle in line:
                        try:
                            return json.loads(line)
                        except json.JSONDecodeError:
                            continue
            return None
        except FileNotFoundError:
            if not callable(files):
                raise
    return None


def train_job(job: dict) -> tuple[dict, str]:
    """Train one planned run (:func:`plan`'s job) and return (record dict, how: 'trained' or
    'resumed from its checkpoint'); records nothing. A job whose ``checkpoint`` is None trains
    from its start and saves no checkpoint."""
    import torch

    task, run = _task(job), job["run"]
    how = "resumed from its checkpoint" if job["checkpoint"] and os.path.exists(job["checkpoint"]) else "trained"
    threads = torch.get_num_threads()
    torch.set_num_threads(job["threads"])  # the same in every process: the same numbers
    train_it = functools.partial(run_one, run.label, ModelConfig.for_task(task, **run.model), task, run.train,
                                 run.seed, checkpoint_path=job["checkpoint"], checkpoint_every=job["checkpoint_every"])
    try:
        try:
            rec = train_it()
        except CheckpointError as e:  # a leftover the run cannot resume from: keep it, start over
            set_aside = set_aside_checkpoint(job["checkpoint"])
            how = "trained"
            print(f"{run.label} seed {run.seed}: {e}. Moved it to {set_aside} and restarted the run.",
                  file=sys.stderr, flush=True)
            rec = train_it()
    finally:
        torch.set_num_threads(threads)
    for k in ("experiment", "profile", "index", "run_id", "key", "fixture"):
        setattr(rec, k, job[k])
    rec.point, rec.task = dict(run.point), job["task"]
    return rec.to_dict(), how


def ensembles(todo, max_members: int = 1) -> list[list]:
    """The jobs ``todo`` (:func:`plan`'s) in groups that train as one ensemble each
    (:mod:`tfx.runs.ensemble`), at most ``max_members`` a group; 1: every job alone (the
    sweep's behaviour without ``--ensemble``). A pure function of the jobs: runs group when
    they share the task, the model's shape (every model field but the initialiser's,
    ``ensemble.INIT_ONLY_MODEL_FIELDS``) and every TrainConfig field but the ones a member
    keeps (``ensemble.MEMBER_TRAIN_FIELDS``: seed, lr, schedule, …), and can be an ensemble
    whose members are their single runs (:func:`tfx.runs.ensemble.compatible`: no attention
    dropout, no compile, …; on CUDA a member's dropout masks are its own stream, not its single
    run's). Groups come in the order of their first job, each in ``todo``'s
    order, filled to ``max_members`` before the next is started."""
    from .ensemble import INIT_ONLY_MODEL_FIELDS, MEMBER_TRAIN_FIELDS, compatible

    if isinstance(max_members, bool) or not isinstance(max_members, int) or max_members < 1:
        raise ValueError(f"ensemble={max_members!r} must be an integer ≥ 1 (the most members an ensemble has)")
    if max_members == 1:
        return [[job] for job in todo]
    groups, open_group = [], {}  # shape key → the group being filled
    for job in todo:
        run = job["run"]
        model = ModelConfig.for_task(_task(job), **run.model)
        train_cfg = run.train.replace(seed=run.seed)
        if not compatible([model], [train_cfg]):
            groups.append([job])
            continue
        shape = json.dumps([job["task"], job["seq_len"], job["threads"], job.get("fixture", False),
                            {k: v for k, v in model.to_dict().items() if k not in INIT_ONLY_MODEL_FIELDS},
                            {k: v for k, v in train_cfg.to_dict().items() if k not in MEMBER_TRAIN_FIELDS}],
                           sort_keys=True, default=str)
        group = open_group.get(shape)
        if group is None or len(group) == max_members:
            group = open_group[shape] = []
            groups.append(group)
        group.append(job)
    return groups


def train_group(jobs: list) -> list[tuple[dict, str]]:
    """:func:`train_job` for a group of :func:`ensembles`: one job trains alone; more train as
    one ensemble (no checkpoints: a group cut off starts over). Returns (record dict, how) per job."""
    if len(jobs) == 1:
        return [train_job(jobs[0])]
    import torch

    task = _task(jobs[0])
    runs = [job["run"] for job in jobs]
    threads = torch.get_num_threads()
    torch.set_num_threads(jobs[0]["threads"])
    try:
        recs = run_ensemble([r.label for r in runs], [ModelConfig.for_task(task, **r.model) for r in runs], task,
                            [r.train for r in runs], [r.seed for r in runs])
    finally:
        torch.set_num_threads(threads)
    out = []
    for job, rec in zip(jobs, recs):
        for k in ("experiment", "profile", "index", "run_id", "key", "fixture"):
            setattr(rec, k, job[k])
        rec.point, rec.task = dict(job["run"].point), job["task"]
        out.append((rec.to_dict(), f"trained in an ensemble of {len(jobs)}"))
    return out


def _work_group(jobs: list, train=train_job) -> list:
    """:func:`_work` for a group of :func:`ensembles`: claim every job; the ones another sweep
    holds (None) or has recorded meanwhile are left out, the rest train together
    (:func:`train_group`) and are recorded while the claims are held. Returns per job
    (record dict, how) or None, in ``jobs``' order."""
    if len(jobs) == 1:
        return [_work(jobs[0], train)]
    results_of = {}
    with contextlib.ExitStack() as held_claims:
        mine = []
        for job in jobs:
            if not held_claims.enter_context(claim(job["lock"], wait=job.get("wait", False))):
                results_of[job["key"]] = None
                continue
            other = recorded_line(results.files_for(Path(job["out"]).parent, job["experiment"], job["profile"]),
                                  job["key"])
            if other is not None:
                results_of[job["key"]] = (other, "recorded by another sweep")
            else:
                mine.append(job)
        if mine:
            for job, (d, how) in zip(mine, train_group(mine)):
                results.append(job["out"], d)
                Path(job["checkpoint"]).unlink(missing_ok=True)
                results_of[job["key"]] = (d, how)
    return [results_of[job["key"]] for job in jobs]


def _work(job: dict, train=train_job) -> tuple[dict, str] | None:
    """Claim, train and record one run (in this process or a worker); returns (record dict,
    how: 'trained', 'resumed from its checkpoint' or 'recorded by another sweep'), or None
    when another process holds the run's claim (``job["wait"]``: wait for it instead).
    The record is appended while the claim is held, so a process that claims the run next
    finds it recorded. ``train``: what trains the job and returns (record dict, how), here
    (:func:`train_job`) or elsewhere (a Ray task: :func:`ray_executor`)."""
    with claim(job["lock"], wait=job.get("wait", False)) as held:
        if not held:
            return None
        # looked up now, not when planned: another sweep may have sealed its batch meanwhile
        other = recorded_line(lambda: results.files_for(Path(job["out"]).parent, job["experiment"], job["profile"]),
                              job["key"])
        if other is not None:
            return other, "recorded by another sweep"
        d, how = train(job)
        results.append(job["out"], d)
        Path(job["checkpoint"]).unlink(missing_ok=True)
        return d, how


def set_aside_checkpoint(path) -> Path:
    """Rename an unreadable checkpoint to ``PATH.corrupt`` (``PATH.corrupt-2``, … if taken):
    nothing is deleted, and the run can start over."""
    path = Path(path)
    target, n = path.with_name(path.name + ".corrupt"), 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{n}")
    path.rename(target)
    return target


def _die_with_parent(parent: int):
    """Worker initialiser: on Linux a worker is killed when the sweep is (``kill -9``), so
    a rerun never races an orphaned worker for a run's checkpoint."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the sweep died while this worker was starting
        os._exit(1)


# ---------------------------------------------------------------------- executors: where the runs train
EXECUTORS = ("local", "ray")


class Executor(NamedTuple):
    """Where a sweep's runs train: ``submit(group)`` starts :func:`_work_group` on a group of
    :func:`ensembles` (one job, or an ensemble's) and returns a Future of its results;
    ``train(job)`` is what ``_work`` trains a single run with (for a run another sweep held,
    tried again at the end); ``at_once``: how many groups are in flight."""
    submit: Callable[[list], Future]
    train: Callable[[dict], tuple]
    at_once: int


def _settled(fn, *args) -> Future:
    """``fn(*args)`` called now, as a finished Future (its result or its exception)."""
    fut = Future()
    try:
        fut.set_result(fn(*args))
    except Exception as e:
        fut.set_exception(e)
    return fut


@contextlib.contextmanager
def local_executor(jobs: int = 1):
    """Runs trained on this machine: one at a time in this process (``jobs`` 1), or ``jobs`` at
    once, each in its own spawned process, each of which records its run."""
    if jobs == 1:
        yield Executor(functools.partial(_settled, _work_group), train_job, 1)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
        yield Executor(functools.partial(pool.submit, _work_group), train_job, jobs)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise RuntimeError('--executor ray needs Ray, an optional extra of tfx-book: '
                           'pip install "tfx-book[ray]"') from None
    return ray


@contextlib.contextmanager
def ray_session(address: str | None = None):
    """Ray in this process: the session it has, else ``ray.init(address)``, shut down at the end.
    ``address`` None: Ray's own choice ($RAY_ADDRESS where set, else a local Ray started here);
    'auto': the cluster this machine joined with ``ray start``; 'ray://HOST:10001': a cluster's
    client port."""
    ray = _import_ray()
    if ray.is_initialized():
        yield ray
        return
    try:
        ray.init(address=address)
    except ConnectionError as e:
        raise RuntimeError(f"--ray-address {address or os.environ.get('RAY_ADDRESS', '')}: {e}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def ray_capacity(ray, gpus_per_task: float, cpus_per_task: int) -> int:
    """How many runs the Ray cluster trains at once now, each asking for ``cpus_per_task`` CPUs
    and ``gpus_per_task`` of a GPU: an error where it can train none."""
    total = ray.cluster_resources()
    cpus, gpus = total.get("CPU", 0), total.get("GPU", 0)
    if gpus_per_task and not gpus:
        raise ValueError(f"--gpus-per-task {gpus_per_task:g}: the Ray cluster has no GPU; "
                         "give 0 to train on its CPUs")
    if cpus < cpus_per_task:
        raise ValueError(f"--threads {cpus_per_task}: each run asks Ray for that many CPUs and the "
                         f"cluster has {cpus:g}")
    at_once = int(cpus // cpus_per_task)
    return min(at_once, int(gpus / gpus_per_task + 1e-9)) if gpus_per_task else at_once


def train_on_ray_worker(job: dict) -> tuple[dict, str]:
    """A Ray task: train ``job`` on the machine Ray chose and return (record dict, how); it
    records nothing. The run checkpoints only where the driver's results folder is this
    machine's too (the driver's mark file is there); elsewhere it trains from its start and
    leaves no file behind."""
    if code_version() != job["driver_code"]:
        import socket

        raise RuntimeError(f"the Ray worker on {socket.gethostname()} has other training code "
                           f"({code_version()}) than the driver ({job['driver_code']}): "
                           "install the same tfx-book on every machine of the cluster")
    if not os.path.exists(job["driver_mark"]):
        job = {**job, "checkpoint": None}
    return train_job(job)


@contextlib.contextmanager
def ray_executor(results_dir, address: str | None = None, gpus_per_task: float = 0.0, threads: int = 1,
                 jobs: int | None = None):
    """Runs trained as Ray tasks (:func:`train_on_ray_worker`), each asking Ray for ``threads``
    CPUs and ``gpus_per_task`` of a GPU, ``jobs`` in flight (default: as many as the cluster
    holds now). Each run is claimed, looked up and recorded by :func:`_work` in one of this
    process's threads while Ray trains it elsewhere, so this process (the driver) is the one
    writer of ``results_dir``. Runs still in flight when the sweep stops are cancelled."""
    with ray_session(address) as ray:
        capacity = ray_capacity(ray, gpus_per_task, threads)  # an error where the cluster can train no run
        at_once = jobs or capacity
        task = ray.remote(num_cpus=threads, num_gpus=gpus_per_task)(train_on_ray_worker)
        # a worker that sees this file shares the driver's results folder, and with it the checkpoints
        mark = Path(results_dir).absolute() / "checkpoints" / f".driver-{uuid.uuid4().hex}"
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
        in_flight = set()

        def train(job):
            ref = task.remote({**job, "checkpoint": str(Path(job["checkpoint"]).absolute()),
                               "driver_mark": str(mark), "driver_code": code_version()})
            in_flight.add(ref)
            try:
                return ray.get(ref)
            finally:
                in_flight.discard(ref)

        pool = ThreadPoolExecutor(at_once, thread_name_prefix="tfx-ray-run")
        try:
            yield Executor(functools.partial(pool.submit, _work_group, train=train), train, at_once)
        except BaseException:
            for ref in list(in_flight):
                ray.cancel(ref, force=True)
            raise
        finally:
            pool.shutdown(cancel_futures=True)
            mark.unlink(missing_ok=True)


def _run_jobs(groups, executor: Executor, fits, settle) -> None:
    """Keep ``executor.at_once`` groups of :func:`ensembles` in flight, each started only if
    ``fits(group)``, and ``settle(group, future.result)`` each as it ends."""
    waiting, futures = list(groups), {}
    while waiting or futures:
        while waiting and len(futures) < executor.at_once:
            group = waiting.pop(0)
            if fits(group):
                futures[executor.submit(group)] = group
        if not futures:
            break
        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        for fut in done:
            settle(futures.pop(fut), fut.result)


def _unclaimed(lock) -> bool:
    """Whether no process holds the claim ``lock`` now."""
    with claim(lock) as held:
        return held


def plan(experiment, profile=None, results_dir=None, shard=None, threads: int = 1, fixture: bool = False) -> dict:
    """What :func:`run_experiment` would do: ``{"experiment", "profile", "task", "note", "out",
    "mine" (this shard's run keys, in order), "recorded" (key → Record), "todo" (jobs)}``."""
    from .experiment import Experiment
    from .profiles import get_profile, resolve_task

    exp = experiment if isinstance(experiment, Experiment) else Experiment.load(experiment)
    i, n = parse_shard(shard) if isinstance(shard, str) else (shard or (0, 1))
    P = get_profile(profile if profile is None or isinstance(profile, str) else profile.name, check_task=False)
    task, note = resolve_task(exp.task(P.name))
    results_dir = Path(results_dir or results.default_dir())
    out = results.path_for(results_dir, exp.name, P.name, (i, n))
    ckpt_dir = results_dir / "checkpoints" / f"{exp.name}.{P.name}"
    version = code_version()
    recorded = {r.key: r for r in results.read_experiment(results_dir, exp.name, P.name, dedupe=False)}
    # records of older code that the lineage ledger proves give this code's numbers count as recorded
    ledger = lineage.entries(results_dir)
    proven = {(r.label, r.seed, r.fixture): r for r in recorded.values()
              if r.code_version != version and lineage.valid(r, results_dir, version, ledger)}
    mine, todo = [], []
    for index, run in enumerate(exp.runs(P.name)):
        if index % n != i:
            continue
        if fixture:
            run = fixture_run(run)
        key = run_key(exp.name, P.name, task, run, version)
        ckpt = ckpt_dir / f"{key}.pt"
        old = proven.get((run.label, run.seed, fixture))
        if old is not None and _ran(old, task, P.seq_len, run):
            key = old.key  # recorded by older code proven equivalent: this run's record
        mine.append(key)
        if key in recorded:
            if not (ckpt_dir / f"{key}.lock").exists() or _unclaimed(ckpt_dir / f"{key}.lock"):
                ckpt.unlink(missing_ok=True)  # recorded, then killed before the checkpoint was removed
            continue
        todo.append({"run": run, "index": index, "key": key, "run_id": run_key(exp.name, P.name, task, run),
                     "experiment": exp.name, "profile": P.name, "task": task, "seq_len": P.seq_len,
                     "checkpoint": str(ckpt), "lock": str(ckpt_dir / f"{key}.lock"), "out": str(out),
                     "threads": threads, "fixture": fixture,
                     "checkpoint_every": 0 if fixture else exp.checkpoint_every(P.name, run.train.steps)})
    return {"experiment": exp.name, "profile": P.name, "task": task, "note": note, "out": out, "shard": (i, n),
            "mine": mine, "recorded": recorded, "todo": todo, "claims": list(exp.claims)}


def _ran(rec, task: str, seq_len: int, run) -> bool:
    """Whether record ``rec`` ran what the experiment now runs as ``run`` on the task named
    ``task`` (its configs as this code reads them, a field added since at its default)."""
    if rec.task != task or rec.train_config.to_dict() != run.train.replace(seed=run.seed).to_dict():
        return False
    model = ModelConfig.for_task(_task({"task": task, "seq_len": seq_len}), **run.model)
    return rec.config.to_dict() == model.to_dict()


def run_experiment(experiment, profile=None, results_dir=None, jobs: int | None = None, shard=None,
                   threads: int = 1, progress: bool = True, fixture: bool = False,
                   deadline: float | None = None, step_seconds: dict | None = None,
                   seal: bool = True, executor: str = "local", ray_address: str | None = None,
                   gpus_per_task: float = 0.0, ensemble: int = 1) -> list[Record]:
    """Run ``experiment`` (an :class:`tfx.runs.experiment.Experiment` or its file) in ``profile``
    (default: the current one); returns this shard's Records in the experiment's order.

    Each finished run is appended to ``results_dir`` (default ``results/``); runs already
    recorded with this training code (:func:`code_hash`) are skipped; a run with a checkpoint
    continues from it. ``jobs``: runs trained at once (default 1), each in its own process
    (spawned); ``threads``: torch threads per run. ``shard``: ``(I, N)`` or ``"I/N"``: only runs I,
    I+N, I+2N, …. A run that raises does not stop the others; the error is reported at the end.

    ``executor="ray"``: the runs train as Ray tasks (:func:`ray_executor`) on a local Ray or the
    cluster at ``ray_address``, each with ``threads`` CPUs and ``gpus_per_task`` of a GPU
    (0.25: four runs to a GPU), ``jobs`` in flight (default: as many as the cluster holds); this
    process records every run. Checkpoints need the results folder shared with the workers.

    ``deadline`` (a ``time.monotonic()`` value) with ``step_seconds`` (from
    :func:`measure_step_seconds`, per model size): no run starts that is not expected to
    finish before it; the rest wait for the next call. ``fixture``: every run shrunk by
    :func:`fixture_run` (a CPU stand-in for tests, labelled as such in its record).
    ``seal``: once every run of this shard is recorded, its open batch becomes a sealed one
    (:func:`tfx.runs.results.seal`); off, it stays open (to inspect or damage it in a test).
    ``ensemble``: up to this many compatible runs train together as one program
    (:func:`ensembles`, :mod:`tfx.runs.ensemble`; each record says so in ``ensemble``); 1: each alone.
    """
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs={jobs!r} must be an integer ≥ 1")
    check_executor(executor, ray_address, gpus_per_task)
    if executor == "ray" and ensemble != 1:
        raise ValueError(f"ensemble={ensemble!r} with executor='ray': an ensemble trains in one process of this "
                         "machine; give ensemble=1 (each run a Ray task) or executor='local'")
    if executor == "ray" and deadline is not None:
        raise ValueError("deadline: the step times are measured on this machine, not on Ray's workers; "
                         "give a deadline with executor='local' only")
    p = plan(experiment, profile, results_dir, shard, threads, fixture)
    mine, todo, recorded, out = p["mine"], p["todo"], p["recorded"], p["out"]
    groups = ensembles(todo, ensemble)
    i, n = p["shard"]
    log = functools.partial(print, file=sys.stderr, flush=True)
    log(f"{p['experiment']}: {len(mine)} runs (profile {p['profile']}, task {p['task']}"
        + (f", shard {i}/{n}" if n > 1 else "") + (", FIXTURES" if fixture else "")
        + f"), {len(mine) - len(todo)} already recorded; → {out}")
    if p["note"]:
        log(f"note: {p['note']}")
    from tqdm.auto import tqdm

    bar = tqdm(total=len(mine), initial=len(mine) - len(todo), desc=p["experiment"], unit="run",
               disable=not progress)
    failures, deferred, claimed = [], [], []

    def finish(job, result):
        d, how = result
        recorded[d["key"]] = Record.from_dict(d)
        bar.update(1)
        bar.write(f"{d['label']} seed {d['seed']}: {d['status']}, final loss "
                  f"{recorded[d['key']].final_loss:.3f} ({d['wall_time']:.1f} s)"
                  + ("" if how == "trained" else f", {how}"), file=sys.stderr)

    def failed(job, exc_text):
        failures.append(f"{job['run'].label} seed {job['run'].seed}")
        bar.write(f"{job['run'].label} seed {job['run'].seed} raised:\n{exc_text}", file=sys.stderr)

    def settle(group, call):
        try:
            outcomes = call()
        except Exception:
            for job in group:
                failed(job, traceback.format_exc())
            return
        for job, result in zip(group, outcomes):
            if result is None:  # another sweep is training it: come back to it at the end
                claimed.append(job)
            else:
                finish(job, result)

    if groups:
        where = (ray_executor(out.parent, ray_address, gpus_per_task, threads, jobs) if executor == "ray"
                 else local_executor(jobs or 1))
        with where as ex:
            def fits(group) -> bool:  # a group (of ensembles()) costs about its runs' time alone, summed
                if deadline is None:
                    return True
                ok = time.monotonic() + sum(estimate_seconds(job, step_seconds, ex.at_once) for job in group) <= deadline
                if not ok:
                    deferred.extend(group)
                return ok

            _run_jobs(groups, ex, fits, settle)
            for job in claimed:  # wait for the other sweep; train the run here if it stopped without recording it
                bar.write(f"{job['run'].label} seed {job['run'].seed}: another sweep is training it; waiting",
                          file=sys.stderr)
                settle([job], functools.partial(_work_group, [{**job, "wait": True}], ex.train))
    bar.close()
    if deferred:
        log(f"budget: {len(deferred)} run(s) of {p['experiment']} would not finish in time and did not start; "
            "run the same command again to continue")
    if failures:
        raise RuntimeError(f"{len(failures)} run(s) raised and were not recorded: {', '.join(failures)}")
    if seal and todo and not deferred:  # every run of this shard recorded: its batch is sealed
        sealed = results.seal(out)
        if sealed is not None:
            log(f"sealed the batch: {sealed}")
    return [recorded[k] for k in mine if k in recorded]


def check_executor(executor: str, ray_address: str | None = None, gpus_per_task: float = 0.0,
                   option=lambda name: name) -> None:
    """A ValueError naming the option where ``executor``, ``ray_address`` or ``gpus_per_task``
    is not allowed; ``option`` spells an argument's name (the command line's ``--gpus-per-task``)."""
    if executor not in EXECUTORS:
        raise ValueError(f"{option('executor')}={executor!r} must be one of {', '.join(EXECUTORS)}")
    if isinstance(gpus_per_task, bool) or not isinstance(gpus_per_task, (int, float)) \
            or not 0 <= gpus_per_task <= 1:
        raise ValueError(f"{option('gpus_per_task')}={gpus_per_task!r} must be a share of one GPU from 0 to 1 "
                         "(0.25: four runs to a GPU; 0: the workers' CPUs)")
    if executor != "ray":
        for name, value in (("gpus_per_task", gpus_per_task), ("ray_address", ray_address)):
            if value:
                raise ValueError(f"{option(name)}={value!r} is for Ray: give it with {option('executor')}=ray")


def load_or_run(experiment: str, profile, run_missing: bool | None = None, results_dir=None) -> list[Record]:
    """The recorded runs of ``experiment`` in ``profile`` (a name or a Profile); where there
    are none and ``run_missing`` (default: on a CPU profile, never for ``full``), run the
    experiment file now, one run at a time, and return what it recorded. ``full`` results
    come from a GPU (``python -m tfx.sweep experiments/NAME --profile full``): a chapter
    shows a note where they are missing, never a substitute."""
    name = profile if isinstance(profile, str) else profile.name
    recs = results.load(experiment, name, results_dir)
    if recs or not (run_missing if run_missing is not None else name != "full"):
        return recs
    from .shipped import experiments_dir

    return run_experiment(experiments_dir() / experiment, name, results_dir, jobs=1, progress=False)


def main(argv=None) -> int:
    """``python -m tfx.sweep experiments/NAME [NAME …] [--profile P] [--jobs N] [--shard I/N]
    [--results DIR] [--budget-minutes M | --plan | --plan-cpu] [--fixture]
    [--executor ray [--ray-address ADDRESS] [--gpus-per-task F]]`` (``--carry-forward``: :mod:`tfx.runs.carry`)"""
    ap = argparse.ArgumentParser(prog="python -m tfx.sweep", description=__doc__.split("\n")[0])
    ap.add_argument("experiments", nargs="+", metavar="experiment",
                    help="experiments/NAME or experiments/NAME.toml; several run in the order given (with --plan or "
                         "--budget-minutes: those already partly swept first)")
    ap.add_argument("--profile", choices=("quick", "book", "full"), default=None,
                    help="sizes to use (default: $TFX_PROFILE, else full with CUDA, book without)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="runs trained at once, each in its own process (default 1; with --executor ray: "
                         "as many as the Ray cluster holds)")
    ap.add_argument("--shard", default=None, help="I/N: run only every N-th run, starting at I (0 ≤ I < N)")
    ap.add_argument("--results", default=None, help="results folder (default: results/ of the checkout)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    ap.add_argument("--ensemble", type=int, default=1, metavar="K",
                    help="train up to K compatible runs (same shapes; seed, lr, schedule may differ; no attention dropout) "
                         "together as one program (tfx.runs.ensemble); default 1: each run alone")
    ap.add_argument("--list", action="store_true", help="list the runs and exit")
    ap.add_argument("--budget-minutes", type=float, default=None,
                    help="measure each model size's step time, print the plan and its estimated cost, and "
                         "start no run that is not expected to finish within M minutes; rerun to continue")
    ap.add_argument("--plan", action="store_true",
                    help="print the plan (each experiment, its runs still to do, their estimated minutes from "
                         "the H100 cost model of tfx.runs.cost, and the total) and exit: trains nothing")
    ap.add_argument("--plan-cpu", action="store_true",
                    help="print each experiment's runs still to do and their CPU-hours on one thread, from the "
                         "recorded wall times of the same model size (profile book by default), beside its "
                         "budget_cpu_hours and pending, and exit: trains nothing")
    ap.add_argument("--fixture", action="store_true",
                    help="every run shrunk to a CPU stand-in (records labelled fixture): to test chapters' cells")
    ap.add_argument("--executor", choices=EXECUTORS, default="local",
                    help="local (default): on this machine, in processes; ray: as Ray tasks on a local Ray or a "
                         "cluster (pip install 'tfx-book[ray]'), recorded by this process")
    ap.add_argument("--ray-address", default=None,
                    help="with --executor ray: the cluster, 'auto' (joined with `ray start`) or ray://HOST:10001 "
                         "(default: $RAY_ADDRESS, else a local Ray)")
    ap.add_argument("--gpus-per-task", type=float, default=0.0,
                    help="with --executor ray: the share of a GPU each run gets, 0 to 1 (0.25: four runs to a GPU; "
                         "default 0: the workers' CPUs)")
    ap.add_argument("--rejudge", action="store_true",
                    help="store in every record of these experiments the outcome the current rule gives it, and exit")
    args = ap.parse_args(argv)
    from .experiment import Experiment
    from .profiles import get_profile

    try:
        if args.jobs is not None and args.jobs < 1:
            raise ValueError(f"--jobs={args.jobs} must be an integer ≥ 1")
        check_executor(args.executor, args.ray_address, args.gpus_per_task,
                       option=lambda name: "--" + name.replace("_", "-"))
        if args.executor == "ray" and args.budget_minutes is not None:
            raise ValueError("--budget-minutes measures step times on this machine, not on Ray's workers: "
                             "give it without --executor ray")
        if args.budget_minutes is not None and not args.budget_minutes > 0:
            raise ValueError(f"--budget-minutes={args.budget_minutes} must be > 0")
        start = time.monotonic()
        exps = [Experiment.load(e) for e in args.experiments]
        if args.rejudge:
            P = get_profile(args.profile, check_task=False)
            folder = Path(args.results) if args.results else results.default_dir()
            for exp in exps:
                for f in results.files_for(folder, exp.name, P.name):
                    print(f"{f}: {results.rejudge_file(f)} records now stored with the current outcome rule's verdict",
                          file=sys.stderr)
            return 0
        if args.plan_cpu:
            if args.plan or args.budget_minutes is not None:
                raise ValueError("--plan-cpu trains nothing: give it without --plan or --budget-minutes")
            profile = args.profile or "book"
            plans = [plan(e, profile, args.results, args.shard, args.threads) for e in exps]
            text, _ = cpu_plan_text(plans, exps, recorded_cpu_step_seconds(profile, args.results))
            print(text)
            return 0
        if args.plan and args.budget_minutes is not None:
            raise ValueError("--plan trains nothing: give it without --budget-minutes")
        if len(exps) > 1 and (args.plan or args.budget_minutes is not None):
            exps = partly_swept_first(exps, args.profile, args.results, args.shard, args.fixture)
        if args.plan:
            plans = [plan(e, args.profile, args.results, args.shard, args.threads, args.fixture) for e in exps]
            text, _ = plan_text(plans, args.jobs or 1, details=True)
            print(text)
            return 0
        if args.list:
            P = get_profile(args.profile, check_task=False)
            i, n = parse_shard(args.shard) if args.shard else (0, 1)
            for exp in exps:
                for index, run in enumerate(exp.runs(P.name)):
                    if index % n == i:
                        print((f"{exp.name}  " if len(exps) > 1 else "") + f"{index:4d}  {run.label}  seed {run.seed}")
            return 0
        deadline = step_seconds = None
        if args.budget_minutes is not None:
            step_seconds = print_plan(exps, args)
            deadline = start + 60 * args.budget_minutes
        for exp in exps:
            run_experiment(exp, args.profile, args.results, jobs=args.jobs, shard=args.shard, threads=args.threads,
                           fixture=args.fixture, deadline=deadline, step_seconds=step_seconds,
                           executor=args.executor, ray_address=args.ray_address, gpus_per_task=args.gpus_per_task,
                           ensemble=args.ensemble)
        if deadline is not None:
            left = sum(len(plan(e, args.profile, args.results, args.shard, fixture=args.fixture)["todo"]) for e in exps)
            print(f"budget: {(time.monotonic() - start) / 60:.1f} of {args.budget_minutes:g} min used; "
                  + (f"{left} run(s) left: run the same command again" if left else "every planned run is recorded"),
                  file=sys.stderr)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def partly_swept_first(exps, profile=None, results_dir=None, shard=None, fixture: bool = False) -> list:
    """``exps`` with the experiments already partly swept (some runs recorded, some still to do)
    first, each group in its given order: a burst finishes what an earlier one started (a
    column added to a recorded grid, runs cut off by the budget) before it opens another."""
    todo = {}
    for e in exps:
        p = plan(e, profile, results_dir, shard, fixture=fixture)
        todo[id(e)] = 0 < len(p["todo"]) < len(p["mine"])
    return [e for e in exps if todo[id(e)]] + [e for e in exps if not todo[id(e)]]


def print_plan(exps, args) -> dict:
    """Measure the step time of every model size still to run on this device, print the plan
    (:func:`plan_text`, to stderr) and return the step times."""
    plans = [plan(e, args.profile, args.results, args.shard, args.threads, args.fixture) for e in exps]
    step_seconds = {}
    for p in plans:
        for job in p["todo"]:
            if _size_key(job) not in step_seconds:
                step_seconds[_size_key(job)] = measure_step_seconds(job)
    text, _ = plan_text(plans, args.jobs or 1, step_seconds, budget=args.budget_minutes)
    print(text, file=sys.stderr, flush=True)
    return step_seconds


def _size_text(run) -> str:
    m = {k: run.model.get(k, getattr(ModelConfig, k)) for k in _COST_MODEL_FIELDS}
    body = f"{m['n_enc']}+{m['n_dec']}" if m["n_enc"] else f"{m['n_dec']}-layer LM"
    return f"{body}, d {m['d_model']}, batch {run.train.batch_size}"


def recorded_cpu_step_seconds(profile: str, results_dir=None) -> dict:
    """:func:`tfx.runs.cost.cpu_step_seconds` over the records of every experiment file in
    ``profile`` (the sizes any sweep has timed)."""
    from . import cost, shipped

    recs = [r for p in sorted(shipped.experiments_dir().glob("*.toml"))
            for r in results.load(p.stem, profile, results_dir)]
    return cost.cpu_step_seconds(recs)


def cpu_plan_text(plans, exps, step_seconds: dict) -> tuple[str, float]:
    """The CPU plan of :func:`plan` results ``plans`` (of Experiments ``exps``, in order) as
    text, and the CPU-hours of the runs still to do in the experiments not pending: per
    experiment its runs to do, their hours on one thread at the recorded seconds a step of their
    size (:func:`tfx.runs.cost.cpu_seconds_a_step`: recorded, or scaled from the nearest recorded
    size, which the line names), its ``budget_cpu_hours`` and ``pending``; per model size one
    line. A size with no recorded size to scale from is counted as unknown, never as 0."""
    from . import cost

    rows, total, pending_h = [], 0.0, 0.0
    for p, exp in zip(plans, exps):
        sizes: dict = {}
        for j in p["todo"]:
            size = cost.cpu_size(j["task"], j["run"].model, j["run"].train.batch_size)
            g = sizes.setdefault(size, [0, 0])
            g[0] += 1
            g[1] += j["run"].train.steps
        hours, unknown, details = 0.0, 0, []
        for size, (n, steps) in sizes.items():
            got = cost.cpu_seconds_a_step(size, step_seconds)
            if got is None:
                unknown += n
                details.append(f"      {cost.size_text(size):<22} {n:>4} runs, {steps:>7} steps: no recorded size "
                               "of this task and batch to scale from")
                continue
            s, src = got
            hours += s * steps / 3600
            how = "recorded" if src == size else f"scaled from {cost.size_text(src)}'s {step_seconds[src]:.3f} s"
            details.append(f"      {cost.size_text(size):<22} {n:>4} runs, {steps:>7} steps at {s:.3f} s a step "
                           f"({how}) ≈ {s * steps / 3600:5.2f} h")
        if exp.pending:
            pending_h += hours
        else:
            total += hours
        claims = f" ({', '.join(p['claims'])})" if p.get("claims") else ""
        budget = f"budget {exp.budget_cpu_hours:g} h" if exp.budget_cpu_hours is not None else "no budget"
        rows.append(f"  {p['experiment'] + claims:<40} {len(p['todo']):>4} of {len(p['mine']):<4} runs to do  "
                    f"≈ {hours:6.2f} CPU-h" + (f" + {unknown} unknown" if unknown else "") + f"  ({budget})"
                    + (f"  PENDING: {exp.pending}" if exp.pending else ""))
        rows += details
    head = (f"CPU plan (profile {plans[0]['profile'] if plans else '?'}, one thread a run; seconds a step: the "
            f"median of the recorded runs of the same size, {len(step_seconds)} size(s) recorded):")
    tail = f"  to do ≈ {total:.1f} CPU-hours" + (f"; pending designs ≈ {pending_h:.1f} more" if pending_h else "")
    return "\n".join([head, *rows, tail]), total


def plan_text(plans, jobs: int = 1, step_seconds: dict | None = None, budget: float | None = None,
              details: bool = False) -> tuple[str, float]:
    """The plan of :func:`plan` results ``plans`` as text, and its total minutes: each
    experiment's runs still to do and their minutes with ``jobs`` runs at once
    (:func:`estimate_seconds` per run, :func:`tfx.runs.cost.experiment_seconds` per experiment;
    ``details``: one line per grid point too). With no ``step_seconds`` the step times are the
    cost model's (:mod:`tfx.runs.cost`, fitted on H200 bursts), and the total adds each burst's
    start and the bench, unless the results folder has its ``gpu-bench.txt``:
    ``total ≈ N H100-minutes``. When ``plans`` hold the core of the GPU plan
    (:data:`tfx.runs.cost.GPU_CORE`) and more, the core comes first with its estimate, then the
    rest with its own total, and the last line is the core's total (the number returned)."""
    from . import cost

    step_seconds = step_seconds or {}
    measured = bool(step_seconds)
    blocks, minutes_each = [], []  # per experiment: its lines, its minutes
    for p in plans:
        secs = [estimate_seconds(j, step_seconds, jobs) for j in p["todo"]]
        minutes = cost.experiment_seconds(secs, jobs) / 60  # its pool's start and its runs, in order on `jobs` workers
        minutes_each.append(minutes)
        claims = f" ({', '.join(p['claims'])})" if p.get("claims") else ""
        block = [f"  {p['experiment'] + claims:<40} {len(p['todo']):>4} of {len(p['mine']):<4} runs to do  "
                 f"≈ {minutes:5.1f} min  (cumulative {sum(minutes_each):5.1f})"]
        if details:
            groups: dict = {}
            for j, t in zip(p["todo"], secs):
                g = groups.setdefault(j["run"].label, [j["run"], 0, t])
                g[1] += 1
            for label, (run, n, t) in groups.items():
                block.append(f"      {label:<52} {n} seed{'s' if n > 1 else ' '} × {run.train.steps:>5} steps  "
                             f"{_size_text(run):<30} ≈ {t:4.0f} s a run")
        blocks.append(block)
    rows, runs_min = [r for block in blocks for r in block], sum(minutes_each)
    source = (f"step times measured on this device for {len(step_seconds)} model size(s)" if measured
              else "step times from the H100 cost model (tfx.runs.cost), not measured")
    head = f"plan (profile {plans[0]['profile'] if plans else '?'}, {jobs} job(s) at once, {source}):"
    if measured:
        tail = f"  estimated {runs_min:.1f} min in all" + (f"; budget {budget:g} min" if budget else "")
        return "\n".join([head, *rows, tail]), runs_min
    # the bench runs once, while the results folder has no gpu-bench.txt (scripts/gpu_burst.sh, BENCH=auto)
    benched = bool(plans) and (Path(plans[0]["out"]).parent / "gpu-bench.txt").exists()
    in_core = [p["experiment"] in cost.GPU_CORE for p in plans]
    if not any(in_core) or all(in_core):
        total, estimate = _gpu_total(runs_min, benched)
        return "\n".join([head, *rows, estimate, f"total ≈ {total:.1f} H100-minutes"]), total
    # the GPU plan: the core (run first) and its estimate, then the rest and its own total; the
    # last line is the core's total
    core_min = sum(m for m, c in zip(minutes_each, in_core) if c)
    total, core_estimate = _gpu_total(core_min, benched)
    rest_total, rest_estimate = _gpu_total(runs_min - core_min, True)
    return "\n".join([head, f"the core ({', '.join(cost.GPU_CORE)}; a burst first ends the experiments already begun, "
                      "then runs it):",
                      *(r for block, c in zip(blocks, in_core) if c for r in block), core_estimate,
                      "the rest, in the order a burst runs it (a shortfall cuts it from the end):",
                      *(r for block, c in zip(blocks, in_core) if not c for r in block), rest_estimate,
                      f"the rest ≈ {rest_total:.1f} H100-minutes more (budget {cost.REST_BUDGET_MINUTES:g})",
                      f"the core: budget {cost.CORE_BUDGET_MINUTES:g} H100-minutes",
                      f"total ≈ {total:.1f} H100-minutes"]), total


def _gpu_total(runs_min: float, benched: bool) -> tuple[float, str]:
    """A GPU plan's H100-minutes (its runs, the bench unless ``benched``, each burst's start)
    and the line that says so."""
    from . import cost

    n_bursts = cost.bursts(runs_min)
    bench_min = 0.0 if benched else cost.BENCH_SECONDS / 60
    total = runs_min + bench_min + n_bursts * cost.BURST_SECONDS / 60
    return total, (f"  estimated: runs {runs_min:.1f} min + the bench {bench_min:.1f} min"
                   + (" (done: gpu-bench.txt)" if benched else "") + " + "
                   f"{n_bursts} burst(s) of ≤ {cost.BURST_MINUTES:g} min, each {cost.BURST_SECONDS / 60:.1f} min to start")


if __name__ == "__main__":
    sys.exit(main())
