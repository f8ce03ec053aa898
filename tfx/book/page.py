"""What a chapter page looks like, and the one box that keeps infrastructure out of its way.

A chapter reads like a book (``../CONTRIBUTING.md``): it opens with a box saying what it
answers, ends its argument with a box of key takeaways, captions every figure with its
point, and keeps the bookkeeping — sweep commands, where the records came from, how long the
page took, whether a GPU has run it — in one folded box at the very end::

    page.reproduce(P, experiments=("warmup", "warmup-fixes"), gpu=("warmup",))

The conventions, written once (the page tests in ``tests/book/test_pages.py`` hold every
chapter to them):

* **Opening box** — the first Markdown cell after the title holds
  ``:::{admonition} In this chapter`` with the question, what the reader will be able to
  do, the prerequisites, ``Reading time: about N minutes`` and the symbols used.
* **Key takeaways** — ``:::{admonition} Key takeaways`` (class ``tip``), 3 to 5 plain
  sentences, before the exercises; the last says what to do, linking the practice page.
* **Figures** — glued (``glue("fig-…", fig)``) and pasted by ``{glue:figure}`` with a
  ``:name:`` and a caption whose first sentence is the figure's point (numbered book-wide).
* **Reproduce this page** — :func:`reproduce`, the last code cell, input removed.

The measures below (pure functions of a notebook: an nbformat dict or a path) are what those
tests read; each has its bar beside it:

=============================  ======================================================
:func:`visible_code_lines`     ≤ :data:`MAX_VISIBLE_CODE_LINES` (120)
:func:`dense_paragraphs`       none: no paragraph or list item holds > 12 numbers
:func:`has_opening_box`        True; :func:`reading_time_fits` (stated minutes within
                               a factor 2 of :func:`word_count` / 200)
:func:`has_takeaways_box`      True (and before the Exercises heading)
:func:`uncaptioned_figures`    none
:func:`wide_output_lines`      none longer than 77 characters
:func:`ends_with_reproduce`    True
:func:`stray_betas`            none: β is layer dependency or Adam's β₁, β₂ only
:func:`raw_markdown_tables`    none (built HTML: the browser test)
=============================  ======================================================
"""
from __future__ import annotations

import ast
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

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


# ------------------------------------------------------------------------------------------
# Measures of a page: pure functions of a notebook (an nbformat dict, or a path to one).
# ------------------------------------------------------------------------------------------

MAX_VISIBLE_CODE_LINES = 120
MAX_NUMBERS = 12
OUTPUT_WIDTH = 77
WORDS_PER_MINUTE = 200
READING_TIME_FACTOR = 2.0
HIDDEN_INPUT_TAGS = {"remove-input", "remove-cell", "hide-input"}
HIDDEN_OUTPUT_TAGS = {"remove-output", "remove-cell"}
COLAB_TAG = "colab-setup"  # scripts/sync_notebooks.py tags the Colab setup cell so


def as_notebook(nb) -> dict:
    """A notebook as a dict: ``nb`` itself, or the notebook read from the path ``nb``."""
    if isinstance(nb, (str, Path)):
        return json.loads(Path(nb).read_text(encoding="utf-8"))
    return nb


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell) -> set:
    return set((cell.get("metadata") or {}).get("tags") or ())


def _markdown(nb) -> list:
    """``[(cell index, source)]`` of the Markdown cells."""
    return [(i, _source(c)) for i, c in enumerate(as_notebook(nb)["cells"]) if c["cell_type"] == "markdown"]


def _is_colab_setup(nb: dict, index: int) -> bool:
    """Is cell ``index`` the Colab setup cell: the first code cell, tagged ``colab-setup``
    (what ``scripts/sync_notebooks.py`` writes) or installing tfx-book on Colab only?"""
    codes = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    if not codes or codes[0] != index:
        return False
    cell = nb["cells"][index]
    return COLAB_TAG in _tags(cell) or "google.colab" in _source(cell)


def visible_code_lines(nb) -> int:
    """The non-blank lines of code a reader sees: code cells not tagged ``remove-input``,
    ``remove-cell`` or ``hide-input``, the Colab setup cell (the first code cell) aside.
    Bar: ≤ :data:`MAX_VISIBLE_CODE_LINES`."""
    nb = as_notebook(nb)
    return sum(
        sum(1 for line in _source(c).splitlines() if line.strip())
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and not _tags(c) & HIDDEN_INPUT_TAGS
        and not _is_colab_setup(nb, i))


