"""Where finished runs go and how they come back: one JSON line per run, in ``results/``.

    recs = tfx.runs.results.load("warmup", P)      # every run of experiments/warmup.toml in P's profile
    tfx.runs.sweep.summary(recs)                   # the in-process helpers read these Records too

Two kinds of file, read alike (:func:`files_for` finds both, :func:`read` merges them):

* the **open batch** ``NAME.PROFILE.jsonl`` (``NAME.PROFILE.shard-I-of-N.jsonl`` for shard I
  of N), where a running sweep appends. A line is appended in one ``write`` to a file opened
  with ``O_APPEND`` (under an exclusive lock, then fsync), so concurrent writers never
  interleave and a killed sweep leaves whole lines; the reader skips, with a warning, a last
  line that does not parse.
* **sealed batches** ``NAME.PROFILE.STAMP.jsonl.xz``: an open batch compressed once
  (:func:`seal`, which a sweep calls when it has recorded all its runs) and never written
  again. xz (the standard library's ``lzma``) keeps JSON lines at about a quarter of their
  size; a new batch is a new file, so a commit of new records adds files and rewrites none.

The reader keeps one record per run (the newest, when a run was recorded twice). A record
keeps the code version it was made with; :mod:`tfx.runs.lineage` says which older versions
were proven to give the same numbers.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import lzma
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..nn.config import ModelConfig, TrainConfig
from . import shipped
from .outcome import Outcome, judge, rejudge
from .train import History

try:
    import fcntl
except ImportError:  # Windows: O_APPEND alone
    fcntl = None


class RecordError(ValueError):
    """A results line that is whole JSON but not a valid record (a schema that moved on)."""


@dataclass
class Record:
    """One training run: what ran (label, configs, seed, task), where and with which code
    (device, AMP dtype, code version), how long it took and how it ended (status, reason,
    the full History, BLEU where measured). File-backed sweeps also fill in the experiment,
    its profile, the grid point and the keys that identify the run."""

    label: str
    config: ModelConfig
    train_config: TrainConfig
    seed: int
    code_version: str
    device: str
    wall_time: float
    status: str
    history: History = field(repr=False)
    reason: str = ""
    task: str = ""
    amp_dtype: str | None = None  # torch's name of the precision (e.g. 'bfloat16'; tfx.runs.sweep._amp_dtype)
    bleu: float | None = None
    experiment: str = ""
    profile: str = ""
    point: dict = field(default_factory=dict)
    index: int = 0  # position in the experiment's list of runs
    run_id: str = ""  # what ran (label, configs, seed, task, experiment, profile)
    key: str = ""  # run_id and the code version: a rerun skips a key already recorded
    finished_at: str = ""  # UTC, ISO 8601
    device_name: str = ""  # the accelerator's own name ('NVIDIA H200', torch.cuda.get_device_name); '' on a CPU
    fixture: bool = False  # a tiny CPU stand-in made to test a chapter's cells (sweep --fixture), never a result
    # earlier code versions this record was carried forward from (tfx.runs.carry): each
    # {"code_version", "key", "checked_on", "checked"}, where "checked" names the sampled runs
    # that were retrained under the new code and matched their records bit for bit
    carried_from: list = field(default_factory=list)
    # how it ran: {} alone; {"members": K, "index": i} as member i of an ensemble of K runs trained
    # as one program (tfx.runs.ensemble; wall_time then the ensemble's time / K)
    ensemble: dict = field(default_factory=dict)

    @property
    def final_loss(self) -> float:
        """Mean training loss over the last 10 % of steps (``History.final_loss``)."""
        return self.history.final_loss()

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d.update(config=self.config.to_dict(), train_config=self.train_config.to_dict(),
                 history=self.history.to_dict())
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        """The inverse of ``to_dict``; fields this version of tfx does not know are dropped,
        so old and new records read alike."""
        d = dict(d)
        d["config"] = ModelConfig(**_known(ModelConfig, d["config"]))
        d["train_config"] = TrainConfig(**_known(TrainConfig, d["train_config"]))
        d["history"] = History(**_known(History, d["history"]))
        rejudge(d["history"])  # one outcome rule, whatever rule was current when it ran
        d["status"], d["reason"] = d["history"].status, d["history"].reason
        return cls(**_known(cls, d))

    @property
    def outcome(self) -> Outcome:
        """How the run ended, by the book's one rule (:func:`tfx.runs.outcome.judge`)."""
        return judge(self.history)

    def __getitem__(self, key):  # records also read like dicts: rec["status"]
        return getattr(self, key)


