"""tfx.book.notebook's glue readers: what the prose uses against what a run glued."""
import json

import pytest

from tfx.book.notebook import glued_names, missing_glue, used_glue_names


def test_missing_glue_names_what_the_prose_uses_and_no_cell_glued(tmp_path):
    nb = tmp_path / "ch.ipynb"
    nb.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": ["Loss {glue:text}`a:.2f` and {glue:}`b`.\n",
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
