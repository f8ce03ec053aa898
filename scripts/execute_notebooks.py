"""Execute notebooks in place and save their outputs *with widget state*.

The committed outputs are what `make book-rendered` (CI) shows, and saved
widget state is what lets ipywidgets render as a frozen snapshot in the HTML.

    python scripts/execute_notebooks.py               # every book/**/*.ipynb
    python scripts/execute_notebooks.py book/ch1.ipynb

The profile comes from TFX_PROFILE (the book's committed outputs use `book`).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path, timeout: int = 600) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    t0 = time.perf_counter()
    client.execute()
    nbformat.write(nb, path)
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(
        p for p in (ROOT / "book").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts
    )
    for p in paths:
        print(f"{p}: ", end="", flush=True)
        print(f"{execute(p):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
