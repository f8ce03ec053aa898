"""The book's structure: every chapter is in the table of contents, opens with the
Colab setup cell for this repository, imports tfx (no model defined inline), and
its Colab button (in the built HTML) points at this repository's copy."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import sync_notebooks  # noqa: E402

NOTEBOOKS = sync_notebooks.notebooks()


def _toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", [{"chapters": toc.get("chapters", [])}]):
        files += [c["file"] for c in part["chapters"]]
    return files


def test_every_notebook_is_in_the_toc():
    toc = set(_toc_files())
    for nb in NOTEBOOKS:
        assert str(nb.relative_to(ROOT).with_suffix("")) in toc, f"{nb.name} is not in _toc.yml"


def test_colab_setup_cells_are_in_sync():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_notebooks.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    url, branch = sync_notebooks.repository()
    assert f"\"tfx-book @ git+{url}@{branch}\"" in sync_notebooks.setup_source()  # the distribution, not PyPI's tfx
    assert "torch" not in sync_notebooks.setup_source().split("sys.modules:")[1].replace("torch is kept", "")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_imports_tfx_and_prints_profile(nb):
    cells = json.loads(nb.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert "sys.modules" in code[0]  # Colab only
    assert "tfx.notebook.setup(" in code[1], "second code cell must print profile and device"
    body = "\n".join(code)
    assert not re.search(r"^\s*class \w+\(.*nn\.Module\)", body, re.M), "define models in tfx, not in notebooks"


def test_colab_links_point_at_this_repository():
    html = ROOT / "_build" / "html"
    if not html.exists():
        if os.environ.get("CI"):
            pytest.fail("_build/html is missing: run `make book-rendered` first")
        pytest.skip("_build/html is missing (run `make book-rendered`)")
    url, branch = sync_notebooks.repository()
    slug = url.split("github.com/")[1]
    for nb in NOTEBOOKS:
        rel = nb.relative_to(ROOT)
        page = (html / rel).with_suffix(".html").read_text()
        want = f"https://colab.research.google.com/github/{slug}/blob/{branch}/{rel.as_posix()}"
        assert want in page, f"{rel}: no Colab link to {want}"
