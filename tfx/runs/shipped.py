"""What an installed tfx carries for a reader with no checkout (Colab): the experiment files
and the recorded results the chapters read.

A checkout has ``experiments/`` and ``results/`` at its top, and they win: a sweep recorded
there shows up at once. A wheel (``pip install "tfx-book @ git+…"``) has no checkout, so its
build copies ``experiments/*.toml`` into ``tfx/shipped/experiments/`` and the recorded
``results/NAME.{book,full}*`` into ``tfx/shipped/results/`` (sealed batches as they are, an
open batch gzipped), with a ``SHA256SUMS`` that :func:`shipped_results`
checks before a chapter reads a byte (``setup.py`` calls :func:`ship`).

Standard library only: the build runs this file without torch.
"""
from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the tfx package
SHIPPED = PACKAGE / "shipped"
SHIPPED_PROFILES = ("book", "full")  # quick records are made by the tests, never shipped
SEALED = ".jsonl.xz"  # tfx.runs.results.SEALED (this file runs without torch, so it cannot import it)


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
    files = sorted({*folder.glob(f"{experiment}.{profile}.*{SEALED}"),
                    *folder.glob(f"{experiment}.{profile}.*.jsonl.gz")})
    sums = _sums(folder)
    for f in files:
        if sums.get(f.name) != _sha256(f):
            raise ShippedDataError(f"shipped results file {f} does not match its checksum in {folder / 'SHA256SUMS'} "
                                   "(a damaged install): reinstall tfx-book, or rerun the sweep into ./results")
    return files


def ship(source_root, dest) -> list[str]:
    """Copy ``source_root``'s experiment files and gzip its book/full results into ``dest``
    (a ``tfx/shipped`` folder of a build), with ``SHA256SUMS``; returns the files written.
    Deterministic: the same inputs give the same bytes (gzip without a time stamp)."""
    source_root, dest = Path(source_root), Path(dest)
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
    lines = []
    for f in sorted((source_root / "results").glob("*.jsonl")) + sorted((source_root / "results").glob(f"*{SEALED}")):
        if f.name.split(".")[1] not in SHIPPED_PROFILES:
            continue
        if f.name.endswith(SEALED):  # a sealed batch: as it is
            target = res_out / f.name
            shutil.copyfile(f, target)
        else:  # an open batch: gzipped (fast; no time stamp: the same bytes)
            target = res_out / (f.name[: -len(".jsonl")] + ".open.jsonl.gz")
            with open(f, "rb") as src, open(target, "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
                shutil.copyfileobj(src, gz)
        lines.append(f"{_sha256(target)}  {target.name}")
        written.append(f"results/{target.name}")
    (res_out / "SHA256SUMS").write_text("".join(line + "\n" for line in lines))
    return written

