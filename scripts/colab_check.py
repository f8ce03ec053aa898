"""Run every chapter the way a Colab reader does, and test it there with nbval: from a
non-editable install of the built wheel, in a clean virtual environment holding only what
Colab has (torch, numpy, matplotlib, sympy, ipywidgets, ipykernel, at the versions
requirements.txt pins), each notebook executed from an empty folder with no checkout beside
it, in the quick profile.

    python scripts/colab_check.py                 # every notebook in book/ (make colab-check)
    python scripts/colab_check.py book/11-*.ipynb # some

First every module of the installed ``tfx`` is imported in that venv as Colab has it, so a
dependency the wheel forgot to declare fails here. Then the test runner joins it (pytest,
nbval, and myst-nb, whose ``glue`` records the numbers the prose reads; on Colab ``glue`` is a
no-op), and each notebook runs once, under ``pytest --nbval-lax``: it must run top to bottom, the cells
tagged ``nbval-check-output`` must reproduce their committed outputs, and the repository's
``conftest.py`` (copied beside it: it imports only the installed ``tfx``) checks that every
glued name the prose uses was glued and saves the executed notebook under
``_build/executed/book/`` (``TFX_EXECUTED_DIR``), which ``scripts/executed_build.py`` builds
with ``-W``. So ``make test`` executes each chapter once, here, not once for nbval in the
checkout and again for the Colab check.

Exit status 1, naming the notebooks and their failures, if any fails. Uses the machine's
pip (the pinned torch==2.13.0 from requirements.txt; no CUDA download).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLAB = ["numpy", "matplotlib", "sympy", "ipywidgets", "ipykernel"]  # + torch, pinned below
WHEEL_BUDGET_MB = 30  # what a Colab reader downloads: records included (issue 41)
TESTS = ["pytest", "nbval", "myst-nb"]  # the runner, not something a chapter imports
IMPORT_ALL = r"""
import importlib, pkgutil, tfx
for m in pkgutil.walk_packages(tfx.__path__, "tfx."):
    importlib.import_module(m.name)
"""
EXECUTED = Path(os.environ.get("TFX_EXECUTED_DIR", ROOT / "_build" / "executed")) / "book"
# The chapters that took longest here (quick profile, 2 jobs; 2026-11-30: 111 s and 52 s of the
# 5.8 minutes the 25 took): started first, so that the pool does not end on one of them while the
# other job has nothing left. Only the order they start in changes.
LONGEST_FIRST = ("21-when-a-run-breaks.ipynb", "12-depth-with-warmup.ipynb")


def start_order(notebooks: list) -> list:
    """``notebooks`` with those of :data:`LONGEST_FIRST` first, in its order, then the rest in theirs."""
    first = [nb for name in LONGEST_FIRST for nb in notebooks if nb.name == name]
    return first + [nb for nb in notebooks if nb not in first]


def pinned_torch() -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if re.match(r"^torch\s*==", line.strip()):
            return line.split("#")[0].strip()
    raise SystemExit("requirements.txt pins no torch")


def sh(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="*", help="default: book/*.ipynb")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--jobs", type=int, default=1, help="notebooks executed at once (default 1)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        raise SystemExit(f"--jobs={args.jobs} must be an integer ≥ 1")
    notebooks = [Path(n).resolve() for n in args.notebooks] or sorted((ROOT / "book").glob("*.ipynb"))
    work = Path(tempfile.mkdtemp(prefix="tfx-colab-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TFX_RESULTS")}
    try:
        print(f"==> building the wheel into {work}", flush=True)
        sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", work / "wheel", ROOT,
           stdout=subprocess.DEVNULL)
        wheel = next((work / "wheel").glob("tfx_book-*.whl"))
        size_mb = wheel.stat().st_size / 1e6
        print(f"==> {wheel.name}: {size_mb:.1f} MB (budget {WHEEL_BUDGET_MB} MB)", flush=True)
        if size_mb > WHEEL_BUDGET_MB:
            sys.exit(f"colab-check: the wheel is {size_mb:.1f} MB, over its {WHEEL_BUDGET_MB} MB budget (a Colab "
                     "reader downloads it): leave more unread per-step lists out of the shipped records "
                     "(tfx.runs.shipped.UNREAD_HISTORY) or log fewer steps in the sweeps that grew it")
        print("==> a clean venv with what Colab has, then the wheel (non-editable)", flush=True)
        sh(sys.executable, "-m", "venv", work / "venv")
        py = work / "venv" / "bin" / "python"
        pins = ["-c", ROOT / "requirements.txt", "-c", ROOT / "constraints.txt"]
        sh(py, "-m", "pip", "install", "-q", *pins, pinned_torch(), *COLAB, stdout=subprocess.DEVNULL)
        sh(py, "-m", "pip", "install", "-q", wheel, stdout=subprocess.DEVNULL)
        env.update(PATH=f"{py.parent}{os.pathsep}{env.get('PATH', '')}", TFX_PROFILE="quick",
                   MPLBACKEND="Agg", PIP_DISABLE_PIP_VERSION_CHECK="1", TFX_EXECUTED_DIR=str(EXECUTED))
        where = subprocess.run([py, "-c", "import tfx; print(tfx.__file__)"], cwd=work, env=env,
                               capture_output=True, text=True, check=True).stdout.strip()
        assert str(ROOT) not in where, f"tfx imported from the checkout ({where}), not the install"
        print(f"    tfx from {where}", flush=True)
        print("==> every tfx module imports with only what Colab has", flush=True)
        sh(py, "-c", IMPORT_ALL, cwd=work, env=env)
        print("==> the test runner: " + ", ".join(TESTS), flush=True)
        sh(py, "-m", "pip", "install", "-q", *pins, *TESTS, stdout=subprocess.DEVNULL)

        def execute(nb: Path):
            folder = work / "run" / nb.stem  # empty: no checkout, no experiments/, no results/
            folder.mkdir(parents=True)
            shutil.copy(nb, folder / nb.name)
            shutil.copy(ROOT / "conftest.py", folder / "conftest.py")  # the glued-names check
            t0 = time.perf_counter()
            r = subprocess.run([py, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-q",
                                "-p", "no:cacheprovider", nb.name],
                               cwd=folder, env=env, capture_output=True, text=True)
            return nb, r, time.perf_counter() - t0

        from concurrent.futures import ThreadPoolExecutor

        failed = []
        with ThreadPoolExecutor(args.jobs) as pool:  # each notebook its own kernel process
            for nb, r, took in pool.map(execute, start_order(notebooks)):
                ok = r.returncode == 0
                print(f"{'ok  ' if ok else 'FAIL'} {nb.name} ({took:.0f} s)", flush=True)
                if not ok:
                    failed.append(nb.name)
                    print("\n".join((r.stdout + r.stderr).strip().splitlines()[-40:]), flush=True)
        if failed:
            print(f"colab-check: {len(failed)} of {len(notebooks)} notebooks failed: {', '.join(failed)}")
            return 1
        print(f"colab-check: all {len(notebooks)} notebooks passed nbval from the wheel in an empty folder")
        return 0
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
