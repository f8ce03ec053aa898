"""The chapters' "At GPU scale" cells, tested before a GPU has run them.

Fixture records (``tests/fixtures/results/*.full.jsonl``) were made by the full profile's
own pipeline at a tiny size on a CPU (``python -m tfx.sweep experiments/NAME --profile full
--fixture --results tests/fixtures/results``; each record says ``fixture: true``). Here the
chapters that read GPU records run top to bottom in the full profile against them (with
the book profile's CPU records beside them): the GPU cells must draw their tables, label
the records as fixtures, and every glued name the prose uses must be glued, so the day
real records land the chapters build with ``-W``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tfx.book.notebook import missing_glue

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "results"

GPU_CHAPTERS = {"11-warmup-adam.ipynb": ("warmup", "warmup-fixes"),
                "12-depth-with-warmup.ipynb": ("depth", "lr-sensitivity", "warmup-axis", "stability-map"),
                "14-decoder-only-lm.ipynb": ("lm",),
                "15-logits-that-grow.ipynb": ("logits",)}


pytestmark = pytest.mark.long_file  # a minute or more: collected first (pytest.ini)


def test_every_chapter_that_reads_gpu_records_is_tested_here():
    def code(p):
        return "\n".join("".join(c.source) for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code")

    readers = {p.name for p in (ROOT / "book").glob("*.ipynb") if '"full")' in code(p)}
    assert readers == set(GPU_CHAPTERS)


@pytest.mark.parametrize("chapter", sorted(GPU_CHAPTERS))
def test_gpu_cells_draw_fixture_records_in_the_full_profile(chapter, tmp_path, monkeypatch):
    for f in (ROOT / "results").glob("*.book.*jsonl*"):  # open and sealed batches
        shutil.copy(f, tmp_path / f.name)
    for name in GPU_CHAPTERS[chapter]:
        fixture = FIXTURES / f"{name}.full.jsonl"
        assert fixture.exists(), f"no fixture records for {name}: make them with the command in this file's docstring"
        shutil.copy(fixture, tmp_path / fixture.name)
    monkeypatch.setenv("TFX_PROFILE", "full")
    monkeypatch.setenv("TFX_RESULTS", str(tmp_path))
    path = ROOT / "book" / chapter
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    assert "Not yet run on a GPU" not in text
    assert "FIXTURES" in text  # fixture records are labelled, never passed off as results
    missing = missing_glue(path, outputs)
    assert not missing, f"{chapter} in the full profile glues none of: {missing}"
