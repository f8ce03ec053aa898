"""scripts/execute_notebooks.py keeps a re-run chapter's diff to what changed: an explorer's
random DOM id and the widgets' random model ids do not rewrite the saved outputs."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
ex = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ex)

VIEW = "application/vnd.jupyter.widget-view+json"


def _notebook(explorer_id: str, ids: tuple, value: int = 1, title: str = "a sweep"):
    """One cell showing an explorer: its HTML (with ``explorer_id``) and a VBox widget ``ids[0]``
    holding a slider ``ids[1]``, in the saved widget state."""
    box, slider = ids
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("explorer", id="c1")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/html": f'<div id="tfx-explorer-{explorer_id}" data-title="{title}"></div>',
        VIEW: {"model_id": box, "version_major": 2, "version_minor": 0},
        "text/plain": "VBox(...)"})]
    nb.cells = [cell]
    nb.metadata["widgets"] = {ex.WIDGETS: {"state": {
        box: {"model_name": "VBoxModel", "state": {"children": [f"IPY_MODEL_{slider}"]}},
        slider: {"model_name": "IntSliderModel", "state": {"value": value}}},
        "version_major": 2, "version_minor": 0}}
    return nb


SAVED = ("a" * 32, "b" * 32)
RERUN = ("1" * 32, "2" * 32)


def test_an_explorer_that_only_drew_a_new_id_keeps_the_saved_html():
    saved, new = _notebook("0123456789", SAVED), _notebook("fedcba9876", RERUN)
    assert ex.keep_unchanged(saved, new) == 1
    assert new.cells[0].outputs[0].data["text/html"] == saved.cells[0].outputs[0].data["text/html"]
    assert new.cells[0].outputs[0].data[VIEW]["model_id"] == RERUN[0]  # the widget's is its own


def test_an_explorer_whose_content_changed_keeps_the_new_html():
    saved, new = _notebook("0123456789", SAVED), _notebook("fedcba9876", RERUN, title="another")
    assert ex.keep_unchanged(saved, new) == 0
    assert "fedcba9876" in new.cells[0].outputs[0].data["text/html"]


def test_widgets_with_the_same_state_keep_their_saved_model_ids():
    saved, new = _notebook("0123456789", SAVED), _notebook("0123456789", RERUN)
    kept = ex.keep_widget_ids(saved, new)
    assert kept.metadata["widgets"] == saved.metadata["widgets"]
    assert kept.cells[0].outputs[0].data[VIEW]["model_id"] == SAVED[0]


def test_widgets_whose_state_changed_keep_the_new_ids():
    saved, new = _notebook("0123456789", SAVED), _notebook("0123456789", RERUN, value=2)
    assert ex.keep_widget_ids(saved, new) is new
