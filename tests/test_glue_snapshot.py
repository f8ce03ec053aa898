"""tools/glue_snapshot.py: a refactor's proof that no glued value changed."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "glue_snapshot.py"


def _nb(path: Path, value: str, mime: str = "application/papermill.record/text/plain") -> Path:
    out = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "x", "mime_prefix": ""}},
           "data": {mime: value}}
    nb = {"cells": [{"cell_type": "code", "source": ["glue('x', 1)\n", "y = 2\n"], "outputs": [out],
                     "metadata": {}}, {"cell_type": "markdown", "source": ["text"], "metadata": {}}]}
    path.write_text(json.dumps(nb))
    return path


def _run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True)


def test_a_changed_glued_value_is_named_and_fails(tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(_run(_nb(tmp_path / "a.ipynb", "'0.50'")).stdout)
    after.write_text(_run(_nb(tmp_path / "a.ipynb", "'0.51'")).stdout)
    same = _run("--compare", before, before)
    assert same.returncode == 0 and "0 glued value(s) differ" in same.stdout
    diff = _run("--compare", before, after)
    assert diff.returncode == 1 and " x:" in diff.stdout and "1 glued value(s) differ" in diff.stdout
    # a value glued for display (the plain mime type) is read the same way
    shown = tmp_path / "shown.json"
    shown.write_text(_run(_nb(tmp_path / "a.ipynb", "'0.51'", mime="text/plain")).stdout)
    assert _run("--compare", after, shown).returncode == 0


def test_code_lines_count_only_code_cells(tmp_path):
    got = _run("--code-lines", _nb(tmp_path / "a.ipynb", "1")).stdout
    assert got.split()[0] == "2"
