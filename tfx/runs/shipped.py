"""What an installed tfx carries for a reader with no checkout (Colab): the experiment files
and the recorded results the chapters read.

A checkout has ``experiments/`` and ``results/`` at its top, and they win: a sweep recorded
there shows up at once. A wheel (``pip install "tfx-book @ git+…"``) has no checkout, so its
build copies ``experiments/*.toml`` into ``tfx/shipped/experiments/`` and the recorded
``results/NAME.{book,full}*`` into ``tfx/shipped/results/`` (each batch xz-compressed again
without the per-step lists no chapter reads, :data:`UNREAD_HISTORY`, and with its float32
numbers written short, :func:`short_floats`), with a ``SHA256SUMS``
that :func:`shipped_results` checks before a chapter reads a byte (``setup.py`` calls
:func:`ship`). The records in ``results/`` keep every field; only the reader's copy is thinner.

Standard library only: the build runs this file without torch.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import math
import os
import shutil
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the tfx package
SHIPPED = PACKAGE / "shipped"
SHIPPED_PROFILES = ("book", "full")  # quick records are made by the tests, never shipped
SEALED = ".jsonl.xz"  # tfx.runs.results.SEALED (this file runs without torch, so it cannot import it)
# Per-step lists of a record's history that no chapter or module reads (the accuracy and the
# largest |log Z| of every logged step: a quarter of the records' bytes). The wheel's copy
# leaves them out; results/ keeps them. tests/runs/test_shipped.py fails if code names one.
UNREAD_HISTORY = ("acc", "log_z_absmax")
# The history's lists written in float32's shortest form in the wheel's copy (short_floats), so
# the reader rounds them back to float32 (restore_floats)
F32_MARK = "float32_fields"
_F32 = struct.Struct("<f")


def _f32(x: float) -> float:
    """``x`` rounded to the nearest float32, as a Python float."""
    return _F32.unpack(_F32.pack(x))[0]


def _short(x: float) -> float:
    """The float with the fewest significant digits (≤ 9, which always suffice) that rounds to
    the same float32 as ``x``: its JSON text is as short as float32's precision allows."""
    for digits in range(6, 9):
        y = float(f"{x:.{digits}g}")
        if _f32(y) == x:
            return y
    return float(f"{x:.9g}")


def _floats(v):
    """Every float in a (nested) list ``v``: None when ``v`` holds anything but lists and numbers."""
    out = []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, float):
            out.append(x)
        elif isinstance(x, bool) or not isinstance(x, int):
            return None
    return out


def _map_floats(v, fn):
    return [_map_floats(x, fn) for x in v] if isinstance(v, list) else fn(v) if isinstance(v, float) else v


def short_floats(history: dict) -> dict:
    """``history`` with each list whose every float is a float32 value (what the trainer records
    on the device: the loss, ‖g‖, the probes …) written in float32's shortest decimal form
    (0.6402783393859863 → 0.64027834), their names in ``history[F32_MARK]``. Lossless:
    :func:`restore_floats` rounds them back to the very same numbers. Its digits beyond float32's
    are noise to a compressor: this takes about a third off the wheel's records."""
    marked = []
    for name, v in history.items():
        floats = _floats(v) if isinstance(v, list) else None
        if floats and all(not math.isfinite(x) or _f32(x) == x for x in floats):
            history[name] = _map_floats(v, lambda x: _short(x) if math.isfinite(x) else x)
            marked.append(name)
    if marked:
        history[F32_MARK] = marked
    return history


def restore_floats(record: dict) -> dict:
    """A shipped record with its :func:`short_floats` lists rounded back to float32: the numbers
    the trainer recorded, bit for bit (a record without the mark is returned as it is)."""
    history = record.get("history") if isinstance(record, dict) else None
    if isinstance(history, dict) and F32_MARK in history:
        for name in history.pop(F32_MARK):
            history[name] = _map_floats(history[name], lambda x: _f32(x) if math.isfinite(x) else x)
    return record


class ShippedDataError(RuntimeError):
    """A shipped results file that does not match its checksum."""


def checkout_root() -> Path | None:
    """The top of the tfx checkout this code runs from, or None for an installed copy."""
    root = PACKAGE.parent
    return root if (root / "experiments").is_dir() and (root / "pyproject.toml").is_file() else None


def experiments_dir() -> Path:
    """The checkout's ``experiments/``, else the copy shipped in the package."""
    root = checkout_root()
    return root / "experiments" if root else SHIPPED / "experiments"


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _sums(folder: Path) -> dict:
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        return {}
    return {name.strip(): digest for digest, name in
            (line.split(maxsplit=1) for line in sums.read_text().splitlines() if line.strip())}


