"""What a chapter page looks like, and the one box that keeps infrastructure out of its way.

A chapter reads like a book (``../CONTRIBUTING.md``): it opens with a box saying what it
answers, ends its argument with a box of key takeaways, captions every figure with its
point, and keeps the bookkeeping — sweep commands, where the records came from, how long the
page took, whether a GPU has run it — in one folded box at the very end::

    page.reproduce(P, experiments=("warmup", "warmup-fixes"), gpu=("warmup",))

The conventions, written once:

* **Opening box** — the first Markdown cell after the title holds
  ``:::{admonition} In this chapter`` with the question, what the reader will be able to
  do, the prerequisites, ``Reading time: about N minutes`` and the symbols used.
* **Key takeaways** — ``:::{admonition} Key takeaways`` (class ``tip``), 3 to 5 plain
  sentences, before the exercises; the last says what to do, linking the practice page.
* **Figures** — glued (``glue("fig-…", fig)``) and pasted by ``{glue:figure}`` with a
  ``:name:`` and a caption whose first sentence is the figure's point (numbered book-wide).
* **Reproduce this page** — :func:`reproduce`, the last code cell, input removed.

This module holds only what a chapter calls when it runs (:func:`reproduce`). The measures
of a page and their bars — the page linter the tests read — live outside the package, in
``tools/pagecheck.py`` at the repository root (``python tools/pagecheck.py book/NN-x.ipynb``
prints a chapter's measures; ``tests/book/test_pages.py`` and ``tests/book/test_open_text.py``
hold every chapter to them): a checkout's tool, not part of the installed ``tfx``.
"""

from __future__ import annotations

import html

from ..runs import results
from . import notebook

TITLE = "Reproduce this page"


def _records(name: str, profile: str) -> list:
    try:
        return results.load(name, profile)
    except (OSError, ValueError):  # an unreadable file is named by results.load's own warning
        return []


def reproduce_html(profile_name: str, seconds: float, experiments=(), gpu=(), notes=()) -> str:
    """The HTML of the folded box (a ``<details>`` element: folded in the built book, in
    Jupyter and in Colab alike): for each experiment the command that records it and the
    provenance of its records in ``profile_name``; the page's run time; and, for the
    experiments in ``gpu``, whether their GPU (``full``) records exist and where from."""
    esc = html.escape
    rows = []
    for name in experiments:
        recs = _records(name, profile_name)
        where = (f"{len(recs)} runs · {esc(results.provenance(recs))}" if recs
                 else "not recorded in this profile: the page trains what it needs")
        rows.append(f"<li><code>python -m tfx.sweep experiments/{esc(name)} --profile "
                    f"{esc(profile_name)} --jobs 2</code><br>{where}</li>")
    gpu_rows = []
    for name in gpu:
        recs = _records(name, "full")
        gpu_rows.append(f"<li><code>{esc(name)}</code>: " + (
            f"{len(recs)} runs · {esc(results.provenance(recs))}" if recs else
            "not yet run on a GPU (<code>make gpu-plan</code> prints the plan; "
            "<code>OUT=… bash scripts/gpu_burst.sh</code> runs it on a GPU machine)") + "</li>")
    parts = [f"<details class='tfx-reproduce'><summary><b>{TITLE}</b></summary>",
             f"<p>Profile <code>{esc(profile_name)}</code>; this page ran in {seconds:.0f} s "
             f"(<code>TFX_PROFILE={esc(profile_name)} make notebooks NB=…</code> re-executes it).</p>"]
    if rows:
        parts.append("<p>The sweeps it reads (each resumes after an interruption):</p><ul>"
                     + "".join(rows) + "</ul>")
    if gpu_rows:
        parts.append("<p>At GPU scale (the <code>full</code> profile):</p><ul>"
                     + "".join(gpu_rows) + "</ul>")
    parts += [f"<p>{esc(n)}</p>" for n in notes]
    parts.append("</details>")
    return "\n".join(parts)


def reproduce(P, experiments=(), gpu=(), notes=()) -> None:
    """Show the folded "Reproduce this page" box (:func:`reproduce_html`) and glue the page's
    run time as ``run-seconds``. Call it in the chapter's last cell, tagged ``remove-input``."""
    from IPython.display import HTML, display

    seconds = notebook.elapsed()
    notebook.glue("run-seconds", seconds)
    # shown once, and nothing returned: a last cell without a trailing ';' would show it twice
    display(HTML(reproduce_html(P.name, seconds, experiments, gpu, notes)))
