"""Build the book with -W from the outputs nbval just produced, not the committed ones.

    python scripts/executed_build.py        # after `pytest` ran the chapters (make test does both)

nbval executes every chapter (``make test``: the quick profile) and the root ``conftest.py``
saves each one, with the outputs of that run, under ``_build/executed/``. This script stages
a copy of the book there (``_build/executed-book/``: the config with execution off, the table
of contents, ``book/`` with those notebooks in place of the committed ones) and builds it with
``-W -n --keep-going``. A Sphinx warning that only executed outputs produce (``glue key '…'
duplicate``, a glued figure no cell made) fails here, while the committed outputs, which
``make book-rendered`` builds, were made before the change that broke them. It executes
nothing: a 20-second build instead of a third execution of every chapter.

Exit status 1 if a chapter has no executed copy, or one older than the chapter, or the build
warns.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = Path(os.environ.get("TFX_EXECUTED_DIR", ROOT / "_build" / "executed"))
STAGE = ROOT / "_build" / "executed-book"
FLAGS = ["-W", "-n", "--keep-going"]


def toc_files(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """Every file the table of contents names (root included), as written there."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    found.append(node[key])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load(toc.read_text(encoding="utf-8")))
    return found


def problems(executed: Path = EXECUTED, root: Path = ROOT) -> list[str]:
    """Why the executed outputs cannot stand for the chapters: one line per chapter of the
    table of contents with no executed copy, or a copy older than the chapter."""
    out = []
    for name in toc_files(root / "_toc.yml"):
        source = root / f"{name}.ipynb"
        if not source.exists():
            continue  # a Markdown page: nothing to execute
        copy = executed / f"{name}.ipynb"
        if not copy.exists():
            out.append(f"{name}.ipynb: no executed copy in {executed} (run `make test`, or pytest over book/)")
        elif copy.stat().st_mtime < source.stat().st_mtime:
            out.append(f"{name}.ipynb: the executed copy is older than the chapter (run pytest over it again)")
    return out


def stage(executed: Path = EXECUTED, stage_dir: Path = STAGE, root: Path = ROOT) -> Path:
    """The book's sources under ``stage_dir`` with the executed notebooks; returns ``stage_dir``."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    shutil.copytree(root / "book", stage_dir / "book", ignore=shutil.ignore_patterns("*.ipynb", "_vendor"))
    (stage_dir / "book" / "_vendor").symlink_to(root / "book" / "_vendor", target_is_directory=True)
    for nb in (executed / "book").glob("*.ipynb"):
        shutil.copy2(nb, stage_dir / "book" / nb.name)
    shutil.copy2(root / "_toc.yml", stage_dir / "_toc.yml")
    cfg = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    cfg.setdefault("execute", {})["execute_notebooks"] = "off"
    (stage_dir / "_config.yml").write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True),
                                           encoding="utf-8")
    return stage_dir


def main() -> int:
    missing = problems()
    if missing:
        print("executed-build: cannot build from executed outputs:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 1
    where = stage()
    jb = Path(sys.executable).with_name("jupyter-book")
    print(f"==> jupyter-book build {where.relative_to(ROOT)} {' '.join(FLAGS)} (outputs nbval just produced)",
          flush=True)
    log = ROOT / "_build" / "executed-book.log"
    r = subprocess.run([str(jb), "build", str(where), *FLAGS], capture_output=True, text=True)
    log.write_text(r.stdout + r.stderr, encoding="utf-8")
    text = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout + r.stderr)  # Sphinx colours its warnings
    warnings = [line for line in text.splitlines() if "WARNING" in line or "ERROR" in line]
    if r.returncode or "build finished with problems" in r.stdout + r.stderr:
        print("executed-build: the book built from executed outputs has warnings (log: "
              f"{log.relative_to(ROOT)}):\n  " + "\n  ".join(warnings[:40]), file=sys.stderr)
        return 1
    print("executed-build: no warnings from the executed outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
