"""Shared test settings."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """The test models are tiny: one thread is as fast, reproducible, and much faster
    on a busy machine (the notebooks do the same through tfx.book.notebook.setup)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
