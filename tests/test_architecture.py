"""tfx's four wings and the one-way rule between them, read from the source with ``ast``.

    nn      imports no other wing
    theory  may use nn
    runs    may use nn, and theory (a probe a run records)
    book    may use every wing; nothing outside book imports it

Every import counts, also one inside a function (where circles used to hide), and no
two modules may reach each other through imports. The package ``tfx`` itself (the short
public names) may use nn, theory and runs; ``tfx/sweep.py`` and ``tfx/bench.py`` are the
commands readers type (``python -m tfx.sweep``) and may use anything; no module imports
``tfx`` or a command.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tfx.runs.codeversion import import_graph

ROOT = Path(__file__).resolve().parents[1] / "tfx"
WINGS = ("nn", "theory", "runs", "book")
ALLOWED = {"nn": {"nn"}, "theory": {"nn", "theory"}, "runs": {"nn", "theory", "runs"}, "book": set(WINGS)}
FACADE_ALLOWED = {"nn", "theory", "runs"}
COMMANDS = {"tfx.sweep", "tfx.bench"}


def graph(root: Path = ROOT) -> dict:
    """Every tfx module's imports, anywhere in the file: the graph the run keys follow too."""
    return import_graph(root)


def wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in WINGS else None


def violations(g: dict) -> list[str]:
    """Each import that runs against the rule, as 'importer -> imported (why)'."""
    bad = []
    for src, targets in g.items():
        for dst in sorted(targets):
            if dst == "tfx" or dst in COMMANDS:
                bad.append(f"{src} -> {dst} (nothing imports the package tfx or a command)")
                continue
            w_src, w_dst = wing(src), wing(dst)
            if src in COMMANDS:
                continue
            if src == "tfx":
                if w_dst not in FACADE_ALLOWED:
                    bad.append(f"tfx -> {dst} (the package's short names come from nn, theory and runs)")
            elif w_dst is not None and w_src is not None and w_dst not in ALLOWED[w_src]:
                bad.append(f"{src} -> {dst} ({w_src} may use only {', '.join(sorted(ALLOWED[w_src]))})")
    return bad


def circles(g: dict) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_every_module_lives_in_a_wing():
    loose = [m for m in graph() if wing(m) is None and m not in {"tfx", *COMMANDS}
             and m not in {f"tfx.{w}" for w in WINGS}]
    assert not loose, f"modules outside the four wings: {loose}"


def test_imports_run_one_way():
    assert violations(graph()) == []


def test_no_two_modules_import_each_other():
    assert circles(graph()) == []


def test_commands_are_only_commands():
    """``import tfx.sweep`` gives nothing: the commands are not a second path to the code."""
    import importlib

    for name in COMMANDS:
        assert not [k for k in vars(importlib.import_module(name)) if not k.startswith("__")]


# ------------------------------------------------------------ the checker can fail
def _tree(tmp_path, files: dict) -> Path:
    root = tmp_path / "tfx"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for w in WINGS:
        (root / w).mkdir(parents=True, exist_ok=True)
        (root / w / "__init__.py").touch()
    (root / "__init__.py").touch()
    return root


@pytest.mark.parametrize("importer, text, why", [
    ("nn/model.py", "from ..runs.data import Batch\n", "nn may use only nn"),
    ("theory/gradients.py", "def f():\n    from ..runs import train\n", "theory may use only nn, theory"),
    ("runs/train.py", "from tfx.book.plot import figure\n", "runs may use only"),
    ("theory/scaling.py", "import tfx\n", "nothing imports the package tfx"),
])
def test_a_backwards_import_is_caught(tmp_path, importer, text, why):
    root = _tree(tmp_path, {"runs/data.py": "", "runs/train.py": "", "book/plot.py": "", importer: text})
    found = violations(graph(root))
    assert any(why in v for v in found), found


def test_a_circle_is_caught_also_through_a_lazy_import(tmp_path):
    root = _tree(tmp_path, {"runs/results.py": "def f():\n    from .sweep import run\n",
                            "runs/sweep.py": "from . import results\n"})
    assert circles(graph(root)) == [["tfx.runs.results", "tfx.runs.sweep"]]