# -- glued values ------------------------------------------------------------------------

def glued_values(nb) -> dict:
    """``{glue name: {mime type: text}}`` of every value the notebook's saved outputs glued
    (myst-nb marks each with ``metadata.scrapbook``; the data's keys carry its ``mime_prefix``,
    which is taken off here). A text/plain that is a Python literal is read as its value, as
    :func:`tfx.book.claims.glued_text` does."""
    out = {}
    for c in as_notebook(nb)["cells"]:
        for o in c.get("outputs", []) if c["cell_type"] == "code" else ():
            book = (o.get("metadata") or {}).get("scrapbook") or {}
            if not book.get("name"):
                continue
            prefix = book.get("mime_prefix", "")
            data = {k[len(prefix):] if k.startswith(prefix) else k: "".join(v) if isinstance(v, list) else v
                    for k, v in (o.get("data") or {}).items()}
            plain = data.get("text/plain")
            if isinstance(plain, str):
                try:
                    data["text/plain"] = str(ast.literal_eval(plain))
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    pass
            out[book["name"]] = data
    return out


# -- numbers in the prose -----------------------------------------------------------------

# A number as a reader counts it: 3, 0.25, 1,000, 1e-3; not the digits of an identifier or a
# label (H100, fp16, LN-1, fig-05-x) nor a version's second part.
NUMBER = re.compile(r"(?<![\w.\-])\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+−]?\d+)?")
_GLUE_ROLE = re.compile(r"\{glue(?::(\w*))?\}`([^`]*)`")
_ROLE = re.compile(r"\{[\w:+-]+\}`[^`]*`")  # cite, numref, ref, eq, doc, … (glue is read first)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?\1", re.S)
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:\\.|[^$\\\n])+\$")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<(?:https?|mailto):[^>]*>|https?://\S+")
_HTML_TAG = re.compile(r"<[^>\n]+>")
_EQ_LABEL = re.compile(r"\((?:eq|fig|tab|sec)-[\w-]+\)")
_CHAPTER_REF = re.compile(r"\b(?:[Cc]hapters?|[Cc]h\.)\s+\d+[a-z]?(?:\s*(?:,|and|or|to|–|-)\s*\d+[a-z]?)*")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_TABLE_LINE = re.compile(r"^\s*\|")
_FENCE = re.compile(r"^\s*(`{3,}|:{3,})\s*(\{[\w:-]+\}|[\w+-]*)(.*)$")
_OPTION = re.compile(r"^\s*:([\w-]+):(.*)$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# Directives whose body is not prose a reader reads as a paragraph: folded (per-seed numbers
# belong in a dropdown), math, code and tables.
_NOT_PROSE = {"dropdown", "math", "code", "code-block", "code-cell", "list-table", "csv-table", "raw",
              "glue", "glue:any", "glue:md", "glue:text"}
_NOT_WORDS = {"math", "code", "code-block", "code-cell", "raw"}  # the rest is read, unfolded or not


def _prose_lines(text: str, headings: bool = False, everything_read: bool = False) -> list:
    """The lines of a Markdown cell that are prose, with None where a block ends (a fence, a
    heading, a table, or a body skipped: code, math, dropdowns, tables). Directive options
    (``:name: …``) are not prose; a ``:class: dropdown`` folds its directive's body away.
    With ``headings``, a heading is kept as a line of its own (its words are read); with
    ``everything_read``, so are tables and the bodies of dropdowns (solutions, per-seed
    tables): all the words a reader may read, for :func:`word_count`."""
    not_prose = _NOT_WORDS if everything_read else _NOT_PROSE
    out: list = []
    stack: list = []  # open fences: [char, length, skip?, reading options?]
    for line in text.splitlines():
        m = _FENCE.match(line)
        top = stack[-1] if stack else None
        in_code = top is not None and top[2] == "code"
        if m and top is not None and not m.group(2) and not m.group(3).strip() \
                and m.group(1)[0] == top[0] and len(m.group(1)) >= top[1]:
            stack.pop()  # a closing fence
            out.append(None)
            continue
        if in_code or (top is not None and top[2] and not m):
            continue
        if m and (m.group(1)[0] == "`" or m.group(2).startswith("{")):
            name = m.group(2)[1:-1] if m.group(2).startswith("{") else None
            skip = "code" if name is None else (name in not_prose)
            if top is not None and top[2]:
                skip = "code" if skip == "code" else True  # inside a skipped body: skip all
            stack.append([m.group(1)[0], len(m.group(1)), skip, name is not None])
            out.append(None)
            if everything_read and name is not None and not skip and m.group(3).strip():
                out += [m.group(3).strip(), None]  # a directive's title: "Solution", "Key takeaways"
            continue
        if top is not None and top[3]:
            o = _OPTION.match(line)
            if o:
                if o.group(1) == "class" and "dropdown" in o.group(2).split() and not everything_read:
                    top[2] = True
                continue
            top[3] = False
        if top is not None and top[2]:
            continue
        if everything_read and _TABLE_LINE.match(line):
            out.append(line.replace("|", " "))
            continue
        if _HEADING.match(line) or _TABLE_LINE.match(line):
            out += [None, line.lstrip().lstrip("#"), None] if headings and _HEADING.match(line) else [None]
            continue
        out.append(line)
    return out


def _paragraphs(text: str) -> list:
    """The paragraphs and list items of a Markdown cell's prose, each as one string (math
    and code blocks end a paragraph; see :func:`_prose_lines`)."""
    text = _DISPLAY_MATH.sub("\n\n", text)
    blocks, current = [], []
    for line in _prose_lines(text):
        if line is None or not line.strip() or _ITEM.match(line):
            if current:
                blocks.append(" ".join(current))
            current = []
            if line is None or not line.strip():
                continue
        current.append(line.strip())
    if current:
        blocks.append(" ".join(current))
    return blocks


def _glued_count(role: str, target: str, values: dict) -> int:
    """How many numbers a glue role prints: those of the glued value's text, or 1 where the
    value is not in this notebook. A ``{glue:md}`` pastes Markdown: its tables are real
    tables (where per-seed numbers belong), so only the numbers of its other lines count."""
    if "::" in target:  # {glue:text}`other.ipynb::name:fmt` — another notebook's value
        return 1
    name = target.split(":")[0]
    data = values.get(name)
    if data is None:
        return 1
    if role == "md" and data.get("text/markdown"):
        prose = "\n".join(line for line in data["text/markdown"].splitlines() if not _TABLE_LINE.match(line))
        return numbers_in(prose)
    return len(NUMBER.findall(data.get("text/plain") or ""))


def numbers_in(paragraph: str, values: dict | None = None) -> int:
    """The numbers a reader meets in one paragraph of Markdown: digits in the text, plus, for
    each glue role, the numbers its glued value prints (``values``: :func:`glued_values`).
    Math, code spans, links' URLs, citations, cross-references (roles, and "chapter 6",
    "chapters 11 and 12") and equation labels are not counted."""
    values = values or {}
    glued = 0

    def glue(m):
        nonlocal glued
        glued += _glued_count(m.group(1) or "", m.group(2), values)
        return " "

    text = _GLUE_ROLE.sub(glue, paragraph)
    text = _ROLE.sub(" ", text)
    text = _CODE_SPAN.sub(" ", text)
    text = _INLINE_MATH.sub(" ", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = _EQ_LABEL.sub(" ", text)
    text = _CHAPTER_REF.sub(" ", text)  # "chapter 6", "chapters 11 and 12": cross-references
    return glued + len(NUMBER.findall(text))


def dense_paragraphs(nb, limit: int = MAX_NUMBERS) -> list:
    """Paragraphs and list items of the Markdown cells holding more than ``limit`` numbers
    (:func:`numbers_in`; a glued value counts as the numbers it prints), as
    ``[(cell index, numbers, the paragraph's start)]``. Headings (chapter numbers), tables,
    folded dropdowns, math and code are not paragraphs. Bar: none."""
    nb = as_notebook(nb)
    values = glued_values(nb)
    out = []
    for i, text in _markdown(nb):
        for para in _paragraphs(text):
            n = numbers_in(para, values)
            if n > limit:
                out.append((i, n, para[:70]))
    return out


# -- words and boxes ----------------------------------------------------------------------

_WORD = re.compile(r"[^\W_][\w'’-]*")


def _prose_text(text: str) -> str:
    text = _DISPLAY_MATH.sub(" ", text)
    text = "\n".join(line for line in _prose_lines(text, headings=True, everything_read=True)
                     if line is not None)
    for pattern in (_GLUE_ROLE, _INLINE_MATH, _AUTOLINK, _HTML_TAG, _EQ_LABEL):
        text = pattern.sub(" x ", text)  # a formula or a glued value reads as about one word
    text = _LINK.sub(r"\1", text)
    return _ROLE.sub(" x ", text)


def word_count(nb) -> int:
    """The prose words of the Markdown cells, all a reader may read: the text, headings,
    tables and folded dropdowns (solutions); a formula, a glued value or a citation counted
    as one word; code blocks, math blocks and directive options not counted."""
    return sum(len(_WORD.findall(_prose_text(text))) for _, text in _markdown(nb))


_BOX = r"^\s*(?:`{3,}|:{3,})\{admonition\}\s*%s\s*$"
_OPENING = re.compile(_BOX % r"In this chapter", re.M | re.I)
_TAKEAWAYS = re.compile(_BOX % r"Key takeaways", re.M | re.I)
_READING = re.compile(r"Reading time\W*(?:about|around|roughly|~)?\s*(\d+)(?:\s*[–-]\s*(\d+))?\s*min",
                      re.I)
_TITLE = re.compile(r"^\s{0,3}#\s+\S.*$", re.M)
_SECTION = re.compile(r"^\s{0,3}##\s", re.M)
_EXERCISES = re.compile(r"^\s{0,3}#{2,6}\s+Exercises?\b", re.M | re.I)


def _opening(nb) -> str:
    """The Markdown after the ``# Title`` and before the first ``##`` section: where the
    opening box belongs (the rest of the title's cell, or the first Markdown cell after it;
    the setup code cell between them is not Markdown)."""
    cells = _markdown(nb)
    for k, (_, text) in enumerate(cells):
        title = _TITLE.search(text)
        if not title:
            continue
        rest = text[title.end():]
        if not rest.strip() and k + 1 < len(cells):
            rest = cells[k + 1][1]
        section = _SECTION.search(rest)
        return rest[:section.start()] if section else rest
    return ""


def has_opening_box(nb) -> bool:
    """Does the first Markdown after the title hold ``{admonition} In this chapter`` with a
    stated reading time (``Reading time: about N minutes``)? Bar: True."""
    opening = _opening(nb)
    box = _OPENING.search(opening)
    return box is not None and _READING.search(opening[box.end():]) is not None


def stated_reading_minutes(nb) -> float | None:
    """The reading time the opening box states, in minutes (the middle of a range "10–15"),
    or None if it states none."""
    m = _READING.search(_opening(nb))
    if not m:
        return None
    low, high = int(m.group(1)), int(m.group(2) or m.group(1))
    return (low + high) / 2


def reading_time_fits(nb, factor: float = READING_TIME_FACTOR) -> bool:
    """Is the stated reading time within a factor ``factor`` of :func:`word_count` /
    :data:`WORDS_PER_MINUTE`? False when no time is stated."""
    stated = stated_reading_minutes(nb)
    estimate = word_count(nb) / WORDS_PER_MINUTE
    return stated is not None and stated > 0 and estimate / factor <= stated <= estimate * factor


def has_takeaways_box(nb) -> bool:
    """Is there an ``{admonition} Key takeaways`` box, before the Exercises heading if the
    page has one? Bar: True."""
    box = exercises = None
    for i, text in _markdown(nb):
        m = _TAKEAWAYS.search(text)
        if m and box is None:
            box = (i, m.start())
        e = _EXERCISES.search(text)
        if e and exercises is None:
            exercises = (i, e.start())
    return box is not None and (exercises is None or box < exercises)


# -- outputs ------------------------------------------------------------------------------

def _shown_outputs(nb) -> list:
    """``[(cell index, output)]`` of the outputs the page shows: cells not tagged
    ``remove-output``/``remove-cell``, glue outputs (pasted elsewhere, if at all) aside."""
    return [(i, o) for i, c in enumerate(as_notebook(nb)["cells"])
            if c["cell_type"] == "code" and not _tags(c) & HIDDEN_OUTPUT_TAGS
            for o in c.get("outputs", [])
            if not (o.get("metadata") or {}).get("scrapbook")]


_FIGURE = re.compile(r"^\s*(`{3,}|:{3,})\{glue:figure\}[ \t]*(\S*)[^\n]*\n(.*?)^\s*\1\s*$", re.M | re.S)


def uncaptioned_figures(nb) -> list:
    """What shows a figure without a numbered caption: an ``image/png`` output shown on the
    page (a figure must be glued, ``glue("fig-…", fig, display=False)``, and pasted by
    ``{glue:figure}``), and a ``{glue:figure}`` without a ``:name:`` or without caption text.
    As strings naming the cell or the figure. Bar: none."""
    nb = as_notebook(nb)
    out = [f"cell {i}: an image output shown without a caption (glue it and paste it with "
           "{glue:figure})" for i, o in _shown_outputs(nb) if "image/png" in (o.get("data") or {})]
    for i, text in _markdown(nb):
        for m in _FIGURE.finditer(text):
            body = m.group(3).splitlines()
            options = [line for line in body if _OPTION.match(line)]
            caption = [line for line in body if line.strip() and not _OPTION.match(line)]
            if not any(_OPTION.match(line).group(1) == "name" for line in options):
                out.append(f"cell {i}: {{glue:figure}} {m.group(2)} has no :name:")
            if not caption:
                out.append(f"cell {i}: {{glue:figure}} {m.group(2)} has no caption")
    return out


# What a page shows in place of text/plain when an output has it (richest first).
_RICHER = ("application/vnd.jupyter.widget-view+json", "text/html", "text/markdown", "text/latex",
           "image/png", "image/jpeg", "image/svg+xml")


def wide_output_lines(nb, width: int = OUTPUT_WIDTH) -> list:
    """Printed lines (streams, and text/plain outputs shown as text) longer than ``width``
    characters in the outputs the page shows, as ``[(cell index, line)]``. Bar: none."""
    out = []
    for i, o in _shown_outputs(nb):
        if o.get("output_type") == "stream":
            text = o.get("text", "")
        else:
            data = o.get("data") or {}
            if any(k in data for k in _RICHER):
                continue
            text = data.get("text/plain", "")
        text = "".join(text) if isinstance(text, list) else text
        out += [(i, line) for line in text.splitlines() if len(line.rstrip()) > width]
    return out


def ends_with_reproduce(nb) -> bool:
    """Is the last cell code calling ``page.reproduce(`` with its input removed
    (tagged ``remove-input``)? Bar: True."""
    cells = as_notebook(nb)["cells"]
    last = cells[-1] if cells else None
    return (last is not None and last["cell_type"] == "code" and "page.reproduce(" in _source(last)
            and "remove-input" in _tags(last))


# -- notation -----------------------------------------------------------------------------

_BETA = re.compile(r"\\beta(?![A-Za-z])((?:\s*[_^]\s*(?:\{(?:[^{}]|\{[^{}]*\})*\}|\\[A-Za-z]+|\w))*)")
_SUB = re.compile(r"_\s*(\{(?:[^{}]|\{[^{}]*\})*\}|\\[A-Za-z]+|\w)")


_SUP = re.compile(r"\^\s*(\{(?:[^{}]|\{[^{}]*\})*\}|\\[A-Za-z]+|\w)")


def _beta_allowed(scripts: str) -> bool:
    # a superscript (a power, β₂^{t-t₀}) says nothing of which β it is: read the subscript
    subs = [s[1:-1] if s.startswith("{") else s for s in _SUB.findall(_SUP.sub("", scripts))]
    if len(subs) != 1:
        return False
    sub = re.sub(r"\\[,;:! ]|\s", "", subs[0])
    if sub in ("1", "2"):
        return True  # Adam's β₁, β₂
    parts = sub.split(",")
    # layer dependency: two indices, β_{i,j}, β_{i,i-1}, β_{ij}, β_{ii}
    return (len(parts) == 2 and all(parts)) or bool(re.fullmatch(r"[A-Za-z0-9]{2}", sub))


def stray_betas(nb) -> list:
    """``\\beta`` in the Markdown cells that is neither the layer dependency
    ``\\beta_{i,j}`` (two indices, with any superscript: ``\\beta_{i,i}^2``,
    ``\\beta^{\\text{pre}}_{i,j}``) nor Adam's ``\\beta_1``, ``\\beta_2``: the book's notation
    (book/notation.md) keeps β for these. As ``[(cell index, the β as written)]``. Bar: none."""
    return [(i, m.group(0).strip()) for i, text in _markdown(nb)
            for m in _BETA.finditer(text) if not _beta_allowed(m.group(1))]


# -- built HTML ---------------------------------------------------------------------------

class _OutputText(HTMLParser):
    """The text inside a built page's cell output areas (``div.cell_output``)."""

    VOID = {"br", "img", "hr", "input", "meta", "link", "area", "base", "col", "embed", "source",
            "track", "wbr", "param"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # open elements inside the current output area (0: outside)
        self.chunks: list = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        if self.depth:
            self.depth += 1
        elif "cell_output" in (dict(attrs).get("class") or "").split():
            self.depth = 1
            self.chunks.append("\n")

    def handle_endtag(self, tag):
        if self.depth and tag not in self.VOID:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.chunks.append(data)


# A pipe table's delimiter row: |---|:--:|, cells of hyphens with optional colons.
_RAW_TABLE_RULE = re.compile(r"^\|?(?:\s*:?-+:?\s*\|)+\s*:?-*:?\s*$")


def raw_markdown_tables(html_text: str) -> list:
    """Pipe-table Markdown left unrendered in a built page's cell outputs: the lines that
    start with ``|`` and hold a rule (``|---``, ``---|``), e.g. a table printed with
    ``print`` instead of shown with ``display(Markdown(table))``. Bar: none."""
    parser = _OutputText()
    parser.feed(html_text)
    parser.close()
    text = "".join(parser.chunks)
    return [line.strip() for line in text.splitlines()
            if line.strip().startswith("|") and _RAW_TABLE_RULE.search(line.strip())]


def toc_notebooks(root) -> list:
    """The notebooks ``root/_toc.yml`` lists (root, chapters, sections: every entry whose
    ``file`` is a notebook), in the book's order: the pages the page tests hold to the
    conventions. Derived from the table of contents, so a chapter added or split is in."""
    import yaml

    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    found: list = []

    def walk(node):
        if isinstance(node, dict):
            f = node.get("file") or node.get("root")
            if isinstance(f, str):
                p = root / (f if f.endswith(".ipynb") else f + ".ipynb")
                if p.is_file() and p not in found:
                    found.append(p)
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return found


def summary(nb) -> dict:
    """Every measure of one page, ``{measure: value}``, with ``ok`` naming those that meet
    their bar: what ``python -m tfx.book.page book/NN-x.ipynb`` prints."""
    nb = as_notebook(nb)
    out = {
        "visible_code_lines": visible_code_lines(nb),
        "dense_paragraphs": dense_paragraphs(nb),
        "opening_box": has_opening_box(nb),
        "reading_time": (stated_reading_minutes(nb), round(word_count(nb) / WORDS_PER_MINUTE, 1)),
        "takeaways_box": has_takeaways_box(nb),
        "uncaptioned_figures": uncaptioned_figures(nb),
        "wide_output_lines": wide_output_lines(nb),
        "ends_with_reproduce": ends_with_reproduce(nb),
        "notation": stray_betas(nb),
    }
    out["ok"] = [k for k, v in out.items() if (
        v <= MAX_VISIBLE_CODE_LINES if k == "visible_code_lines" else
        reading_time_fits(nb) if k == "reading_time" else
        v is True if isinstance(v, bool) else not v)]
    return out


def main(argv=None) -> int:
    """Print each page's measures (stated and estimated reading minutes under reading_time);
    exit 1 if any page misses a bar."""
    import argparse

    ap = argparse.ArgumentParser(description="Measure chapter pages against the page conventions.")
    ap.add_argument("notebooks", nargs="+")
    failed = False
    for path in ap.parse_args(argv).notebooks:
        s = summary(path)
        print(path)
        for k, v in s.items():
            if k != "ok":
                shown = f"{len(v)}: {v[:3]}" if isinstance(v, list) else v
                print(f"  {'ok  ' if k in s['ok'] else 'MISS'} {k}: {shown}")
        failed |= len(s["ok"]) < len(s) - 1
    return int(failed)


if __name__ == "__main__":
    raise SystemExit(main())