def shipped_results(experiment: str, profile: str) -> list[Path]:
    """The package's results files of ``experiment`` in ``profile`` (batches and shards),
    each checked against ``SHA256SUMS``; a mismatch raises :class:`ShippedDataError` naming
    the file."""
    folder = SHIPPED / "results"
    if not folder.is_dir():
        return []
    files = sorted(folder.glob(f"{experiment}.{profile}.*{SEALED}"))
    sums = _sums(folder)
    for f in files:
        if sums.get(f.name) != _sha256(f):
            raise ShippedDataError(f"shipped results file {f} does not match its checksum in {folder / 'SHA256SUMS'} "
                                   "(a damaged install): reinstall tfx-book, or rerun the sweep into ./results")
    return files


def _thinned(line: str) -> str:
    """One results line without the :data:`UNREAD_HISTORY` lists, its float32 lists written
    short (:func:`short_floats`; :func:`restore_floats` gives every number back exactly); a
    line that is not whole JSON (a torn write) is kept as it is, for the reader to skip and name."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return line
    history = record.get("history") if isinstance(record, dict) else None
    if isinstance(history, dict):
        for name in UNREAD_HISTORY:
            history.pop(name, None)
        short_floats(history)
    return json.dumps(record, separators=(",", ":")) + "\n"


def _ship_batch(source: Path, target: Path, cache: Path | None = None) -> None:
    """``source`` (a sealed ``.jsonl.xz`` or an open ``.jsonl`` batch) thinned into ``target``
    (``.jsonl.xz``). Deterministic: the same lines give the same bytes, so a ``cache`` folder
    keeps each thinned batch under the hash of what made it (:func:`_cache_key`) and a later
    build copies it instead of thinning again (most of a wheel build's time)."""
    kept = cache / f"{_cache_key(source)}{SEALED}" if cache else None
    if kept:
        try:
            shutil.copyfile(kept, target)
            return
        except FileNotFoundError:  # not kept yet (or removed meanwhile): thin it
            pass
    opened = lzma.open(source, "rt", encoding="utf-8") if source.name.endswith(SEALED) \
        else open(source, encoding="utf-8")
    with opened as f:
        text = "".join(_thinned(line) for line in f)
    target.write_bytes(lzma.compress(text.encode("utf-8"), preset=6))
    if kept:
        cache.mkdir(parents=True, exist_ok=True)
        part = kept.with_name(f"{kept.name}.{os.getpid()}.part")  # two builds at once: whole files only
        shutil.copyfile(target, part)
        os.replace(part, kept)


def _cache_key(source: Path) -> str:
    """What a thinned batch depends on: the batch's bytes and this file (the thinning)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(source.read_bytes())
    return h.hexdigest()


def cache_folder(source_root: Path) -> Path | None:
    """Where :func:`ship` keeps thinned batches between builds: ``$TFX_SHIPPED_CACHE`` ("off":
    nowhere), else ``build/shipped-cache`` of the checkout (ignored by git, like the rest of a
    build)."""
    env = os.environ.get("TFX_SHIPPED_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "off") else Path(env)
    return Path(source_root) / "build" / "shipped-cache"


def ship(source_root, dest, cache="checkout") -> list[str]:
    """Copy ``source_root``'s experiment files and its book/full results into ``dest`` (a
    ``tfx/shipped`` folder of a build), each batch thinned (:func:`_ship_batch`; an open batch
    ``NAME.PROFILE.jsonl`` becomes ``NAME.PROFILE.open.jsonl.xz``), with ``SHA256SUMS``;
    returns the files written. Batches compress on every core (lzma releases the GIL), or come
    from ``cache`` (a folder; None: none; default: :func:`cache_folder`)."""
    source_root, dest = Path(source_root), Path(dest)
    cache = cache_folder(source_root) if cache == "checkout" else cache
    written = []
    exp_out = dest / "experiments"
    shutil.rmtree(exp_out, ignore_errors=True)
    exp_out.mkdir(parents=True, exist_ok=True)
    for f in sorted((source_root / "experiments").glob("*.toml")) + [source_root / "experiments" / "README.md"]:
        if f.is_file():
            shutil.copyfile(f, exp_out / f.name)
            written.append(f"experiments/{f.name}")
    res_out = dest / "results"
    shutil.rmtree(res_out, ignore_errors=True)  # a build folder reused: no file of an older build stays
    res_out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for f in sorted((source_root / "results").glob("*.jsonl")) + sorted((source_root / "results").glob(f"*{SEALED}")):
        if f.name.split(".")[1] not in SHIPPED_PROFILES:
            continue
        name = f.name if f.name.endswith(SEALED) else f.name[: -len(".jsonl")] + ".open" + SEALED
        jobs.append((f, res_out / name))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda job: _ship_batch(*job, cache), jobs))
    (res_out / "SHA256SUMS").write_text("".join(f"{_sha256(target)}  {target.name}\n" for _, target in jobs))
    return written + [f"results/{target.name}" for _, target in jobs]