def _known(cls, d: dict) -> dict:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


# ---------------------------------------------------------------------- files
def default_dir() -> Path:
    """``$TFX_RESULTS``, else ``results/`` at the top of the tfx checkout, else ``./results``."""
    if os.environ.get("TFX_RESULTS"):
        return Path(os.environ["TFX_RESULTS"])
    root = shipped.checkout_root()
    return root / "results" if root else Path.cwd() / "results"


SEALED = ".jsonl.xz"  # a sealed batch's suffix


def path_for(results_dir, experiment: str, profile: str, shard: tuple[int, int] | None = None) -> Path:
    """The open batch a sweep appends to: ``DIR/NAME.PROFILE.jsonl``, or
    ``DIR/NAME.PROFILE.shard-I-of-N.jsonl`` for shard I of N."""
    tail = "" if shard is None or shard[1] == 1 else f".shard-{shard[0]}-of-{shard[1]}"
    return Path(results_dir) / f"{experiment}.{profile}{tail}.jsonl"


def files_for(results_dir, experiment: str, profile: str) -> list[Path]:
    """Every results file of ``experiment`` in ``profile``: its sealed batches and its open
    ones (the unsharded file and all shards)."""
    d = Path(results_dir)
    return sorted({*d.glob(f"{experiment}.{profile}.jsonl"), *d.glob(f"{experiment}.{profile}.shard-*-of-*.jsonl"),
                   *d.glob(f"{experiment}.{profile}.*{SEALED}")})


def lines(path):
    """``(line number, text)`` of every non-empty line of a results file: an open batch
    (``.jsonl``), a sealed one (``.jsonl.xz``) or a shipped copy (``.jsonl.gz``). A sealed
    file that does not decompress raises :class:`RecordError` naming it (it was written whole,
    so it was damaged since: restore it from git, or set it aside and rerun the sweep)."""
    path = Path(path)
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    yield n, line
    except (lzma.LZMAError, EOFError, gzip.BadGzipFile) as e:
        raise RecordError(f"{path}: a damaged compressed results file ({type(e).__name__}: {e}); restore it "
                          "(git checkout) or move it aside and rerun the sweep: nothing was read from it") from e


def append(path, record) -> None:
    """Append ``record`` (a Record or its dict) to the open batch ``path`` as one JSON line,
    atomically."""
    if str(path).endswith(SEALED):
        raise ValueError(f"path={str(path)!r}: a sealed batch is never written again; append to an open "
                         "batch (results.path_for)")
    d = record.to_dict() if isinstance(record, Record) else record
    line = (json.dumps(d, separators=(",", ":")) + "\n").encode("utf-8")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # other processes appending to the same file wait
                try:
                    if os.fstat(fd).st_ino != os.stat(path).st_ino:
                        continue  # rewritten (:func:`rewrite`) while we waited: append to the new file
                except FileNotFoundError:
                    continue  # sealed (:func:`seal`) while we waited: start a new open batch
            written = os.write(fd, line)  # one write: a kill leaves the whole line or none of it
            if written != len(line):
                raise OSError(f"short write to {path}: {written} of {len(line)} bytes")
            os.fsync(fd)
            return
        finally:
            os.close(fd)  # closing releases the lock


