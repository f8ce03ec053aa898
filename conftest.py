"""Every glued name a chapter's prose uses is glued when nbval runs it, in any profile.

nbval executes each notebook cell by cell (``make test``: the quick profile). A number the
prose reads with ``{glue:text}`name``` but that no cell glued in this profile would break
the book build with ``-W`` in this profile, though not in the one whose outputs are
committed. So after the last cell of each notebook one more test item, ``…::glued names``,
checks the names the cells glued (myst-nb marks each glue output with ``scrapbook``
metadata) against the names the markdown uses.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)")
GLUE_DIRECTIVE = re.compile(r"^(?:```|:::)\{glue(?::\w+)?\}\s+(\S+)", re.M)


def used_glue_names(notebook: Path) -> set:
    """The glue names a notebook's markdown cells use."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return set(GLUE_ROLE.findall(text)) | set(GLUE_DIRECTIVE.findall(text))


def glued_names(outputs) -> set:
    return {(o.get("metadata") or {}).get("scrapbook", {}).get("name") for o in outputs or ()} - {None}


class GluedNames(pytest.Item):
    """Fails, naming them, if the notebook's prose uses glue names its cells did not glue."""

    def __init__(self, *, cells, **kw):
        super().__init__(**kw)
        self.cells = cells

    def runtest(self):
        ran = [c for c in self.cells if getattr(c, "test_outputs", None) is not None]
        if len(ran) < len(self.cells):
            pytest.skip("not every cell ran")
        glued = set().union(*(glued_names(c.test_outputs) for c in ran))
        missing = sorted(used_glue_names(self.path) - glued)
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
