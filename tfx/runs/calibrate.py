"""The cost model (:mod:`tfx.runs.cost`) against what GPU bursts measured: the rule that fits its
measured constants, and the check that it predicts the bursts within a factor.

A burst (``scripts/gpu_burst.sh``) leaves a log (``results/gpu-bursts/STAMP.log``: its start,
jobs, the install's, the bench's and the sweep's elapsed seconds) and records (each with its
``wall_time``, ``finished_at``, configs and ``steps_done``). :func:`bursts` pairs each log with
the records its sweep made (CUDA records finished between the log's sweep start and its end),
:func:`fit` turns them into the constants :mod:`tfx.runs.cost` states, and :func:`compare`
sets the model's minutes beside the measured ones::

    python -m tfx.runs.calibrate results/gpu-bursts/*.log   # the fit and the comparison
"""
from __future__ import annotations

import math
import re
import statistics
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import cost

_HEAD = re.compile(r"^== gpu_burst (\S+?Z): .*?, (\d+) job\(s\)$", re.M)
_INSTALLED = re.compile(r"^\s+tfx-book installed from .*\((\d+) s\)$", re.M)
_BENCH = re.compile(r"^== bench \((\d+) s\):.*?^\s+bench exit \d+ \((\d+) s\)", re.M | re.S)
_SWEEP = re.compile(r"^== sweep \((\d+) s\):", re.M)
_DONE = re.compile(r"^== done in (\d+) s", re.M)


@dataclass
class Burst:
    """One burst's log, read by :func:`read_log`, and the records its sweep made."""
    path: Path
    start: float  # POSIX seconds
    jobs: int
    install_s: float  # from the burst's start
    sweep_s: float  # the sweep's start, from the burst's start
    done_s: float  # the burst's end, from its start
    bench_s: float | None = None  # the bench's duration, where it ran
    records: list = field(default_factory=list)  # in the order they started

    @property
    def sweep_seconds(self) -> float:
        """The sweep's measured wall time: its start to the burst's end (15 s of packing)."""
        return self.done_s - self.sweep_s