def sealed_name(path, data: bytes) -> Path:
    """Where :func:`seal` puts open batch ``path`` holding ``data``:
    ``NAME.PROFILE[.shard-I-of-N].STAMP.jsonl.xz``, STAMP the newest record's finish time and
    the content's hash (the same records give the same name)."""
    path = Path(path)
    newest = max((json.loads(x).get("finished_at", "") for x in data.decode("utf-8").splitlines() if is_whole(x)),
                 default="")
    when = "".join(ch for ch in newest[:16] if ch.isalnum()) or "undated"  # 2026-11-28T10:30 → 20261128T1030
    stem = path.name[: -len(".jsonl")]
    return path.with_name(f"{stem}.{when}Z-{hashlib.sha256(data).hexdigest()[:8]}{SEALED}")


def seal(path) -> Path | None:
    """Compress the open batch ``path`` into a sealed one (:func:`sealed_name`) and remove it,
    under the lock :func:`append` takes: an append waiting meanwhile starts a new open batch.
    The sealed file is written to a temporary name, read back and compared with the batch
    before it takes its name and the batch is removed, so a kill loses nothing. Returns the
    sealed file, or None (nothing to seal: the batch is absent or empty, or its last line is
    torn, which is left for a person to look at, with a warning)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None  # absent, or sealed by another sweep a moment ago
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino != os.stat(path).st_ino:
                return None  # sealed and started anew while we waited: the new batch is another's
        except FileNotFoundError:
            return None  # sealed by another sweep while we waited
        data = path.read_bytes()
        if not data.strip():
            path.unlink()
            return None
        if not all(is_whole(x) for x in data.decode("utf-8").splitlines() if x.strip()):
            warnings.warn(f"{path}: a line is not whole JSON (a torn write?): left open, not sealed")
            return None
        target = sealed_name(path, data)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(lzma.compress(data, preset=9))
        if lzma.decompress(tmp.read_bytes()) != data:
            tmp.unlink()
            raise OSError(f"{tmp}: the sealed copy of {path} does not read back equal; {path} is kept")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
        path.unlink()
        return target
    finally:
        os.close(fd)


def seal_all(results_dir, experiment: str, profile: str) -> list[Path]:
    """Seal every open batch of ``experiment`` in ``profile`` (:func:`seal`); returns the new files."""
    d = Path(results_dir)
    opened = sorted({*d.glob(f"{experiment}.{profile}.jsonl"), *d.glob(f"{experiment}.{profile}.shard-*-of-*.jsonl")})
    return [s for s in map(seal, opened) if s is not None]


def is_whole(line: str) -> bool:
    """Whether ``line`` is whole JSON (not a write cut off by a kill)."""
    try:
        json.loads(line)
        return True
    except json.JSONDecodeError:
        return False


def rewrite(path, change) -> int:
    """Replace each record dict ``d`` of ``path`` by ``change(d)`` (the same dict when it
    returns None), under the lock :func:`append` takes, through a temporary file renamed over
    the old one: a kill leaves the old file or the new one, and an append waiting meanwhile
    goes to the new file. Torn lines are kept as they are. Returns how many lines changed."""
    path = Path(path)
    if path.name.endswith(SEALED):
        raise ValueError(f"path={str(path)!r}: a sealed batch is never rewritten (a record is judged anew "
                         "when read, and its lineage lives in tfx.runs.lineage)")
    fd = os.open(path, os.O_RDWR)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        lines, changed = path.read_text(encoding="utf-8").splitlines(keepends=True), 0
        out = []
        for line in lines:
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                out.append(line)
                continue
            new = change(d)
            if new is not None and new != d:
                changed += 1
                line = json.dumps(new, separators=(",", ":")) + "\n"
            out.append(line)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(out)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return changed
    finally:
        os.close(fd)


def rejudge_file(path) -> int:
    """Store in every record of ``path`` the outcome the current rule gives it (status and
    reason, top level and in the history), through :func:`rewrite`: a record read is judged
    anew anyway (:meth:`Record.from_dict`), and this keeps the file saying the same. Returns
    how many records changed; a sealed batch is left as it is (0)."""
    if Path(path).name.endswith(SEALED):
        return 0

    def change(d):
        rec = Record.from_dict(d)
        h = d.get("history", {})
        now = (rec.status, rec.reason)
        if (d.get("status"), d.get("reason", "")) == now and (h.get("status"), h.get("reason", "")) == now:
            return None
        return {**d, "status": rec.status, "reason": rec.reason,
                "history": {**h, "status": rec.status, "reason": rec.reason}}
    return rewrite(path, change)


def read(paths, dedupe: bool = True) -> list[Record]:
    """Records from one or more results files (open or sealed batches), merged, sorted by their place in the
    experiment. ``dedupe``: one record per run (``run_id``), the most recently finished.
    A line that is not whole JSON (a torn last line) is skipped with a warning naming the file
    and line; a whole JSON line that does not validate as a record raises :class:`RecordError`
    naming them: a record is never dropped in silence."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    recs = []
    for p in paths:
        for n, line in lines(p):
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:  # torn: a write cut off by a kill
                warnings.warn(f"{p}:{n}: skipping a line that is not whole JSON (a torn write? {e.msg})")
                continue
            try:
                recs.append(Record.from_dict(shipped.restore_floats(d)))
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise RecordError(f"{p}:{n}: a whole JSON line that is not a valid record "
                                  f"({type(e).__name__}: {e}); fix or move the file, nothing was read from it") from e
    if dedupe:
        newest: dict = {}
        for r in recs:
            k = r.run_id or r.key or id(r)
            if k not in newest or r.finished_at >= newest[k].finished_at:
                newest[k] = r
        recs = list(newest.values())
    return sorted(recs, key=lambda r: (r.experiment, r.profile, r.index))


