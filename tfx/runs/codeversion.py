"""Which code trained a run: the import closure of the trainer, hashed on code alone.

A recorded run is current while the code that computed its numbers is unchanged. That code
is found, not listed by hand: it is every tfx module the trainer, the model builder and the
tasks import, directly or through others, anywhere in a file (a lazy import inside a
function counts), read from the source with :mod:`ast` (:func:`import_graph`, the graph
``tests/test_architecture.py`` checks the wings with). A new module the trainer imports
joins the hash by itself; a module nothing in the closure imports (a chapter's plot, the
sweep's command line, the theory a probe does not use) leaves it as it is.

Each file is hashed on its code (:func:`code_text`): comments, docstrings and blank lines
are dropped, so a reworded docstring keeps every record current and a changed line of
arithmetic does not. Positions come from :mod:`tokenize` (comments) and :mod:`ast`
(docstrings), which agree across Python versions, so a checkout, a pip install and a GPU
machine's Python 3.12 give the same hash.

    python -c "from tfx.runs import code; print(code.code_version(), *code.training_files(), sep='\\n')"
"""
from __future__ import annotations

import ast
import functools
import hashlib
import io
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # tfx/

# Where a run's numbers come from: the trainer (optimiser step, divergence rule, probes), the
# ensemble's batched step (tfx.runs.ensemble: a run trained as a member computes its numbers
# there), the model and its initialisers, and the tasks' data.
TRAINING_ROOTS = ("tfx.runs.train", "tfx.runs.ensemble", "tfx.nn.model", "tfx.runs.data", "tfx.runs.corpus",
                  "tfx.runs.lm")
# What the trainer imports but no number depends on: the outcome rule only names how a finished
# run ended, and every record is judged again by the current rule when it is read
# (tfx.runs.results.read → outcome.rejudge), so a change of the rule retrains nothing.
JUDGED_ON_READING = ("tfx.runs.outcome",)


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``tfx/runs/train.py`` → ``tfx.runs.train``; a package's ``__init__.py`` → the package."""
    parts = Path(path).relative_to(Path(root).parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path, modules: set) -> set:
    """Every tfx module ``path`` imports, anywhere in the file (relative imports resolved;
    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module)."""
    name = module_name(path, root)
    package = name if Path(path).name == "__init__.py" else name.rpartition(".")[0]
    top = Path(root).name
    out = set()
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == top}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != top:
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & modules
            out |= subs or {target}
    return out - {name}


def import_graph(root: Path = PACKAGE) -> dict:
    """``{module: {modules it imports}}`` for every ``.py`` file under ``root`` (the package)."""
    root = Path(root)
    files = sorted(root.rglob("*.py"))
    modules = {module_name(f, root) for f in files}
    return {module_name(f, root): imports_of(f, root, modules) for f in files}


def closure(roots, graph: dict, leave_out=()) -> list[str]:
    """The modules reachable from ``roots`` in ``graph`` (the roots included), sorted; the
    modules in ``leave_out`` are neither counted nor followed."""
    seen, todo = set(leave_out), [r for r in roots]
    unknown = [r for r in roots if r not in graph]
    if unknown:
        raise ValueError(f"roots {unknown} are not modules of the package (known: {len(graph)} modules)")
    while todo:
        m = todo.pop()
        if m in seen or m not in graph:
            continue
        seen.add(m)
        todo.extend(graph[m])
    return sorted(seen - set(leave_out))


def _path_of(module: str, root: Path) -> Path:
    rel = Path(*module.split(".")[1:])
    f = root / rel.with_suffix(".py")
    return f if f.exists() else root / rel / "__init__.py"


def training_files(root: Path = PACKAGE) -> list[Path]:
    """The files whose code trains a run: the import closure of :data:`TRAINING_ROOTS`, less
    :data:`JUDGED_ON_READING`."""
    root = Path(root)
    named = lambda m: root.name + m.partition(".")[1] + m.partition(".")[2]  # noqa: E731  (tfx → root's name)
    return [_path_of(m, root) for m in closure([named(m) for m in TRAINING_ROOTS], import_graph(root),
                                               leave_out=[named(m) for m in JUDGED_ON_READING])]


def code_text(source: str) -> str:
    """``source`` without its comments, docstrings, blank lines and trailing spaces: the code
    a hash should follow. A docstring is the first statement of a module, class or function
    when it is a string literal."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(row, col):  # ast counts a line's columns in UTF-8 bytes; the text is indexed by character
        return starts[row - 1] + len(lines[row - 1].encode("utf-8")[:col].decode("utf-8", "replace"))

    cut = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                cut.append((offset(first.lineno, first.col_offset), offset(first.end_lineno, first.end_col_offset)))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            cut.append((starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1]))
    out, at = [], 0
    for a, b in sorted(cut):
        if a >= at:
            out.append(source[at:a])
            at = b
    out.append(source[at:])
    kept = (line.rstrip() for line in "".join(out).splitlines())
    return "\n".join(line for line in kept if line.strip()) + "\n"


def code_hash(package=None) -> str:
    """A hash (12 hex digits) of the code of :func:`training_files` of ``package`` (default:
    this copy of tfx): each file's path inside the package and its :func:`code_text`."""
    root = Path(package) if package else PACKAGE
    h = hashlib.sha256()
    for f in training_files(root):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(code_text(f.read_text(encoding="utf-8").replace("\r\n", "\n")).encode() + b"\0")
    return h.hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``code_hash()`` of this copy of tfx: what a rerun compares to skip recorded runs."""
    return code_hash()


def source_of(fn) -> str:
    """The :func:`code_text` of a function or method: its source without docstring, comments
    and blank lines, what a reader compares with the equations (chapter 2 prints
    ``tfx.nn.blocks.Residual``'s)."""
    import inspect
    import textwrap

    return code_text(textwrap.dedent(inspect.getsource(fn))).rstrip("\n")
