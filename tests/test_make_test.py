"""`make test` executes each chapter once: nbval runs inside colab-check (the built wheel in a
clean venv, each notebook from an empty folder), the unit tests run on tests/ alone, and the
executed build reads the outputs colab-check's nbval saved. A recipe that ran pytest over book/
as well would execute every chapter twice (CI's time doubles); one that built the book before
colab-check would build stale outputs."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def recipe(target: str) -> list[str]:
    """The command lines of a Makefile target's recipe (tab-indented lines after ``target:``)."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = max(i for i, line in enumerate(lines) if re.match(rf"^{re.escape(target)}:(?!=)", line))
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            if re.match(rf"^{re.escape(target)}:", line):
                continue  # a second prerequisite line of the same target
            break
        out.append(line.strip())
    return [c for c in out if not c.startswith("@echo")]


def test_make_test_runs_the_unit_tests_then_nbval_once_then_the_executed_build():
    steps = recipe("test")
    pytest_steps = [c for c in steps if "-m pytest" in c]
    assert len(pytest_steps) == 1 and pytest_steps[0].split()[-1] == "tests", pytest_steps
    order = [next(i for i, c in enumerate(steps) if key in c)
             for key in ("-m pytest", "scripts/colab_check.py", "scripts/executed_build.py")]
    assert order == sorted(order), steps


def test_colab_check_runs_nbval_with_the_glued_names_check_and_saves_where_the_build_reads():
    spec = importlib.util.spec_from_file_location("colab_check", ROOT / "scripts" / "colab_check.py")
    cc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cc)
    source = (ROOT / "scripts" / "colab_check.py").read_text(encoding="utf-8")
    assert "nbval" in cc.TESTS and "myst-nb" in cc.TESTS  # myst-nb: glue records what prose reads
    assert '"--nbval-lax"' in source and '"conftest.py"' in source
    eb = importlib.util.spec_from_file_location("executed_build", ROOT / "scripts" / "executed_build.py")
    executed_build = importlib.util.module_from_spec(eb)
    eb.loader.exec_module(executed_build)
    assert cc.EXECUTED == executed_build.EXECUTED / "book"
    # nothing Colab lacks is installed before the wheel's modules are imported
    assert not set(cc.TESTS) & set(cc.COLAB)
    assert source.index("IMPORT_ALL, cwd") < source.index("*pins, *TESTS")
    # the longest chapters start first; every notebook runs once
    names = [Path(n) for n in ("01-a.ipynb", "12-depth-with-warmup.ipynb", "21-when-a-run-breaks.ipynb", "24-b.ipynb")]
    assert [p.name for p in cc.start_order(names)] == ["21-when-a-run-breaks.ipynb", "12-depth-with-warmup.ipynb",
                                                       "01-a.ipynb", "24-b.ipynb"]
    assert all((ROOT / "book" / name).exists() for name in cc.LONGEST_FIRST)


def test_long_files_are_collected_first_so_no_worker_starts_one_last():
    """``--dist loadfile`` hands out whole files in collection order: a file marked ``long_file``
    (pytest.ini) is collected before the short files named ahead of it, the rest in their order."""
    files = ["tests/test_glue_snapshot.py", "tests/runs/test_gpu_burst.py", "tests/test_device_tree.py"]
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    order = list(dict.fromkeys(line.split("::")[0] for line in r.stdout.splitlines() if "::" in line))
    assert order == [files[1], files[0], files[2]], order
