"""Every glued name a chapter's prose uses is glued when nbval runs it, in any profile.

nbval executes each notebook cell by cell (``make test``: the quick profile). A number the
prose reads with ``{glue:text}`name``` but that no cell glued in this profile would break
the book build with ``-W`` in this profile, though not in the one whose outputs are
committed. So after the last cell of each notebook one more test item, ``…::glued names``,
checks the names the cells glued (myst-nb marks each glue output with ``scrapbook``
metadata) against the names the markdown uses.
"""
from __future__ import annotations

import pytest

from tfx.book.notebook import missing_glue


class GluedNames(pytest.Item):
    """Fails, naming them, if the notebook's prose uses glue names its cells did not glue."""

    def __init__(self, *, cells, **kw):
        super().__init__(**kw)
        self.cells = cells

    def runtest(self):
        ran = [c for c in self.cells if getattr(c, "test_outputs", None) is not None]
        if len(ran) < len(self.cells):
            pytest.skip("not every cell ran")
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
