"""What every chapter notebook does first, and ``glue`` for numbers in the prose.

    import tfx
    P = tfx.book.notebook.setup()   # prints "profile: book · device: cpu", sets style, seeds, threads

``glue(name, value)`` hands a computed value to the book (myst-nb's glue) so the
prose reads ``{glue:text}`name:.2f``` instead of a hand-typed number; outside
Jupyter Book (Colab, a plain kernel) it simply shows nothing.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import torch

from ..runs.profiles import get_profile
from .plot import use_style


_STARTED: list = []  # when setup() ran: the page's clock for elapsed()


def setup(profile: str | None = None, seed: int = 0, threads: int | None = None):
    """Choose the profile, apply the figure style, fix seeds, use ``threads`` CPU threads
    (default 1); print and return the profile. Starts the clock :func:`elapsed` reads."""
    _STARTED[:] = [time.perf_counter()]
    P = get_profile(profile)
    use_style()
    torch.manual_seed(seed)
    if threads or P.device == "cpu":
        # The book's models are small: one thread is as fast, and immune to a busy machine.
        torch.set_num_threads(threads or 1)
    print(P)
    return P


def elapsed() -> float:
    """Seconds since :func:`setup` ran in this kernel: a chapter glues it in its last cell, so
    the run time its page states is the one measured when the page was executed."""
    if not _STARTED:
        raise RuntimeError("elapsed() needs notebook.setup() to have run first in this kernel")
    return time.perf_counter() - _STARTED[0]


class DuplicateGlue(ValueError):
    """A glue name glued twice in one notebook: myst-nb warns ``glue key '…' duplicate`` and
    the ``-W`` book build fails, so :func:`glue` refuses it where the kernel runs."""


# name -> (the cell that glued it, the execution that did): see _where_glued().
_GLUED: dict = {}


def _running_cell():
    """``(cell, execution)`` of the request the kernel is running, or ``None`` outside a kernel.
    The cell is the front end's cell id where it sends one (JupyterLab), else the cell's source
    (nbclient and nbval send none); the execution is the request's message id."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        return None
    parent = kernel.get_parent("shell") or {}
    msg_id = (parent.get("header") or {}).get("msg_id")
    if msg_id is None:
        return None
    cell = (parent.get("metadata") or {}).get("cellId") or (parent.get("content") or {}).get("code", "")
    return cell, msg_id


def _check_new(name: str, where) -> None:
    """Refuse ``name`` if another cell glued it, or this run of this cell did already; a
    re-run of the cell that glued it (interactively) is allowed."""
    if where is None:
        return
    before = _GLUED.get(name)
    if before is not None and (before[0] != where[0] or before[1] == where[1]):
        first = str(before[0]).strip().splitlines() or ["(an empty cell)"]
        raise DuplicateGlue(
            f"glue name {name!r} was already glued in this kernel, by "
            f"{'this same run of this cell' if before[0] == where[0] else 'another cell'} "
            f"(the one starting {first[0][:80]!r}); myst-nb would warn "
            f"\"glue key {name!r} duplicate\" and the -W book build would fail: glue each name once "
            "per notebook")
    _GLUED[name] = where


def glue(name: str, value, display: bool = False):
    """myst-nb's ``glue`` where available (the book build), else a no-op; returns ``value``.

    Raises :class:`DuplicateGlue` when a different cell of this kernel already glued ``name``
    (or this run of this cell did): a notebook glues each name once. Re-running the cell that
    glued it is allowed."""
    try:
        from myst_nb import glue as _glue
    except ImportError:  # Colab or a bare kernel: nothing to glue into
        return value
    _check_new(name, _running_cell())
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()  # numpy/torch scalars: a plain number formats as {glue:text}`x:.2f`
    _glue(name, value, display=display)
    return value


def glue_all(values: dict, prefix: str = "", suffix: str = "") -> dict:
    """Glue every ``values[k]`` as ``prefix + k + suffix``; returns them by their glued names."""
    named = {prefix + k + suffix: v for k, v in values.items()}
    for k, v in named.items():
        glue(k, v)
    return named


def _lr_range(rs) -> str:
    names = {r.train_config.lr: r.point.get("lr", f"{r.train_config.lr:g}") for r in rs}
    return f"{names[min(names)]} to {names[max(names)]}"


