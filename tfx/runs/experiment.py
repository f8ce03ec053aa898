"""Experiments declared one per TOML file in ``experiments/``: the grid, the seeds, the sizes per profile.

    # experiments/warmup.toml
    description = "Does Post-LN need warmup?"
    claims = ["WU-1"]
    seeds = 3                      # or a list: [0, 1, 2]
    checkpoint_every = 100         # steps between checkpoints (default: 5 % of the run)
    budget_cpu_hours = 0.5         # optional: the book profile's estimated cost on one CPU thread
    pending = "why"                # optional: a design listed, not yet run (needs budget_cpu_hours)

    [model]                        # ModelConfig fields shared by every run
    placement = "post"
    [train]                        # TrainConfig fields shared by every run
    schedule = "inverse-sqrt"

    [grid]                         # every combination of the axes, in this order
    train.warmup = [0, 400]        # a field axis: one value per run ("warmup=400")
    [grid.optimizer]               # a named axis: each variant sets any model.*/train.* fields
    Adam = { train.optimizer = "adam" }
    SGD = { train = { optimizer = "sgd", lr = 0.1 } }

    [profiles.quick]               # per profile: seeds, task, model, train, grid (axes replaced by name)
    seeds = 1
    train = { steps = 60 }
    grid.train.warmup = [0, 20]

Each run's settings are layered: the profile's sizes (``tfx.runs.profiles``: width, heads,
steps, lr, batch) < ``[model]``/``[train]`` < ``[profiles.NAME]`` < the grid variant.
``skip = [{ architecture = "Pre-LN", lr = "3e-5" }]`` (top level or per profile) leaves out the
grid points that match every axis of one of its entries (axis name → variant name): a rate that only one architecture's bracket needs, say, is not run for the
others. An entry naming an axis or variant the grid lacks is an error, so a skip cannot
silently do nothing. A run's label joins its variants' names ("warmup=400 · Adam"); ``point`` keeps them
per axis so a chapter can select runs without parsing labels. Every field is checked
when the file is read, for every profile, and an error names the file and the field.

``budget_cpu_hours`` is what the file's book profile is estimated to cost on one CPU thread
(its comment says how it was estimated; ``python -m tfx.sweep … --plan-cpu`` prints each file's
runs still to do and their hours from the recorded wall times, :func:`tfx.runs.cost.cpu_plan`).
A design that costs more than a few days of background sweeps (``FEW_DAYS_CPU_HOURS``) is
never shrunk to fit: it stays listed with ``pending`` saying why, and the page says so.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from ..nn.config import ModelConfig, TrainConfig
from . import shipped
from .profiles import PROFILE_NAMES, get_profile

_TOP = ("name", "description", "claims", "seeds", "task", "checkpoint_every", "budget_cpu_hours", "pending", "skip",
        "model", "train", "grid", "profiles")
# A few days of background sweeps on one CPU thread: a design dearer than this is listed as pending.
FEW_DAYS_CPU_HOURS = 72.0
_PROFILE_KEYS = ("seeds", "task", "checkpoint_every", "skip", "model", "train", "grid")
_SECTIONS = {"model": ModelConfig, "train": TrainConfig}
# Set by the sweep runner, not by an experiment.
_RUNNER_FIELDS = {"train": ("seed", "checkpoint_path", "checkpoint_every", "progress"), "model": ()}
_RUNNER_HINTS = {"seed": " (use `seeds`)", "checkpoint_every": " (use the top-level `checkpoint_every`)"}


@dataclass(frozen=True)
class Run:
    """One point of the grid with one seed: what ``tfx.runs.sweep`` trains."""

    label: str
    point: dict  # {axis: variant name}
    model: dict  # ModelConfig fields (vocabularies and max_len come from the task)
    train: TrainConfig
    seed: int


@dataclass
class Experiment:
    name: str
    path: str
    description: str = ""
    claims: list = field(default_factory=list)
    budget_cpu_hours: float | None = None  # the book profile's estimated cost on one CPU thread
    pending: str = ""  # why the design is listed but not run ('' when it can run)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path) -> "Experiment":
        """Read and check ``path`` (``experiments/NAME``, ``…/NAME.toml``, or just ``NAME``).
        A file that is not there is looked for by name among the experiments of
        :func:`tfx.runs.shipped.experiments_dir` (the checkout's, else the package's), so
        ``Experiment.load("warmup")`` works from a pip install too."""
        p = Path(path)
        if p.suffix != ".toml" and not p.exists():
            p = p.with_suffix(".toml")
        if not p.exists():
            known = shipped.experiments_dir() / p.name
            if not known.is_file():
                raise FileNotFoundError(f"no experiment file {p} (nor {known})")
            p = known
        try:
            raw = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{p}: not valid TOML: {e}") from e
        return cls.from_dict(raw, name=raw.get("name") or p.stem, path=str(p))

    @classmethod
    def from_dict(cls, raw: dict, name: str, path: str = "<dict>") -> "Experiment":
        _check_keys(path, "", raw, _TOP)
        claims = raw.get("claims", [])
        budget, pending = _budget(path, raw)
        exp = cls(name=str(name), path=path, description=str(raw.get("description", "")),
                  claims=[claims] if isinstance(claims, str) else list(claims), budget_cpu_hours=budget,
                  pending=pending, raw=raw)
        profiles = raw.get("profiles", {})
        _check_table(path, "profiles", profiles)
        for prof, table in profiles.items():
            if prof not in PROFILE_NAMES:
                raise ValueError(f"{path}: profiles.{prof} is not a profile; choose one of: {', '.join(PROFILE_NAMES)}")
            _check_table(path, f"profiles.{prof}", table)
            _check_keys(path, f"profiles.{prof}.", table, _PROFILE_KEYS)
        for prof in PROFILE_NAMES:  # every profile's runs must make valid configs, now
            exp.runs(prof)
        return exp

    # ------------------------------------------------------------------ per profile
    def _layer(self, profile: str, key: str, default=None):
        return self.raw.get("profiles", {}).get(profile, {}).get(key, self.raw.get(key, default))

    def seeds(self, profile: str) -> list[int]:
        seeds = self._layer(profile, "seeds", 1)
        where = f"{self.path}: seeds (profile {profile})"
        if isinstance(seeds, bool) or not isinstance(seeds, (int, list)):
            raise ValueError(f"{where} = {seeds!r} must be a number of seeds ≥ 1 or a list of integers")
        out = list(range(seeds)) if isinstance(seeds, int) else seeds
        if not out or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in out):
            raise ValueError(f"{where} = {seeds!r} must be a number of seeds ≥ 1 or a non-empty list of integers ≥ 0")
        if len(set(out)) != len(out):
            raise ValueError(f"{where} = {seeds!r} repeats a seed")
        return out

    def checkpoint_every(self, profile: str, steps: int) -> int:
        """Steps between a run's checkpoints (default: every 5 % of ``steps``)."""
        every = self._layer(profile, "checkpoint_every", max(1, steps // 20))
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"{self.path}: checkpoint_every={every!r} (profile {profile}) must be an integer ≥ 1")
        return every

    def task(self, profile: str) -> str:
        """The task's name: the experiment's, else the profile's (``tfx.runs.profiles``)."""
        task = self._layer(profile, "task")
        if task is None:
            return get_profile(profile, check_task=False).task
        from .data import TASKS

        if task not in TASKS:
            raise ValueError(f"{self.path}: task={task!r} (profile {profile}) is not a task; "
                             f"choose one of: {', '.join(TASKS)}")
        return task

    def grid(self, profile: str) -> dict:
        """``{axis: [(variant name, {'model': {…}, 'train': {…}}), …]}`` for ``profile``."""
        axes = _parse_grid(self.path, "grid", self.raw.get("grid", {}))
        prof = self.raw.get("profiles", {}).get(profile, {})
        axes.update(_parse_grid(self.path, f"profiles.{profile}.grid", prof.get("grid", {})))
        return axes

    def skip(self, profile: str) -> list[dict]:
        """The grid points ``profile`` leaves out: ``[{axis: variant name}, …]``, checked against
        its grid (an unknown axis or variant is an error naming both)."""
        entries = self._layer(profile, "skip", [])
        where = f"{self.path}: skip (profile {profile})"
        if not isinstance(entries, list):
            raise ValueError(f"{where} = {entries!r} must be a list of tables {{axis = variant}}")
        axes = self.grid(profile)
        for entry in entries:
            if not isinstance(entry, dict) or not entry:
                raise ValueError(f"{where}: {entry!r} must be a non-empty table {{axis = variant}}")
            for axis, name in entry.items():
                if axis not in axes:
                    raise ValueError(f"{where}: axis {axis!r} is not in the grid; choose one of: {', '.join(axes)}")
                names = [n for n, _ in axes[axis]]
                if name not in names:
                    raise ValueError(f"{where}: {axis} = {name!r} is not a variant; choose one of: {', '.join(names)}")
        return [dict(e) for e in entries]

    def runs(self, profile: str) -> list[Run]:
        """Every run for ``profile``: the grid's points in order (first axis outermost), seeds innermost."""
        if profile not in PROFILE_NAMES:
            raise ValueError(f"profile={profile!r} is not a profile; choose one of: {', '.join(PROFILE_NAMES)}")
        P = get_profile(profile, check_task=False)
        base = {"model": dict(P.model_kwargs(train=True)),
                "train": {"steps": P.train_steps, "lr": P.train_lr, "batch_size": P.batch_size}}
        for where, layer in (("", self.raw), (f"profiles.{profile}.", self.raw.get("profiles", {}).get(profile, {}))):
            for sec in _SECTIONS:
                base[sec].update(_fields(self.path, f"{where}{sec}", sec, layer.get(sec, {})))
        axes = self.grid(profile)
        seeds = self.seeds(profile)
        self.task(profile)
        self.checkpoint_every(profile, 1)
        skip = self.skip(profile)
        runs = []
        for combo in itertools.product(*[[(axis, name, ov) for name, ov in vs] for axis, vs in axes.items()]):
            if any(all(dict((a, n) for a, n, _ in combo)[a] == n for a, n in entry.items()) for entry in skip):
                continue
            model, train = dict(base["model"]), dict(base["train"])
            for _, _, ov in combo:
                model.update(ov.get("model", {}))
                train.update(ov.get("train", {}))
            label = " · ".join(name for _, name, _ in combo) or self.name
            where = f"{self.path}: run {label!r} (profile {profile})"
            try:
                ModelConfig(**model)
                tc = TrainConfig(**train)
            except (ValueError, TypeError) as e:
                raise ValueError(f"{where}: {e}") from e
            point = {axis: name for axis, name, _ in combo}
            runs += [Run(label, point, model, tc.replace(seed=s), s) for s in seeds]
        labels = [r.label for r in runs]
        if len(set(labels)) * len(seeds) != len(labels):
            raise ValueError(f"{self.path}: two grid points have the same label; name the variants apart")
        return runs


# ---------------------------------------------------------------------- checks
def _budget(path, raw) -> tuple[float | None, str]:
    """``(budget_cpu_hours, pending)`` of an experiment's top level, checked: a budget is a number
    of hours > 0; ``pending`` a non-empty sentence, given with a budget; a budget over
    ``FEW_DAYS_CPU_HOURS`` needs ``pending`` (the design is listed, never shrunk to fit)."""
    budget, pending = raw.get("budget_cpu_hours"), raw.get("pending")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))
                               or not math.isfinite(budget) or budget <= 0):
        raise ValueError(f"{path}: budget_cpu_hours={budget!r} must be a number of CPU-hours > 0")
    if pending is not None:
        if not isinstance(pending, str) or not pending.strip():
            raise ValueError(f"{path}: pending={pending!r} must be a sentence saying why the design is not run yet")
        if budget is None:
            raise ValueError(f"{path}: pending needs budget_cpu_hours (what the design would cost)")
    if budget is not None and budget > FEW_DAYS_CPU_HOURS and pending is None:
        raise ValueError(f"{path}: budget_cpu_hours={budget:g} is more than a few days of background sweeps "
                         f"({FEW_DAYS_CPU_HOURS:g} CPU-hours): list the design with pending = \"why\"; never shrink it to fit")
    return (None if budget is None else float(budget)), (pending or "").strip()


