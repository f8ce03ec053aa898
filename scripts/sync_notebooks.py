"""Give every notebook in book/ the same first cell: on Colab only, install tfx-book
(the distribution that provides `import tfx`) from the repository named in
_config.yml (the one place the URL is written).

    python scripts/sync_notebooks.py          # rewrite the cells
    python scripts/sync_notebooks.py --check  # exit 1 if any notebook is out of date
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
TAG = "colab-setup"


def repository() -> tuple[str, str]:
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    return cfg["repository"]["url"].rstrip("/"), cfg["repository"].get("branch", "main")


# Code lines in the book's notebooks fit in this many characters (tests/test_book.py).
CODE_WIDTH = 88


def setup_source() -> str:
    url, branch = repository()
    src = (
        "# On Colab only: install tfx-book (it provides `import tfx`) from this book's\n"
        "# repository. Colab's own torch is kept (tfx asks for a loose torch range);\n"
        "# elsewhere this does nothing.\n"
        "import subprocess, sys\n"
        "if \"google.colab\" in sys.modules:\n"
        "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\",\n"
        f"                    \"tfx-book @ git+{url}@{branch}\"],\n"
        "                   check=True)"
    )
    too_long = [line for line in src.splitlines() if len(line) > CODE_WIDTH]
    if too_long:
        raise ValueError(f"the Colab setup cell has lines over {CODE_WIDTH} characters "
                         f"(a long repository URL in _config.yml?): {too_long}")
    return src


def setup_cell() -> dict:
    return {"cell_type": "code", "execution_count": None, "id": "colab-setup",
            "metadata": {"tags": [TAG, "remove-cell"]}, "outputs": [], "source": _lines(setup_source())}


def _lines(text: str) -> list:
    """A cell's source as Jupyter saves it: a list of lines, each with its newline."""
    return text.splitlines(keepends=True)


def notebooks():
    return sorted(p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def sync(path: pathlib.Path, check: bool) -> bool:
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    first = cells[0] if cells else None
    has = first is not None and TAG in first.get("metadata", {}).get("tags", [])
    src = "".join(first["source"]) if has else None
    if has and src == setup_source():
        return True
    if check:
        return False
    if has:
        first["source"] = _lines(setup_source())
    else:
        cells.insert(0, setup_cell())
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    stale = [p for p in notebooks() if not sync(p, args.check)]
    for p in stale:
        print(f"{p.relative_to(ROOT)}: first cell is not the Colab setup cell (run scripts/sync_notebooks.py)")
    sys.exit(1 if stale else 0)


if __name__ == "__main__":
    main()
