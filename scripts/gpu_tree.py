"""Stage what a GPU burst needs into a folder a lent GPU machine can carry (``make gpu-tree``).

A lent machine receives a copy of a working tree, 64 MiB at most in all, and this checkout is
larger (its book records alone). ``scripts/gpu_burst.sh`` needs only: the package ``tfx/`` (its
corpora included, ``tfx/runs/corpora``), what builds it with ``--no-deps`` (``pyproject.toml``,
``setup.py``, ``MANIFEST.in``, ``README.md``), ``experiments/``, the script and its wheel list,
and, of ``results/``, the full profile's records (open, sharded and sealed batches:
:func:`tfx.runs.results.files_for`; a burst skips what they hold), ``LINEAGE.jsonl`` (which proves
older records current) and ``gpu-bench.txt`` (its presence skips the bench). Never the book or
quick records, notebooks or build outputs. Run the burst from the staged folder as it is::

    python scripts/gpu_tree.py [DEST]        # default _build/gpu-tree; prints the staged size
    OUT=/tmp/out bash DEST/scripts/gpu_burst.sh

Exit 1, naming the limit, when the staged tree is over 64 MiB.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 64 * 2**20  # bytes a lent machine carries, the tree and every carried folder together
TOP_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "scripts/gpu_burst.sh", "scripts/gpu_wheels.txt")
SKIP = ("__pycache__", ".pyc", ".ipynb", ".ipynb_checkpoints")  # build outputs and notebooks
MARK = ".gpu-tree"  # names a folder this script staged: the only kind it replaces


def _kept(path: Path) -> bool:
    return not any(part in SKIP or part.endswith(SKIP) for part in path.parts)


def wanted(root=ROOT) -> list[str]:
    """The paths, relative to ``root``, that a burst needs (module docstring), sorted."""
    root = Path(root)
    sys.path.insert(0, str(root))
    try:
        from tfx.runs import lineage, results
    finally:
        sys.path.remove(str(root))
    shipped = root / "tfx" / "shipped"  # a build's output, made again when the burst builds the wheel
    paths = {p for p in (root / "tfx").rglob("*")
             if p.is_file() and _kept(p.relative_to(root)) and shipped not in p.parents}
    paths |= {p for p in (root / "experiments").iterdir() if p.is_file() and (p.suffix == ".toml" or p.name == "README.md")}
    paths |= {root / f for f in TOP_FILES}
    for exp in sorted((root / "experiments").glob("*.toml")):
        paths |= set(results.files_for(root / "results", exp.stem, "full"))
    paths |= {p for p in (lineage.ledger_path(root / "results"), root / "results" / "gpu-bench.txt") if p.is_file()}
    missing = [str(p.relative_to(root)) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{root} lacks {', '.join(sorted(missing))}: not a tfx-book checkout")
    return sorted(str(p.relative_to(root)) for p in paths)


def stage(dest, root=ROOT) -> int:
    """Copy :func:`wanted` into ``dest`` (emptied first when an earlier staging made it; any
    other non-empty folder is refused); returns the staged bytes."""
    dest, root = Path(dest), Path(root)
    if dest.exists():
        if any(dest.iterdir()) and not (dest / MARK).is_file():
            raise FileExistsError(f"dest={dest} is a non-empty folder that gpu_tree.py did not stage: name another")
        shutil.rmtree(dest)
    total = 0
    for rel in wanted(root):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
        total += target.stat().st_size
    (dest / MARK).write_text("staged by scripts/gpu_tree.py: what scripts/gpu_burst.sh needs\n", encoding="utf-8")
    return total


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print("usage: python scripts/gpu_tree.py [DEST]   (default _build/gpu-tree)", file=sys.stderr)
        return 2
    dest = Path(args[0]) if args else ROOT / "_build" / "gpu-tree"
    try:
        size = stage(dest)
    except (FileExistsError, FileNotFoundError) as e:
        print(f"gpu_tree: error: {e}", file=sys.stderr)
        return 1
    print(f"gpu_tree: staged {dest}: {size / 2**20:.1f} MiB of {LIMIT / 2**20:.0f} MiB "
          f"(run: OUT=/tmp/out bash {dest}/scripts/gpu_burst.sh)")
    if size > LIMIT:
        print(f"gpu_tree: error: the staged tree is {size / 2**20:.1f} MiB, over the {LIMIT / 2**20:.0f} MiB a lent "
              "GPU machine carries: seal the open full-profile batches (python -m tfx.runs.results seal) or "
              "leave out what the burst does not need", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
