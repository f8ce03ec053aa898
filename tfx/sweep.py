"""Run a grid of model configurations and record every run.

    configs = {"Post-LN": ModelConfig.for_task(task, placement="post"),
               "Pre-LN": ModelConfig.for_task(task, placement="pre")}
    records = run_grid(configs, task, TrainConfig(steps=200, lr=1e-3), seeds=2)
    by_label(records)["Pre-LN"][0].history.status      # 'ok', 'stuck' or 'diverged'

Each record says what ran (label, model and training configs, seed), where and
with which code (device, code version), how long it took and how it ended
(status and the full History), so a chapter's figures and verdicts can be read
from the records alone and a reader can rerun any of them.
"""
from __future__ import annotations

import functools
import math
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import ModelConfig, TrainConfig
from .model import build_model
from .train import History, train


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The git commit of the tfx checkout (``+dirty`` if it has uncommitted changes),
    else ``tfx <__version__>`` (an installed copy without git)."""
    from . import __version__

    root = Path(__file__).resolve().parents[1]
    try:
        run = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True,  # noqa: E731
                                        timeout=5, check=True).stdout.strip()
        if run("rev-parse", "--show-toplevel") != str(root):
            raise RuntimeError("tfx is not at the top of a git checkout")
        commit = run("rev-parse", "--short=12", "HEAD")
        dirty = bool(run("status", "--porcelain", "--untracked-files=no", "--", "tfx"))
        return commit + ("+dirty" if dirty else "")
    except Exception:  # no git, not a checkout, or a pip-installed copy
        return f"tfx {__version__}"


@dataclass
class Record:
    """One training run of a grid."""

    label: str
    config: ModelConfig
    train_config: TrainConfig
    seed: int
    code_version: str
    device: str
    wall_time: float
    status: str
    history: History = field(repr=False)

    @property
    def final_loss(self) -> float:
        """Mean training loss over the last 10 % of steps (``History.final_loss``)."""
        return self.history.final_loss()

    def to_dict(self) -> dict:
        return {"label": self.label, "config": self.config.to_dict(), "train_config": self.train_config.to_dict(),
                "seed": self.seed, "code_version": self.code_version, "device": self.device,
                "wall_time": self.wall_time, "status": self.status, "history": self.history.to_dict()}

    def __getitem__(self, key):  # records also read like dicts: rec["status"]
        return getattr(self, key)


def run_one(label: str, config: ModelConfig, task, train_cfg: TrainConfig, seed: int = 0,
            init_batch_size: int | None = None) -> Record:
    """Build ``config`` with initial weights from ``seed``, train it on ``task`` with
    ``train_cfg`` (its ``seed`` replaced by ``seed``) and return the Record.

    Initialisers that look at data (Admin's profiling pass) get ``task.batch(0, …)``
    of ``init_batch_size`` sequences (default: the training batch size).
    """
    tc = train_cfg.replace(seed=seed)
    batch = task.batch(0, init_batch_size or tc.batch_size)
    t0 = time.perf_counter()
    model = build_model(config, batch=batch, seed=seed)
    hist = train(model, task, tc)
    wall = time.perf_counter() - t0
    return Record(label=label, config=config, train_config=tc, seed=seed, code_version=code_version(),
                  device=hist.device, wall_time=wall, status=hist.status, history=hist)


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
    """``{label: History}`` for ``tfx.plot.loss_curves``: the run with ``seed``
    (default: each label's first run)."""
    out = {}
    for label, recs in by_label(records).items():
        pick = recs if seed is None else [r for r in recs if r.seed == seed]
        if pick:
            out[label] = pick[0].history
    return out


def summary(records) -> dict:
    """Per label: ``{'statuses': [...], 'final_losses': [...], 'mean_final_loss',
    'n_ok', 'n', 'wall_time'}`` (mean over the runs that did not diverge; nan if none)."""
    out = {}
    for label, recs in by_label(records).items():
        finals = [r.final_loss for r in recs]
        usable = [f for r, f in zip(recs, finals) if r.status != "diverged" and math.isfinite(f)]
        out[label] = {
            "statuses": [r.status for r in recs],
            "final_losses": finals,
            "mean_final_loss": sum(usable) / len(usable) if usable else float("nan"),
            "n_ok": sum(r.status == "ok" for r in recs),
            "n": len(recs),
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
