"""tfx.book.notebook's glue readers: what the prose uses against what a run glued."""
import json

import pytest

from tfx.book.notebook import glued_names, missing_glue, used_glue_names


def test_missing_glue_names_what_the_prose_uses_and_no_cell_glued(tmp_path):
    nb = tmp_path / "ch.ipynb"
    nb.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": ["Loss {glue:text}`a:.2f` and {glue:}`b`.\n",
                                             "From another chapter: {glue:text}`04-x.ipynb::c:.2f`.\n",
                                             "```{glue:figure} fig-c\n", "```\n"]},
        {"cell_type": "code", "source": ["glue('a', 1)"], "outputs": []}]}))
    assert used_glue_names(nb) == {"a", "b", "fig-c"}
    outputs = [{"metadata": {"scrapbook": {"name": "a"}}}, {"metadata": {}}, {"output_type": "stream"}]
    assert glued_names(outputs) == {"a"}
    assert missing_glue(nb, outputs) == ["b", "fig-c"]
    assert missing_glue(nb, outputs + [{"metadata": {"scrapbook": {"name": n}}} for n in ("b", "fig-c")]) == []


def test_elapsed_counts_from_setup():
    import time as _time

    from tfx.book import notebook as nbk

    nbk._STARTED.clear()
    with pytest.raises(RuntimeError, match="setup"):
        nbk.elapsed()
    nbk.setup("quick")
    _time.sleep(0.05)
    first = nbk.elapsed()
    assert 0.05 <= first < 5
    nbk.setup("quick")  # a second setup restarts the clock
    assert nbk.elapsed() < first


def test_gpu_pending_names_every_missing_file_and_types_no_estimate():
    import re

    from tfx.book.notebook import gpu_pending

    one, two = gpu_pending(["lm"]), gpu_pending(["warmup", "warmup-fixes"])
    assert "`results/lm.full.jsonl` is missing" in one
    assert "`results/warmup.full.jsonl`, `results/warmup-fixes.full.jsonl` are missing" in two
    assert "scripts/gpu_burst.sh" in one and "make gpu-plan" in one
    assert not re.search(r"\d+(\.\d+)? ?(hours?|minutes?)", one)  # no typed estimate


def _run_cells(sources, tmp_path):
    """Execute ``sources`` (cell sources, in order; a source may repeat an earlier cell by
    index) in a real kernel, as nbval and nbclient do; returns the error text of the first
    failing cell, or '' if all ran."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb = nbformat.v4.new_notebook(cells=cells)
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                       ).execute()
    except CellExecutionError as err:
        return str(err)
    return ""


def test_glue_refuses_a_name_another_cell_glued_and_allows_a_rerun(tmp_path):
    """Issue 39: myst-nb warns 'glue key … duplicate' for a name two cells glue, which fails the
    -W build only when the chapter is executed; glue refuses it in the kernel instead, so nbval
    (any profile) fails on the cell that glues it a second time."""
    pytest.importorskip("myst_nb")
    first = "from tfx.book.notebook import glue\nglue('lg-lr-range', '3e-4 to 3e-1')"
    # a second cell gluing the same name: refused, naming the key and the cell that glued it first
    err = _run_cells([first, "glue('other', 1)\nglue('lg-lr-range', 'again')"], tmp_path)
    assert "DuplicateGlue" in err and "'lg-lr-range'" in err and "another cell" in err
    assert "from tfx.book.notebook import glue" in err  # where it was first glued
    # the same cell gluing one name twice in one run: refused too (myst-nb warns for it as well)
    err = _run_cells(["from tfx.book.notebook import glue\nglue('a', 1)\nglue('a', 2)"], tmp_path)
    assert "DuplicateGlue" in err and "this same run of this cell" in err
    # re-running the cell that glued it (as a reader does interactively): allowed
    assert _run_cells([first, first, "glue('b', 2)"], tmp_path) == ""


def test_glue_check_without_a_kernel_refuses_nothing():
    from tfx.book import notebook as nbk

    nbk._check_new("x", None)
    nbk._check_new("x", None)  # outside a kernel there is no cell to tell apart: nothing refused
    nbk._GLUED.clear()
    nbk._check_new("x", ("cell A", "run 1"))
    nbk._check_new("x", ("cell A", "run 2"))  # a re-run of cell A
    with pytest.raises(nbk.DuplicateGlue, match="another cell"):
        nbk._check_new("x", ("cell B", "run 3"))
    nbk._GLUED.clear()


def test_glue_all_glues_each_value_under_its_prefixed_and_suffixed_name(monkeypatch):
    from tfx.book import notebook

    glued = {}
    monkeypatch.setattr(notebook, "glue", lambda k, v, **_: glued.__setitem__(k, v))
    assert notebook.glue_all({"a": 1, "b": 2}, "x_", "-y") == {"x_a-y": 1, "x_b-y": 2}
    assert glued == {"x_a-y": 1, "x_b-y": 2}
    e = {"exponent": 0.5, "low": 0.4, "high": 0.6}
    assert notebook.interval("k", e) == {"k": 0.5, "k_lo": 0.4, "k_hi": 0.6}
    assert notebook.interval("", e, ("k", "lo", "hi")) == {"k": 0.5, "lo": 0.4, "hi": 0.6}


def test_glue_sizes_states_a_sweeps_size_under_the_names_the_page_uses(monkeypatch):
    from types import SimpleNamespace

    from tfx.book import notebook

    def run(seed, lr, name):
        return SimpleNamespace(seed=seed, wall_time=30.0, point={"lr": name},
                               train_config=SimpleNamespace(lr=lr, steps=300, batch_size=16),
                               config=SimpleNamespace(n_enc=0, n_dec=2, d_model=64))

    recs = [run(s, lr, n) for s in (0, 1) for lr, n in ((3e-3, "3e-3"), (1e-2, "1e-2"))]
    glued = {}
    monkeypatch.setattr(notebook, "glue", lambda k, v, **_: glued.__setitem__(k, v))
    notebook.glue_sizes("lg", recs, "runs", "minutes", "layers:dec", "d:width", "rates", "lr-range")
    assert glued == {"lg-runs": 4, "lg-minutes": 2.0, "lg-layers": 2, "lg-d": 64, "lg-rates": 2,
                     "lg-lr-range": "3e-3 to 1e-2"}