def _check_table(path, where, value):
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {where} must be a table, got {value!r}")


def _check_keys(path, prefix, table, allowed):
    for k in table:
        if k not in allowed:
            raise ValueError(f"{path}: {prefix}{k} is not a field here; allowed: {', '.join(allowed)}")


def _fields(path, where, section, table) -> dict:
    """``table`` checked as fields of ModelConfig ('model') or TrainConfig ('train')."""
    _check_table(path, where, table)
    names = [f.name for f in dataclasses.fields(_SECTIONS[section])]
    for k in table:
        if k in _RUNNER_FIELDS[section]:
            raise ValueError(f"{path}: {where}.{k} is set by the sweep runner{_RUNNER_HINTS.get(k, '')}")
        if k not in names:
            raise ValueError(f"{path}: {where}.{k} is not a {_SECTIONS[section].__name__} field; "
                             f"choose from: {', '.join(names)}")
    return dict(table)


def _overrides(path, where, table) -> dict:
    _check_table(path, where, table)
    _check_keys(path, f"{where}.", table, tuple(_SECTIONS))
    return {sec: _fields(path, f"{where}.{sec}", sec, table[sec]) for sec in table}


def _parse_grid(path, where, grid) -> dict:
    """Field axes (``train.lr = [..]``) and named axes (``[grid.NAME]`` of variants)."""
    _check_table(path, where, grid)
    axes = {}
    for key, value in grid.items():
        _check_table(path, f"{where}.{key}", value)
        if key in _SECTIONS:
            for fname, values in _fields(path, f"{where}.{key}", key, value).items():
                if not isinstance(values, list) or not values:
                    raise ValueError(f"{path}: {where}.{key}.{fname} must be a non-empty list of values, "
                                     f"got {values!r}")
                axes[f"{key}.{fname}"] = [(f"{fname}={v}", {key: {fname: v}}) for v in values]
        else:
            if not value:
                raise ValueError(f"{path}: {where}.{key} has no variants")
            axes[key] = [(str(name), _overrides(path, f"{where}.{key}.{name}", ov)) for name, ov in value.items()]
    return axes
