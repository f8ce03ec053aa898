"""scripts/gpu_burst.sh end to end on a CPU: the wheel install from a carried folder (a wheel of
this checkout, and a missing module installed from its wheel), the bench, a fixture plan within
its budget into a temporary OUT, and a second burst that finds every run recorded. No network.
Also: scripts/gpu_wheels.txt lists what the sweep and the bench import beyond torch and numpy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from tfx.runs import results

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_burst.sh"
TINY_BENCH = "--size custom --d-model 16 --heads 2 --layers 1 --batch 4 --length 8 --vocab 50 --rounds 2 --no-compile"
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_wheels  # noqa: E402


pytestmark = pytest.mark.long_file  # a minute or more: collected first (pytest.ini)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """A carried folder: this checkout's wheel, and the wheel of a module the interpreter lacks."""
    folder = tmp_path_factory.mktemp("wheels")
    gpu_wheels.build_tfx_wheel(folder)
    src = tmp_path_factory.mktemp("probe")
    (src / "pyproject.toml").write_text(textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=64"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "tfx-burst-probe"
        version = "0.1"
        [tool.setuptools]
        py-modules = ["tfx_burst_probe"]
        """))
    (src / "tfx_burst_probe.py").write_text("OK = True\n")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(folder), str(src)], check=True, capture_output=True)
    return folder


def burst(tmp_path, wheels, out, records, **env):
    wl = tmp_path / "wheel-list.txt"
    wl.write_text("tqdm==4.70.1 tqdm\ntfx-burst-probe==0.1 tfx_burst_probe\n")
    e = {**os.environ, "OUT": str(out), "PYTHON": sys.executable, "WHEELS": str(wheels), "WHEEL_LIST": str(wl),
         "EXPERIMENTS": "warmup-fixes", "FIXTURE": "1", "JOBS": "1", "MINUTES": "8", "RECORDS": str(records),
         "BENCH": "never", "OMP_NUM_THREADS": "1", "PIP_NO_INDEX": "1", **env}
    return subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=900)


def test_a_burst_installs_from_carried_wheels_runs_the_bench_and_a_fixture_plan(tmp_path, wheels):
    out, records = tmp_path / "out", tmp_path / "records"
    records.mkdir()
    r = burst(tmp_path, wheels, out, records, BENCH="always", BENCH_ARGS=TINY_BENCH,
              BENCH_ARGS_16K=TINY_BENCH + " --train-steps 0")
    log = (out / "gpu-burst.log").read_text()
    assert r.returncode == 0, log + r.stderr
    assert "tqdm: the machine's own" in log  # importable: kept, not installed
    assert "tfx_burst_probe: from tfx_burst_probe-0.1" in log.replace("tfx-burst-probe", "tfx_burst_probe")
    assert "tfx-book installed from tfx_book-0.1.0-py3-none-any.whl: code" in log
    assert "tfx/torch speed ratio" in (out / "bench.txt").read_text()
    assert "plan (profile full" in log and "every planned run is recorded" in log
    with tarfile.open(out / "results.tar.gz") as tar:  # every run recorded: one sealed batch
        [name] = tar.getnames()
        assert name.startswith("results/warmup-fixes.full.") and name.endswith(results.SEALED)
        tar.extractall(tmp_path / "next", filter="data")
    lines = [line for _, line in results.lines(tmp_path / "next" / name)]
    assert len(lines) == 15 and all('"fixture":true' in ln for ln in lines)
    assert sorted(p.name for p in out.iterdir()) == ["bench.txt", "gpu-burst.log", "results.tar.gz"]

    # the next burst, with those records in the tree and no wheel of tfx-book carried (built from
    # the tree): nothing to train, nothing new, no bench (BENCH=never)
    no_tfx = tmp_path / "no-tfx"
    no_tfx.mkdir()
    for w in wheels.glob("tfx_burst_probe-*.whl"):
        (no_tfx / w.name).write_bytes(w.read_bytes())
    out2 = tmp_path / "out2"
    r = burst(tmp_path, no_tfx, out2, tmp_path / "next" / "results")
    log = (out2 / "gpu-burst.log").read_text()
    assert r.returncode == 0, log
    assert "tfx-book installed from this tree: code" in log
    assert "15 already recorded" in log and "no new records" in log
    assert sorted(p.name for p in out2.iterdir()) == ["gpu-burst.log"]


def test_a_burst_says_what_is_missing(tmp_path, wheels):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = burst(tmp_path, empty, tmp_path / "o1", tmp_path)
    assert r.returncode == 2 and "has no wheel of tfx-burst-probe==0.1" in r.stdout + r.stderr
    only_tfx = tmp_path / "only-tfx"
    only_tfx.mkdir()
    for w in wheels.glob("tfx_book-*.whl"):
        (only_tfx / w.name).write_bytes(w.read_bytes())
    r = burst(tmp_path, only_tfx, tmp_path / "o2", tmp_path)
    assert r.returncode == 2 and "cannot import tfx_burst_probe" in r.stdout + r.stderr
    for env, name in (({"JOBS": "0"}, "JOBS=0"), ({"ENSEMBLE": "0"}, "ENSEMBLE=0"), ({"BENCH": "sometimes"}, "BENCH=sometimes"),
                      ({"EXPERIMENTS": "nope"}, "no experiments/nope.toml"), ({"MINUTES": "nine"}, "MINUTES=nine"),
                      ({"CUDA_TESTS": "yes"}, "CUDA_TESTS=yes")):
        r = burst(tmp_path, wheels, tmp_path / "o3", tmp_path, **env)
        assert r.returncode == 2 and name in r.stdout + r.stderr, (env, r.stdout + r.stderr)
    r = subprocess.run(["bash", str(SCRIPT)], env={k: v for k, v in os.environ.items() if k != "OUT"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "OUT is not set" in r.stderr


def test_the_wheel_list_is_what_the_sweep_and_the_bench_import(tmp_path):
    """Every third-party distribution a fixture sweep (translation with BLEU, an LM with probes)
    and the bench import, beyond torch, numpy and what torch itself brings, is in the list."""
    code = textwrap.dedent(f"""
        import sys, importlib.metadata as md
        from tfx.runs import sweep, bench
        sweep.main(["experiments/translation", "experiments/lm", "--profile", "full", "--fixture",
                    "--results", {str(tmp_path)!r}, "--shard", "0/8"])
        bench.main({TINY_BENCH.split() + ["--train-steps", "0"]!r})
        tops = {{m.split(".")[0] for m in sys.modules}} - set(sys.stdlib_module_names)
        dists = md.packages_distributions()
        print(*sorted({{d.lower() for t in tops for d in dists.get(t, [])}}))
        """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    imported = set(r.stdout.strip().splitlines()[-1].split())
    torch_brings = {"torch", "numpy", "sympy", "mpmath", "typing-extensions", "typing_extensions", "filelock", "jinja2",
                    "markupsafe", "networkx", "fsspec", "setuptools", "triton",
                    "wcwidth"}  # wcwidth: tabulate's, optional
    listed = {req.split("==")[0].lower() for req, _ in gpu_wheels.wanted()}
    assert imported - torch_brings - {"tfx-book"} <= listed, imported - torch_brings - listed
    assert "scipy" not in imported and "matplotlib" not in imported and "ipywidgets" not in imported


def test_the_wheel_list_names_a_bad_line(tmp_path):
    bad = tmp_path / "list.txt"
    bad.write_text("# fine\ntqdm tqdm\n")
    with pytest.raises(ValueError, match=r"list.txt:2: 'tqdm tqdm' must be"):
        gpu_wheels.wanted(bad)


def test_ensemble_trains_compatible_runs_as_one_program_and_the_records_say_so(tmp_path, wheels):
    """ENSEMBLE reaches the sweep (tfx.sweep --ensemble): warmup-fixes-noisy's runs (no dropout,
    no probes) train five seeds at a time and each record says so. (The GPU plan's experiments
    cannot be ensembled yet: the translation ones use dropout, the language models probes.)"""
    out, records = tmp_path / "out", tmp_path / "records"
    records.mkdir()
    r = burst(tmp_path, wheels, out, records, EXPERIMENTS="warmup-fixes-noisy", ENSEMBLE="5", CUDA_TESTS="1")
    log = (out / "gpu-burst.log").read_text()
    assert r.returncode == 0, log + r.stderr
    assert "trained in an ensemble of 5" in log
    # CUDA_TESTS=1: the CUDA paths' tests ran first, without the root conftest (here they skip: no CUDA)
    assert "== CUDA tests" in log and "skipped" in log and "CUDA tests exit 0" in log
    assert "ensemble check on cpu (fp32): two ensembles of 2" in log  # checked first, and it passed
    with tarfile.open(out / "results.tar.gz") as tar:
        [name] = tar.getnames()
        tar.extractall(tmp_path / "next", filter="data")
    recs = [json.loads(line) for _, line in results.lines(tmp_path / "next" / name)]
    assert len(recs) == 20 and all(rec["ensemble"]["members"] == 5 for rec in recs)


def test_a_failed_ensemble_check_trains_the_runs_alone_and_says_why(tmp_path, wheels):
    """On a machine where an ensemble cannot train (an H200's SDPA kernels under vmap, 2026-11-30:
    every ensembled run of the burst raised), the check before the sweep fails, the log keeps its
    error, and the burst trains every run alone: records, not lost minutes."""
    python = tmp_path / "python-without-ensembles"
    python.write_text(textwrap.dedent(f"""\
        #!/usr/bin/env bash
        for a in "$@"; do
          [ "$a" = --ensemble-check ] && {{ echo "RuntimeError: LSE is not correctly aligned (strideH)" >&2; exit 1; }}
        done
        exec {sys.executable} "$@"
        """))
    python.chmod(0o755)
    out, records = tmp_path / "out", tmp_path / "records"
    records.mkdir()
    r = burst(tmp_path, wheels, out, records, EXPERIMENTS="warmup-fixes-noisy", ENSEMBLE="5", PYTHON=str(python))
    log = (out / "gpu-burst.log").read_text()
    assert r.returncode == 0, log + r.stderr
    assert "LSE is not correctly aligned (strideH)" in log
    assert "the ensemble check failed on this machine: ENSEMBLE=5 -> 1" in log
    assert "trained in an ensemble" not in log
    with tarfile.open(out / "results.tar.gz") as tar:
        [name] = tar.getnames()
        tar.extractall(tmp_path / "next", filter="data")
    recs = [json.loads(line) for _, line in results.lines(tmp_path / "next" / name)]
    assert len(recs) == 20 and not any(rec.get("ensemble") for rec in recs)
