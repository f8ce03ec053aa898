"""scripts/device_tree.sh: what a lent GPU machine is sent shrinks to what a burst needs, with no
file of the work tree touched, and comes back as it was."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device_tree.sh"


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@t")
    _git(tmp_path, "config", "user.name", "t")
    for rel in ("book/01.ipynb", "results/lm.book.1.jsonl.xz", "results/lm.full.1.jsonl.xz",
                "results/in-progress/x.book.jsonl", "tests/fixtures/a.json", "tfx/__init__.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "x")
    return tmp_path


def _run(repo, verb):
    return subprocess.run(["bash", str(SCRIPT), verb], cwd=repo, capture_output=True, text=True)


def test_shrink_sends_what_a_burst_needs_and_restore_puts_it_back(repo):
    before = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git" not in p.parts)
    r = _run(repo, "shrink")
    assert r.returncode == 0, r.stderr
    sent = set(_git(repo, "ls-files").split()) | set(_git(repo, "ls-files", "--others", "--exclude-standard").split())
    assert sent == {"results/lm.full.1.jsonl.xz", "tfx/__init__.py"}
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if ".git" not in p.parts) == before
    assert "shrunk" in _run(repo, "shrink").stderr  # twice: refused, by name
    assert _run(repo, "restore").returncode == 0
    assert _git(repo, "status", "--porcelain") == ""
    assert len(_git(repo, "ls-files").split()) == 6


def test_shrink_refuses_a_staged_change_and_a_wrong_verb_is_named(repo):
    (repo / "tfx" / "new.py").write_text("x")
    _git(repo, "add", "tfx/new.py")
    r = _run(repo, "shrink")
    assert r.returncode == 2 and "staged changes" in r.stderr
    assert _run(repo, "grow").returncode == 2
