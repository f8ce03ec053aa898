"""Shared test settings; and tools/ (the checkout's page linter, tools/pagecheck.py: not part
of the installed tfx) on the import path, so tests ``import pagecheck``."""
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
