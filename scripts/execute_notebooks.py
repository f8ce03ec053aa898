"""Execute notebooks in place and save their outputs *with widget state*.

The committed outputs are what `make book-rendered` (CI) shows, and saved
widget state is what lets ipywidgets render as a frozen snapshot in the HTML.

    python scripts/execute_notebooks.py               # every book/**/*.ipynb
    python scripts/execute_notebooks.py book/ch1.ipynb

The profile comes from TFX_PROFILE (the book's committed outputs use `book`).
An output that differs from the saved one only in an explorer's random DOM id keeps the
saved bytes (:func:`keep_unchanged`), and widgets whose saved state is the same but for their
random model ids keep the saved ids (:func:`keep_widget_ids`), so a re-run chapter's diff
holds only what changed.
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
VOLATILE = re.compile(r"tfx-explorer-[0-9a-f]{10}")  # tfx.book.explorer.Explorer.html's id


def _text(value) -> str:
    return VOLATILE.sub("tfx-explorer-id", "".join(value) if isinstance(value, list) else str(value))


def keep_unchanged(saved, new) -> int:
    """Put a saved output's value back wherever the new one (same cell id, same place, same
    MIME type) differs from it only in an explorer's random id; returns how many were kept.
    (Each type on its own: a widget's model id must stay the new one, which the notebook's
    saved widget state names.)"""
    before = {c.get("id"): c.get("outputs", []) for c in saved.cells if c.cell_type == "code"}
    kept = 0
    for cell in (c for c in new.cells if c.cell_type == "code"):
        old = before.get(cell.get("id"), [])
        for out, was in zip(cell.get("outputs", []), old):
            for mime, value in out.get("data", {}).items():
                prior = was.get("data", {}).get(mime)
                if prior is not None and prior != value and _text(prior) == _text(value):
                    out["data"][mime] = prior
                    kept += 1
    return kept


WIDGETS = "application/vnd.jupyter.widget-state+json"


def _widget_pairs(saved, new) -> dict:
    """{new model id: saved model id}, paired from the outputs (same cell, same place) down
    through the models each one names (``IPY_MODEL_<id>`` at the same place of its state)."""
    state = lambda nb: nb.metadata.get("widgets", {}).get(WIDGETS, {}).get("state", {})  # noqa: E731
    old_state, new_state, pairs = state(saved), state(new), {}

    def pair(a, b):
        if isinstance(a, str) and isinstance(b, str) and a.startswith("IPY_MODEL_") and b.startswith("IPY_MODEL_"):
            a, b = a[len("IPY_MODEL_"):], b[len("IPY_MODEL_"):]
        elif isinstance(a, dict) and isinstance(b, dict):
            return [pair(a[k], b[k]) for k in a.keys() & b.keys()]
        elif isinstance(a, list) and isinstance(b, list):
            return [pair(x, y) for x, y in zip(a, b)]
        if a in new_state and b in old_state and a not in pairs:
            pairs[a] = b
            pair(new_state[a].get("state", {}), old_state[b].get("state", {}))

    before = {c.get("id"): c.get("outputs", []) for c in saved.cells if c.cell_type == "code"}
    for cell in (c for c in new.cells if c.cell_type == "code"):
        for out, was in zip(cell.get("outputs", []), before.get(cell.get("id"), [])):
            view = "application/vnd.jupyter.widget-view+json"
            if view in out.get("data", {}) and view in was.get("data", {}):
                pair(out.data[view].get("model_id"), was.data[view].get("model_id"))
    return pairs


def keep_widget_ids(saved, new):
    """``new`` with its widgets' random model ids renamed to the saved ones
    (:func:`_widget_pairs`) where that makes the saved widget state identical; else ``new``."""
    rename = _widget_pairs(saved, new)
    if not rename:
        return new
    text = re.sub(r"[0-9a-f]{32}", lambda m: rename.get(m.group(0), m.group(0)), nbformat.writes(new))
    renamed = nbformat.reads(text, as_version=4)
    same = renamed.metadata.get("widgets") == saved.metadata.get("widgets")
    return renamed if same else new


def execute(path: Path, timeout: int = 600) -> float:
    nb = nbformat.read(path, as_version=4)
    saved = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    t0 = time.perf_counter()
    client.execute()
    keep_unchanged(saved, nb)
    nbformat.write(keep_widget_ids(saved, nb), path)
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