def read_log(path) -> Burst:
    """A burst log's times; an error names what the log lacks."""
    text = Path(path).read_text(encoding="utf-8")
    found = {}
    for name, pattern in (("header '== gpu_burst STAMP: …, N job(s)'", _HEAD), ("'tfx-book installed … (N s)'", _INSTALLED),
                          ("'== sweep (N s)'", _SWEEP), ("'== done in N s'", _DONE)):
        m = pattern.search(text)
        if m is None:
            raise ValueError(f"{path}: no {name} line: not a scripts/gpu_burst.sh log, or a burst that did not end")
        found[name] = m
    head = found["header '== gpu_burst STAMP: …, N job(s)'"]
    start = datetime.strptime(head.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    bench = _BENCH.search(text)
    return Burst(Path(path), start, int(head.group(2)), float(found["'tfx-book installed … (N s)'"].group(1)),
                 float(found["'== sweep (N s)'"].group(1)), float(found["'== done in N s'"].group(1)),
                 float(bench.group(2)) - float(bench.group(1)) if bench else None)


def _started(rec) -> float:
    return _finished(rec) - rec.wall_time


def _finished(rec) -> float:
    return datetime.fromisoformat(rec.finished_at).timestamp()


def bursts(logs, records) -> list[Burst]:
    """Each log of ``logs`` (:func:`read_log`) with the CUDA records of ``records`` that its sweep
    finished (``finished_at`` between its sweep's start and its end, to the second)."""
    out = []
    for path in sorted(logs):
        b = read_log(path)
        lo, hi = b.start + b.sweep_s, b.start + b.done_s + 1
        b.records = sorted((r for r in records if str(r.device).startswith("cuda") and r.finished_at
                            and lo <= _finished(r) <= hi), key=_started)
        out.append(b)
    return out


def measured(found: list[Burst]) -> list[Burst]:
    """The bursts of ``found`` whose sweeps recorded runs; one that recorded none (every run
    raised, or no run fitted its budget) measured nothing the model predicts."""
    return [b for b in found if b.records]


def _shapes(rec) -> tuple[int, int, int, bool]:
    """(source length, target length, vocabulary, translation?) of the record's task at its
    batch size, as the plan reads them (:func:`tfx.runs.sweep._batch_shapes`)."""
    from .profiles import get_profile
    from .sweep import _batch_shapes, _task

    task = _task({"task": rec.task, "seq_len": get_profile("full", check_task=False).seq_len})
    return (*_batch_shapes(task, rec.train_config.batch_size), hasattr(task, "references"))


def run_seconds(rec, jobs: int, as_ran: bool = False) -> float:
    """The model's seconds for the run of record ``rec`` with ``jobs`` runs at once: its planned
    steps (what a plan knows), or, ``as_ran``, the steps it did (a diverged run stops early)."""
    src, tgt, vocab, translation = _shapes(rec)
    model, train = rec.config.to_dict(), rec.train_config
    if as_ran:
        train = train.replace(steps=max(1, int(rec.history.steps_done)))
    s = cost.step_seconds(model, train, train.batch_size, src, tgt, vocab)
    return cost.run_seconds(train.steps, s, cost.eval_step_equivalents(model, train, tgt, translation), jobs)


def _experiments(b: Burst) -> list[list]:
    """The burst's records by experiment, in the order the experiments started."""
    groups: dict = {}
    for r in b.records:
        groups.setdefault(r.experiment, []).append(r)
    return list(groups.values())


def fit(found: list[Burst]) -> dict:
    """The constants of :mod:`tfx.runs.cost` that bursts measure (its docstring states the rule
    for each): ``SLOWDOWN_AT_8_JOBS``, ``POOL_SECONDS``, ``SWEEP_SECONDS``, ``INSTALL_SECONDS``,
    ``BENCH_SECONDS`` (None where no burst ran the bench; ``POOL_SECONDS`` None where no burst
    changed experiment)."""
    if not found or not all(b.records for b in found):
        raise ValueError("bursts: every burst needs its records (none found for "
                         + ", ".join(str(b.path) for b in found if not b.records) + ")" if found else "bursts is empty")
    if any(b.jobs != 8 for b in found):
        raise ValueError(f"jobs: the fit reads bursts of 8 jobs only, not {sorted({b.jobs for b in found})}")
    logs = [math.log(r.wall_time / run_seconds(r, 1, as_ran=True)) for b in found for r in b.records]
    gaps = [_started(nxt[0]) - max(map(_finished, prev))
            for b in found for prev, nxt in zip(_experiments(b), _experiments(b)[1:])]
    pool = statistics.mean(gaps) if gaps else None
    sweep = statistics.mean(_started(b.records[0]) - (b.start + b.sweep_s) - (pool or 0.0)
                            + (b.start + b.done_s) - max(map(_finished, b.records)) for b in found)
    benches = [b.bench_s for b in found if b.bench_s is not None]
    return {"SLOWDOWN_AT_8_JOBS": math.exp(statistics.mean(logs)), "POOL_SECONDS": pool, "SWEEP_SECONDS": sweep,
            "INSTALL_SECONDS": statistics.mean(b.install_s for b in found),
            "BENCH_SECONDS": statistics.mean(benches) if benches else None}


def compare(found: list[Burst]) -> dict:
    """The model against the measurements: per burst, ``(modelled, measured)`` minutes of its
    sweep (:func:`tfx.runs.cost.sweep_seconds` of the runs it recorded, at their planned steps);
    per run, the ratios modelled ÷ ``wall_time``; ``{"bursts": […], "runs": […]}``."""
    per_burst, ratios = [], []
    for b in found:
        secs = [[run_seconds(r, b.jobs) for r in group] for group in _experiments(b)]
        per_burst.append((cost.sweep_seconds(secs, b.jobs) / 60, b.sweep_seconds / 60))
        ratios += [s / r.wall_time for group, ss in zip(_experiments(b), secs) for r, s in zip(group, ss)]
    return {"bursts": per_burst, "runs": ratios}


def main(argv=None) -> int:
    """``python -m tfx.runs.calibrate LOG …``: the fit from these logs and the records of
    ``results/`` (every experiment's full profile), and the model's minutes against theirs."""
    from . import results
    from .shipped import experiments_dir

    logs = argv if argv is not None else sys.argv[1:]
    if not logs:
        print("usage: python -m tfx.runs.calibrate results/gpu-bursts/*.log", file=sys.stderr)
        return 2
    records = [r for p in sorted(experiments_dir().glob("*.toml")) for r in results.load(p.stem, "full")]
    found = bursts(logs, records)
    for b in found:
        if not b.records:
            print(f"{b.path.name}: no records (its sweep recorded no run): set aside")
    found = measured(found)
    for name, value in fit(found).items():
        print(f"{name} = {value if value is None else round(value, 2)}  (tfx.runs.cost: {getattr(cost, name)})")
    c = compare(found)
    for b, (model, actual) in zip(found, c["bursts"]):
        print(f"{b.path.name}: {len(b.records)} runs, sweep modelled {model:.2f} min, measured {actual:.2f} min "
              f"(× {model / actual:.2f})")
    print(f"per run: median modelled ÷ wall_time {statistics.median(c['runs']):.2f} over {len(c['runs'])} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
