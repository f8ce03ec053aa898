"""scripts/executed_build.py (issue 39): the book built with -W from nbval's executed outputs."""
import importlib.util
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("executed_build", ROOT / "scripts" / "executed_build.py")
eb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(eb)


def _book(tmp_path):
    (tmp_path / "book").mkdir(parents=True)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: x\n    chapters:\n"
                                       "      - file: book/01-a\n      - file: book/02-b\n")
    (tmp_path / "book" / "intro.md").write_text("# intro\n")
    for name in ("01-a", "02-b"):
        (tmp_path / "book" / f"{name}.ipynb").write_text(json.dumps({"cells": []}))
    return tmp_path


def test_the_table_of_contents_is_read_whole():
    files = eb.toc_files()
    assert files[0] == "book/intro" and "book/24-what-to-do" in files and "book/claims" in files


def test_a_chapter_without_a_fresh_executed_copy_is_named(tmp_path):
    root = _book(tmp_path / "repo")
    executed = tmp_path / "executed"
    missing = eb.problems(executed, root)
    assert len(missing) == 2 and all("no executed copy" in m for m in missing)  # intro.md needs none
    (executed / "book").mkdir(parents=True)
    for name in ("01-a", "02-b"):
        (executed / "book" / f"{name}.ipynb").write_text("{}")
    assert eb.problems(executed, root) == []
    old = time.time() - 60
    os.utime(executed / "book" / "02-b.ipynb", (old, old))  # executed before the chapter changed
    assert eb.problems(executed, root) == ["book/02-b.ipynb: the executed copy is older than the chapter "
                                           "(run pytest over it again)"]


def test_the_stage_holds_the_executed_notebooks_and_a_config_that_executes_nothing(tmp_path):
    executed = tmp_path / "executed"
    (executed / "book").mkdir(parents=True)
    (executed / "book" / "01-why-hard.ipynb").write_text('{"executed": true}')
    where = eb.stage(executed, tmp_path / "stage")
    assert (where / "book" / "01-why-hard.ipynb").read_text() == '{"executed": true}'
    assert not (where / "book" / "02-anatomy.ipynb").exists()  # only what nbval ran: problems() guards the rest
    assert (where / "book" / "intro.md").exists() and (where / "book" / "_vendor").is_symlink()
    import yaml

    assert yaml.safe_load((where / "_config.yml").read_text())["execute"]["execute_notebooks"] == "off"
