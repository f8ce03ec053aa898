"""Every glued name a chapter's prose uses is glued when nbval runs it, in any profile.

nbval executes each notebook cell by cell (``make test``: the quick profile). A number the
prose reads with ``{glue:text}`name``` but that no cell glued in this profile would break
the book build with ``-W`` in this profile, though not in the one whose outputs are
committed. So after the last cell of each notebook one more test item, ``…::glued names``,
checks the names the cells glued (myst-nb marks each glue output with ``scrapbook``
metadata) against the names the markdown uses, and saves the notebook with the outputs this
run produced under ``_build/executed/`` (``TFX_EXECUTED_DIR`` to move it): ``make test`` then
builds the book from those outputs with ``-W`` (``scripts/executed_build.py``), so a Sphinx
warning only executed outputs produce (a duplicate glue key, say) fails CI without executing
the chapters a third time.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import pytest

from tfx.book.notebook import missing_glue

ROOT = Path(__file__).resolve().parent
EXECUTED = Path(os.environ.get("TFX_EXECUTED_DIR", ROOT / "_build" / "executed"))


def save_executed(path: Path, cells) -> Path:
    """Write the notebook at ``path`` with each nbval item's outputs of this run (its cells
    otherwise as committed) to the same relative path under :data:`EXECUTED`."""
    ran = {id(c.cell): c.test_outputs for c in cells}
    nb = cells[0].parent.nb
    out = copy.deepcopy(nb)
    for cell, mine in zip(out.cells, nb.cells):
        if id(mine) in ran:
            cell.outputs = ran[id(mine)]
            for o in cell.outputs:
                if o.get("output_type") == "execute_result":
                    o.setdefault("execution_count", None)
    path = Path(path).resolve()
    target = EXECUTED / (path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(out, str(target))
    return target


class GluedNames(pytest.Item):
    """Fails, naming them, if the notebook's prose uses glue names its cells did not glue."""

    def __init__(self, *, cells, **kw):
        super().__init__(**kw)
        self.cells = cells

    def runtest(self):
        ran = [c for c in self.cells if getattr(c, "test_outputs", None) is not None]
        if len(ran) < len(self.cells):
            pytest.skip("not every cell ran")
        save_executed(self.path, self.cells)
        missing = missing_glue(self.path, [o for c in ran for o in c.test_outputs])
        assert not missing, (f"{self.path.name}: the prose uses glue names no cell glued in this profile: "
                             f"{', '.join(missing)}")

    def reportinfo(self):
        return self.path, None, "glued names"


def pytest_collection_modifyitems(session, config, items):
    by_notebook: dict = {}
    for item in items:
        if type(item).__name__ == "IPyNbCell":
            by_notebook.setdefault(item.path, []).append(item)
    for path, cells in by_notebook.items():
        last = items.index(cells[-1])
        items.insert(last + 1, GluedNames.from_parent(cells[-1].parent, name="glued names", cells=cells))