def load(experiment: str, profile=None, results_dir=None) -> list[Record]:
    """Every recorded run of ``experiment`` (its name, e.g. ``"warmup"``) in ``profile``
    (a name or a Profile; default: the current one), from all its files (shards merged).

    Read from ``results_dir`` (default :func:`default_dir`); with no ``results_dir`` given and
    nothing recorded there, an install with no checkout reads the results shipped with the
    package (:mod:`tfx.runs.shipped`)."""
    from .profiles import get_profile

    if profile is None or not isinstance(profile, str):
        profile = (profile or get_profile(check_task=False)).name
    folder = results_dir or default_dir()
    if not files_for(folder, experiment, profile) and results_dir is None and shipped.checkout_root() is None:
        files = shipped.shipped_results(experiment, profile)
        return read(files) if files else []
    return read_experiment(folder, experiment, profile)


def read_experiment(results_dir, experiment: str, profile: str, dedupe: bool = True) -> list[Record]:
    """:func:`read` of every results file of ``experiment`` in ``profile`` under ``results_dir``,
    found anew if one vanishes while it is read: another sweep sealed that open batch, and its
    records are in the sealed file that took its place."""
    for _ in range(5):
        try:
            return read(files_for(results_dir, experiment, profile), dedupe=dedupe)
        except FileNotFoundError:
            continue
    return read(files_for(results_dir, experiment, profile), dedupe=dedupe)


def provenance(records) -> str:
    """'device cpu · code 1a2b3c4d5e6f · 2026-11-23' for a set of records (every distinct value);
    a GPU's name beside its device: 'device cuda (NVIDIA H200) · …'."""
    join = lambda xs: ", ".join(sorted({str(x) for x in xs if x})) or "?"  # noqa: E731
    records = list(records)
    label = ("FIXTURES (tiny CPU stand-ins that test this cell; not results) · "
             if any(getattr(r, "fixture", False) for r in records) else "")
    carried = join(c["code_version"] for r in records for c in r.carried_from)
    note = f" (carried forward from {carried}: checked to change no number)" if carried != "?" else ""
    devices = join(f"{r.device} ({r.device_name})" if getattr(r, "device_name", "") else r.device
                   for r in records)
    return label + (f"device {devices} · code {join(r.code_version for r in records)}{note}"
                    f" · {join(r.finished_at[:10] for r in records)}")


