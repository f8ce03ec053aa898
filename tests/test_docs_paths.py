"""Every path and module the README, CONTRIBUTING and the Makefile name exists (issue 41).

A reader follows these documents first; a path that moved (``tests/test_browser.py`` went to
``tests/book/``) or a module that never existed sends them nowhere. Paths are matched under
the top-level folders of the checkout; a module is a dotted ``tfx.…`` name, imported, with any
trailing attributes looked up on it. Two kinds of name stand for a file by rule, not letter:
``experiments/NAME`` is ``experiments/NAME.toml``, ``results/NAME.PROFILE[.…].jsonl`` is a
record file that exists once that profile has run, so its experiment must exist, and a folder
.gitignore lists is an output a run makes.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "CONTRIBUTING.md", "Makefile")
PATH = re.compile(r"(?<![\w./-])((?:tfx|scripts|tests|tools|book|experiments|results|\.ci)/[\w./*{}-]*[\w*}])")
MODULE = re.compile(r"(?<![\w.])(tfx(?:\.[A-Za-z_]\w*)+)")
PLACEHOLDER = re.compile(r"NAME|NN|slug|STAMP|\{|[A-Z]-of-[A-Z]|-x\b|\bX\b")


def _ignored_outputs() -> set:
    """The folders .gitignore lists: outputs a run makes (``results/checkpoints``), absent from a
    fresh clone by design."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return {line.strip().strip("/") for line in lines if line.strip() and not line.startswith("#")}


def _exists(path: str) -> bool:
    if (ROOT / path).exists():
        return True
    if path.startswith("results/") and path.endswith((".jsonl", ".jsonl.xz")):  # an experiment's records
        return (ROOT / "experiments" / f"{Path(path).name.split('.')[0]}.toml").exists()
    if path.strip("/") in _ignored_outputs():
        return True
    if PLACEHOLDER.search(path) or "*" in path:
        pattern = re.sub(r"(?<!/)\*\*|\*\*(?!/)", "*", PLACEHOLDER.sub("*", path))
        return any(ROOT.glob(pattern))
    if path.startswith("experiments/") and not Path(path).suffix:
        return (ROOT / f"{path}.toml").exists() or (ROOT / path).is_dir()
    return (ROOT / path).exists()


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        try:
            for attr in parts[k:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_document_names_exists(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    missing = sorted({p for p in PATH.findall(text) if not _exists(p.rstrip("."))})
    assert not missing, f"{doc} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_module_a_document_names_resolves(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    missing = sorted({m for m in MODULE.findall(text) if not _resolves(m.rstrip("."))})
    assert not missing, f"{doc} names tfx modules or attributes that do not exist: {missing}"


def test_the_checker_refuses_what_is_not_there():
    assert _exists("tfx/runs/effects.py") and not _exists("tests/test_browser.py")
    assert _exists("experiments/depth") and not _exists("experiments/no-such-sweep")
    assert _exists("results/depth.full.jsonl") and not _exists("results/nothing.book.jsonl")
    assert _resolves("tfx.runs.effects.paired") and not _resolves("tfx.runs.theory")
