"""`make gpu-tree` (scripts/gpu_tree.py): the tree a lent GPU machine carries holds what
scripts/gpu_burst.sh needs, fits 64 MiB, and leaves out the book and quick records and notebooks;
and a burst finishes an experiment it started (some runs recorded) before it opens another."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfx.runs import results, sweep
from tfx.runs.experiment import Experiment

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_tree  # noqa: E402


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    dest = tmp_path_factory.mktemp("gpu") / "tree"
    return dest, gpu_tree.stage(dest)


def test_the_staged_tree_has_what_a_burst_needs_under_the_limit(staged):
    dest, size = staged
    assert size <= gpu_tree.LIMIT == 64 * 2**20
    assert size == sum(p.stat().st_size for p in dest.rglob("*") if p.is_file() and p.name != gpu_tree.MARK)
    for rel in ("scripts/gpu_burst.sh", "scripts/gpu_wheels.txt", "pyproject.toml", "setup.py", "MANIFEST.in",
                "README.md", "tfx/__init__.py", "tfx/runs/cost.py", "results/LINEAGE.jsonl", "results/gpu-bench.txt"):
        assert (dest / rel).is_file(), rel
    for name in (p.stem for p in (ROOT / "experiments").glob("*.toml")):
        assert (dest / "experiments" / f"{name}.toml").is_file()
        assert [f.name for f in results.files_for(dest / "results", name, "full")] == \
               [f.name for f in results.files_for(ROOT / "results", name, "full")]
    corpora = ROOT / "tfx" / "runs" / "corpora"
    assert all((dest / p.relative_to(ROOT)).is_file() for p in corpora.rglob("*") if p.is_file())


def test_the_staged_tree_leaves_out_book_and_quick_records_and_notebooks(staged):
    dest, _ = staged
    names = [p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()]
    assert not [n for n in names if n.startswith("results/") and (".book." in n or ".quick." in n)]
    assert not [n for n in names if n.endswith(".ipynb") or "__pycache__" in n or n.startswith(("book/", "tfx/shipped/"))]


def test_the_staged_script_parses_and_the_staged_tfx_imports(staged):
    dest, _ = staged
    assert subprocess.run(["bash", "-n", str(dest / "scripts" / "gpu_burst.sh")]).returncode == 0
    r = subprocess.run([sys.executable, "-c", "import tfx, tfx.runs.cost; print(tfx.__file__)"], cwd=dest,
                       env={**os.environ, "PYTHONPATH": str(dest)}, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve() == (dest / "tfx" / "__init__.py").resolve()


def test_over_the_limit_it_fails_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu_tree, "LIMIT", 1024)
    assert gpu_tree.main([str(tmp_path / "tree")]) == 1
    assert "over the 0 MiB a lent GPU machine carries" in capsys.readouterr().err


def test_it_replaces_only_a_tree_it_staged(tmp_path, capsys):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    assert gpu_tree.main([str(other)]) == 1 and (other / "keep.txt").exists()
    assert "did not stage" in capsys.readouterr().err


def _recorded_line(job, like: dict) -> str:
    """A record line for planned ``job``: a committed full record with the job's key and code."""
    return json.dumps({**like, "key": job["key"], "code_version": sweep.code_version(),
                       "experiment": job["experiment"], "profile": job["profile"]})


def test_a_partly_swept_experiment_comes_first_in_the_plan(tmp_path, capsys):
    """warmup has one run recorded (of 15) in a fresh results folder: --plan (and a budgeted
    sweep, the burst) puts it before lr-sensitivity and warmup-axis, which keep their order."""
    like = json.loads(next(results.lines(results.files_for(ROOT / "results", "warmup-axis", "full")[0]))[1])
    job = sweep.plan(Experiment.load("warmup"), "full", tmp_path)["todo"][0]
    (tmp_path / "warmup.full.jsonl").write_text(_recorded_line(job, like) + "\n")
    names = ["lr-sensitivity", "warmup-axis", "warmup"]
    assert sweep.main([*(f"experiments/{n}" for n in names), "--profile", "full", "--results", str(tmp_path),
                       "--plan", "--jobs", "8"]) == 0
    rows = [ln.split()[0] for ln in capsys.readouterr().out.splitlines() if "runs to do" in ln]
    assert rows == ["warmup", "lr-sensitivity", "warmup-axis"]
    order = sweep.partly_swept_first([Experiment.load(n) for n in names], "full", tmp_path)
    assert [e.name for e in order] == ["warmup", "lr-sensitivity", "warmup-axis"]
