"""Shared test settings; and tools/ (the checkout's page linter, tools/pagecheck.py: not part
of the installed tfx) on the import path, so tests ``import pagecheck``."""
import re
import sys
from pathlib import Path

import pytest
import torch

TOOLS = str(Path(__file__).resolve().parents[1] / "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """The test models are tiny: one thread is as fast, reproducible, and much faster
    on a busy machine (the notebooks do the same through tfx.book.notebook.setup)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


_CLAIM_IN_NAME = re.compile(r"(?<![A-Za-z])([A-Z]{2})_(\d+)(?!\d)")


def pytest_collection_modifyitems(items):
    """A claim's tests are named after its id in the underscore form (``test_LN_1_…``, the
    registry's cases ``test_registered_claim_status[LN_1]``), which ``pytest -k LN_1`` selects;
    the id as the book writes it is added as a keyword, so ``pytest -k LN-1`` selects them too.
    The files marked ``long_file`` are collected first, so that no worker starts one last."""
    for item in items:
        for a, n in _CLAIM_IN_NAME.findall(item.name):
            item.extra_keyword_matches.add(f"{a}-{n}")
    # the long files first (pytest.ini's long_file): a stable sort keeps every other order
    items.sort(key=lambda item: item.get_closest_marker("long_file") is None)


@pytest.fixture(scope="module")
def logits_records():
    """The book profile's records of experiments/logits.toml (chapter 15), read once a module."""
    from tfx.runs import results

    recs = results.load("logits", "book")
    if not recs:
        pytest.skip("no book records of experiments/logits.toml")
    return recs