def select(records, **point) -> list[Record]:
    """The records whose grid point has every given ``axis=variant`` (axes with a dot, like
    ``train.warmup``, through ``**{"train.warmup": "warmup=0"}``), in seed order."""
    out = [r for r in records if all(r.point.get(k) == v for k, v in point.items())]
    return sorted(out, key=lambda r: r.seed)


def final_eval_loss(r: Record) -> float:
    """The validation loss at the run's last evaluation (NaN if it never evaluated)."""
    return float(r.history.eval_loss[-1]) if r.history.eval_loss else math.nan


def start_loss(rec) -> float:
    """L₀: the loss at step 1, measured before the first update."""
    h = rec.history
    if math.isfinite(getattr(h, "start_loss", math.nan)):
        return h.start_loss
    return h.loss[0] if h.loss and h.step and h.step[0] == 1 else math.nan


def _cell(r: Record, fmt: str, value, marked: bool = True) -> str:
    if r.status == "diverged":
        return f"diverged (step {r.history.diverged_step or '?'})"
    return fmt.format(value(r)) + ("" if r.status == "learned" or not marked else f" ({r.status})")


def _cells(runs, fmt: str, value) -> str:
    """One table cell: every run's number, each not-learned outcome after its number, or once
    at the end when every run of the cell shares it ('(all 5: still learning)')."""
    shared = len(runs) > 1 and len({r.status for r in runs}) == 1 and runs[0].status not in ("learned", "diverged")
    text = " / ".join(_cell(r, fmt, value, marked=not shared) for r in runs)
    return text + (f" (all {len(runs)}: {runs[0].status})" if shared else "")


def axis_name(axis: str) -> str:
    """A grid axis as a table heads it: a path into the config loses its section
    ('train.warmup' → 'warmup'); other axes keep their names ('architecture')."""
    return axis.rsplit(".", 1)[-1]


def table(records, rows: str, cols: str | None, fmt: str = "{:.2f}", value=None) -> str:
    """A Markdown table of one number per run: one row per variant of axis ``rows``, one
    column per variant of axis ``cols`` (in the order the records first show them; None: one
    column, 'every seed', for a sweep of one axis); each cell
    lists every seed's value, 'diverged (step s)' for a diverged run, and after a run that did
    not learn, or has not yet but is still learning, its outcome in brackets, said once for the
    cell when all its runs share it (:mod:`tfx.runs.outcome`; a number alone has learned).
    ``value(record)``: the number shown (default: the held-out loss at the end,
    :func:`final_eval_loss`)."""
    value = value or final_eval_loss
    order = lambda axis: list(dict.fromkeys(r.point.get(axis) for r in records))  # noqa: E731
    row_names, col_names = order(rows), order(cols)  # cols None: every point.get(None) is None
    heads = ["every seed" if cols is None else str(c) for c in col_names]
    lines = [f"| {axis_name(rows)} | " + " | ".join(heads) + " |", "|---" * (len(col_names) + 1) + "|"]
    for rn in row_names:
        cells = [_cells([r for r in select(records, **{rows: rn}) if r.point.get(cols) == cn], fmt, value) or "—"
                 for cn in col_names]
        lines.append(f"| {rn} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m tfx.runs.results seal FILE.jsonl [FILE.jsonl …]``: seal open batches
    (:func:`seal`), printing each sealed file; exit 1 if one could not be sealed."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tfx.runs.results", description=main.__doc__.split("\n")[0])
    ap.add_argument("command", choices=("seal",))
    ap.add_argument("files", nargs="+", type=Path, help="open batches (results/NAME.PROFILE.jsonl)")
    args = ap.parse_args(argv)
    status = 0
    for f in args.files:
        if not f.name.endswith(".jsonl") or not f.is_file():
            print(f"error: {f}: not an open batch (an existing results/NAME.PROFILE.jsonl)")
            status = 1
            continue
        sealed = seal(f)
        print(f"{f} → {sealed}" if sealed else f"{f}: not sealed (see the warning)")
        status |= sealed is None
    return status


if __name__ == "__main__":
    raise SystemExit(main())