# What a recorded sweep's size is, by name (:func:`glue_sizes`).
SIZES = {"seeds": lambda rs: len({r.seed for r in rs}), "runs": len,
         "minutes": lambda rs: sum(r.wall_time for r in rs) / 60,
         "rates": lambda rs: len({r.train_config.lr for r in rs}), "lr-range": _lr_range,
         "steps": lambda rs: rs[0].train_config.steps, "lr": lambda rs: rs[0].train_config.lr,
         "warmup": lambda rs: rs[0].train_config.warmup,
         "batch": lambda rs: rs[0].train_config.batch_size,
         "deep": lambda rs: rs[0].config.n_enc, "dec": lambda rs: rs[0].config.n_dec,
         "width": lambda rs: rs[0].config.d_model,
         "layers": lambda rs: f"{rs[0].config.n_enc}+{rs[0].config.n_dec}"}


def sizes(records, *names: str) -> dict:
    """``{name: value}`` for each of ``names`` (a key of :data:`SIZES`, or ``"name:size"`` to give
    it as ``name``): the sizes of recorded runs, the numbers a page states of a sweep (seeds,
    runs, rates; the first run's steps, rate, warmup, batch, depth, width)."""
    return {name or size: SIZES[size](records) for name, _, size in (n.rpartition(":") for n in names)}


def glue_sizes(prefix: str, records, *names: str, sep: str = "-") -> None:
    """Glue :func:`sizes` ``names`` of ``records`` as ``<prefix><sep><name>``."""
    glue_all(sizes(records, *names), prefix + sep)


def interval(name: str, e: dict, parts=("", "_lo", "_hi")) -> dict:
    """An exponent interval ``e`` (:func:`tfx.theory.fit.exponent_interval`) as
    ``{name + part: value}`` for its exponent, low and high end (to :func:`glue_all`)."""
    return {name + p: e[k] for p, k in zip(parts, ("exponent", "low", "high"))}


def glue_figure(name: str, fig) -> str:
    """Glue ``fig`` under ``name`` for a numbered, captioned ``{glue:figure}`` directive (not
    shown where it is computed) and close it; returns ``name``."""
    import matplotlib.pyplot as plt

    glue(name, fig, display=False)
    plt.close(fig)
    return name


def md_table(header, rows) -> str:
    """A GFM table (``display(Markdown(...))`` renders it as a real table)."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def md(text: str):
    """A Markdown object where IPython is present (a glued table renders), else the text."""
    try:
        from IPython.display import Markdown
    except ImportError:  # pragma: no cover - IPython ships with the book's requirements
        return text
    return Markdown(text)


# a role's name: ``{glue:text}`name:.2f``` → name; a role that reads another notebook's glue
# (``path.ipynb::name:s``) is glued there, not here, and is left out
GLUE_ROLE = re.compile(r"\{glue(?::\w*)?\}`(?![^`]*::)([^`:]+)")
GLUE_DIRECTIVE = re.compile(r"^(?:```|:::)\{glue(?::\w+)?\}\s+(\S+)", re.M)


def glued_names(outputs) -> set:
    """The names a list of cell outputs glued (myst-nb marks each with ``metadata.scrapbook.name``)."""
    return {(o.get("metadata") or {}).get("scrapbook", {}).get("name") for o in outputs or ()} - {None}


def used_glue_names(nb_path) -> set:
    """The glue names a notebook's prose uses (``{glue:text}`name``` roles, ``{glue:figure}`` directives)."""
    cells = json.loads(Path(nb_path).read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return set(GLUE_ROLE.findall(text)) | set(GLUE_DIRECTIVE.findall(text))


def missing_glue(nb_path, outputs) -> list:
    """The glue names the prose of ``nb_path`` uses that ``outputs`` (one run's) did not glue."""
    return sorted(used_glue_names(nb_path) - glued_names(outputs))


def gpu_pending(names) -> str:
    """The line a chapter's GPU section shows while ``results/NAME.full.jsonl`` is missing for
    the experiments ``names``: no estimate typed in a chapter (``make gpu-plan`` prints the
    plan's modelled minutes, :mod:`tfx.runs.cost`), and how the GPU half is run."""
    files = ", ".join(f"`results/{n}.full.jsonl`" for n in names)
    return (f"**Not yet run on a GPU.** {files} {'is' if len(names) == 1 else 'are'} missing. The GPU half "
            "(the full profile) runs in bursts of under ten minutes on one H100 with "
            "`OUT=… bash scripts/gpu_burst.sh` (the README says how; `make gpu-plan` prints its "
            "runs and their modelled minutes); this page then shows the results here, with the "
            "device, code version and date of every run.")
