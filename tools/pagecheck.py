"""The page linter: measures of a chapter page and their bars (the conventions are written
once in ``tfx/book/page.py``'s docstring and CONTRIBUTING.md).

A checkout's tool, not part of the installed ``tfx`` (nothing here runs when a chapter
runs): the page tests import it (``tests/book/test_pages.py``, ``tests/test_notation.py``,
``tests/book/test_open_text.py``, ``tests/book/test_browser.py``), and it runs as a command::

    python tools/pagecheck.py book/NN-x.ipynb …   # each page's notebook measures
    python tools/pagecheck.py --open-text         # every chapter's open-text measures
                                                  # (from the built _build/html)

Measures of a notebook (pure functions of an nbformat dict or a path), each with its bar:

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

Measures of a built page's *open text* (issue 44; :func:`open_text` says what that is),
each with its target (:data:`OPEN_TARGETS`):

=============================  ======================================================
:func:`numbers_per_1000`       ≤ 35 numbers per 1,000 open words (:func:`open_numbers`)
:func:`open_word_count`        ≤ 5,000 open words
:func:`claim_ids`              ≤ 3 claim ids (``LN-1``, ``AD-3``) in the open prose
:func:`bookkeeping`            none in the open (commits, experiment and result files,
                               make targets, profile names, GPU status): only in the
                               folded "Reproduce this page" box
:func:`grammar_slips`          none (doubled words, "the The", "ended did not learn",
                               "Warmup none:" labels), over the open text and every
                               glued string
:func:`reading_time_ratio`     stated minutes / (open words / 200) within ×1.5
=============================  ======================================================
"""
from __future__ import annotations

import ast
import functools
import json
import re
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------
# Measures of a notebook: pure functions of a notebook (an nbformat dict, or a path to one).
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


def markdown_cells(nb) -> list:
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


def paragraphs(text: str) -> list:
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
    for i, text in markdown_cells(nb):
        for para in paragraphs(text):
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
    return sum(len(_WORD.findall(_prose_text(text))) for _, text in markdown_cells(nb))


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
    cells = markdown_cells(nb)
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
    for i, text in markdown_cells(nb):
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
    for i, text in markdown_cells(nb):
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
    return [(i, m.group(0).strip()) for i, text in markdown_cells(nb)
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


# -- open text of a built page (issue 44) ---------------------------------------------------
#
# The *open text* of a chapter's built page (``_build/html/book/NN-x.html``) is what a reader
# sees without opening anything: the article's prose, headings, lists, admonitions and figure
# captions (a caption is read with its figure: open text). Not open text: anything folded
# (``<details>``: sphinx-design dropdowns, the "Reproduce this page" box; ``dropdown``/
# ``toggle`` admonitions), whose title alone shows and is read; code cells (inputs, outputs,
# hidden cells' toggles, explorers), tables, display math, scripts and styles, the permalink
# marks, and everything outside the article (sidebar, header, footer). An inline formula
# reads as one word holding no number. Cross-references (internal links: "Fig. 3", "Liu et al., 2020", a chapter's title,
# an equation's "(3)"), caption numbers and citations are read as words but hold no numbers;
# so do typed references ("chapter 12", "chapters 11 and 12", "Fig. 3", "Eq. (3)", "§4").

OPEN_TARGETS = {  # measure (as tests/pending_pages.py names it) -> its target (issue 44)
    "open_numbers": 35,         # ≤ numbers per 1,000 open words (numbers_per_1000)
    "open_words": 5000,         # ≤ open words (open_word_count)
    "open_claim_ids": 3,        # ≤ claim ids in the open prose (claim_ids)
    "open_bookkeeping": 0,      # ≤ bookkeeping mentions in the open (bookkeeping)
    "open_grammar": 0,          # ≤ glued-grammar slips (grammar_slips)
    "open_reading_time": 1.5,   # stated / estimated minutes within ×this (reading_time_ratio)
}
OPEN_MEASURES = tuple(OPEN_TARGETS)

_CLOSED_TAGS = {"details", "table", "script", "style", "template", "noscript", "svg", "button",
                "head", "nav", "footer", "header"}
# classes of what is folded, code, math or furniture (a permalink's "#")
_CLOSED_CLASSES = {"dropdown", "toggle", "toggle-hidden", "cell", "cell_input", "cell_output",
                   "headerlink", "tfx-explorer", "tfx-reproduce", "sd-dropdown"}
_REF_CLASSES = {"caption-number", "eqno", "bibtex-citation", "std-numref", "std-ref", "doc"}
_TYPED_REF = re.compile(
    r"\b(?:[Cc]hapters?|[Cc]h\.|[Ss]ections?|[Ff]ig(?:ure)?s?\.?|[Ee]q(?:uation)?s?\.?|[Tt]ables?"
    r"|§)\s*\(?\d+[a-z]?\)?(?:\s*(?:,|and|or|to|–|-)\s*\(?\d+[a-z]?\)?)*")
_DIGITS = re.compile(r"\d+")
_WORD_CHAR = re.compile(r"[^\W\d]")  # a letter or an underscore


@functools.lru_cache(maxsize=4)
def _soup(html_text: str):
    from bs4 import BeautifulSoup  # jupyter-book's theme requires it; only this part reads it

    return BeautifulSoup(html_text, "html.parser")


def _article(soup):
    """The page's content: the article element (the sidebar, header and footer are outside
    it); the body when a page (a test's snippet) has none."""
    return soup.find("article") or soup.find("main") or soup.body or soup


def _closed(tag) -> bool:
    return tag.name in _CLOSED_TAGS or bool(_CLOSED_CLASSES & set(tag.get("class") or ()))


def _is_ref(tag) -> bool:
    classes = set(tag.get("class") or ())
    return bool(_REF_CLASSES & classes) or (
        tag.name == "a" and "reference" in classes and "external" not in classes)


@functools.lru_cache(maxsize=4)
def _open_segments(html_text: str) -> tuple:
    """``((text, is_reference), …)``: the open text of a built page, in reading order (the
    page is parsed once for all the measures; nothing here changes the tree)."""
    from bs4 import NavigableString, Tag
    from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

    out: list = []

    def walk(node, ref):
        for child in node.children:
            if isinstance(child, (Comment, Declaration, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                out.append((str(child), ref))
            elif isinstance(child, Tag):
                classes = set(child.get("class") or ())
                if _closed(child):
                    # a folded box's title shows ("Solution", "Evidence"); its body does not
                    title = (child.find("summary", recursive=False) if child.name == "details"
                             else child.find(class_="admonition-title", recursive=False)
                             if "admonition" in classes else None)
                    if title is not None:
                        walk(title, ref)
                    out.append(("\n", False))
                elif "math" in classes:
                    # inline: one word, no number; display math (a div) is not open text
                    out.append((" x " if child.name == "span" else "\n", False))
                else:
                    block = child.name in {"p", "li", "div", "section", "h1", "h2", "h3", "h4",
                                           "h5", "h6", "figcaption", "figure", "br", "blockquote",
                                           "dt", "dd", "ul", "ol"}
                    walk(child, ref or _is_ref(child))
                    if block:
                        out.append(("\n", False))

    walk(_article(_soup(html_text)), False)
    return tuple(out)


def open_text(html_text: str) -> str:
    """The open text of a built page (see the comment above :data:`OPEN_TARGETS`): one
    string, paragraphs on lines of their own."""
    return re.sub(r"[ \t\r\f\v]+", " ", "".join(t for t, _ in _open_segments(html_text)))


def _countable_text(html_text: str) -> str:
    """The open text with the digits of references masked (they are not numbers)."""
    text = "".join(re.sub(r"\d", "ℕ", t) if ref else t for t, ref in _open_segments(html_text))
    return _TYPED_REF.sub(lambda m: re.sub(r"\d", "ℕ", m.group(0)), text)


def is_number(token: str) -> bool:
    """Is a whitespace-separated token a number as a reader counts it: does it hold a run of
    digits not glued to a letter before it (``0.42``, ``1e-4``, ``6+6``, ``−0.56``, ``95``,
    ``(n=5)``, ``12-layer``), as opposed to the digits of a name (``LN-1``, ``H100``,
    ``fp16``, ``x_1``, ``GPT-2``, ``WMT’14``)? A token is one number however many digits it holds."""
    for m in _DIGITS.finditer(token):
        before = token[:m.start()].rstrip("-‑’'")  # LN-1, WMT’14: a name's digits
        if not (before and _WORD_CHAR.match(before[-1])):
            return True
    return False


def open_numbers(html_text: str) -> int:
    """The numbers in a page's open text (:func:`is_number`; references aside)."""
    return sum(is_number(tok) for tok in _countable_text(html_text).split())


def open_word_count(html_text: str) -> int:
    """The words of a page's open text (as :func:`word_count` counts words)."""
    return len(_WORD.findall(open_text(html_text)))


def numbers_per_1000(html_text: str) -> float:
    """Numbers per 1,000 open words. Target: ≤ 35."""
    words = open_word_count(html_text)
    return 1000 * open_numbers(html_text) / words if words else 0.0


CLAIM_ID = re.compile(r"\b[A-Z]{2,}-\d+\b")
NOT_CLAIM_IDS = {"GPT", "BERT", "ALBERT", "RMS", "IWSLT", "WMT", "UTF", "ISO", "SHA", "COVID"}


def claim_ids(html_text: str) -> list:
    """The claim ids (two or more capitals, a hyphen, digits: ``LN-1``, ``AD-3``) in a page's
    open prose, each occurrence, in order; model names (``GPT-2``) aside. Target: ≤ 3."""
    return [m.group(0) for m in CLAIM_ID.finditer(open_text(html_text))
            if m.group(0).split("-")[0] not in NOT_CLAIM_IDS]


PROFILES = ("quick", "book", "full")


def make_targets(makefile=None) -> tuple:
    """The Makefile's targets (``make book``, ``make notebooks``…): a ``make X`` naming one
    of them is bookkeeping; "make sure" is not."""
    path = Path(makefile) if makefile else ROOT / "Makefile"
    if not path.is_file():
        return ()
    found = re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", path.read_text(encoding="utf-8"), re.M)
    return tuple(sorted(set(found)))


def _bookkeeping_patterns(targets) -> dict:
    profiles = "|".join(PROFILES)
    make = "|".join(re.escape(t) for t in targets) or r"(?!x)x"
    return {
        "commit": re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
        "experiment file": re.compile(r"\bexperiments/[\w.*-]+|\b[\w-]+\.toml\b"),
        "results file": re.compile(r"\bresults/[\w.*-]*|\b[\w-]+\.(?:quick|book|full)(?:\.[\w-]+)*"
                                   r"\.jsonl\b"),
        "make target": re.compile(rf"\bmake\s+(?:{make})\b(?![\w-])"),
        "profile": re.compile(rf"\b(?:profile\s+[`'‘“\"]?(?:{profiles})\b|(?:{profiles})[`'’”\"]?"
                              rf"\s+profile\b|TFX_PROFILE)", re.I),
        "GPU status": re.compile(r"\b(?:not\s+(?:yet\s+)?(?:been\s+)?run\s+on\s+a\s+GPU|GPU\s+"
                                 r"(?:records?|runs?|status|burst|plan|results?)\b|"
                                 r"(?:at|on)\s+GPU\s+scale|gpu[-_](?:plan|burst|results))", re.I),
    }


def bookkeeping(html_text: str, targets=None) -> list:
    """Bookkeeping in a page's open text, as ``[(kind, what)]``: commit hashes (7–40 hex
    digits holding a digit and a letter), experiment files (``experiments/…``, ``*.toml``),
    result files (``results/…``, ``*.book.jsonl``), ``make X`` for a Makefile target X
    (``targets``: :func:`make_targets`), profile names ("profile book", "the ``quick``
    profile", ``TFX_PROFILE``) and GPU status ("not yet run on a GPU", "GPU records", "at GPU
    scale"). Their one place is the folded "Reproduce this page" box. Target: none."""
    text = open_text(html_text)
    patterns = _bookkeeping_patterns(make_targets() if targets is None else targets)
    return [(kind, re.sub(r"\s+", " ", m.group(0))) for kind, p in patterns.items()
            for m in p.finditer(text)]


_SUBJECT_VERB = r"(?:ended|ends|finished|finishes|was|were|is|are|learned|diverged|plateaued)"
_OUTCOME = r"(?:did\s+not\s+(?:learn|diverge|train)|diverged|plateaued|learned|trained)"
_FUNCTION_WORDS = ("The|A|An|This|That|These|Those|It|Its|Our|Their|Each|Every|Some|No|"
                   "And|Or|But|Of|In|On|At|To|For|With")
GRAMMAR = {
    # a word twice ("the the", "did did"); a number twice is a table's business, not grammar
    # ("two two-point distributions", a compound, is fine)
    "doubled word": re.compile(r"\b([^\W\d_]+)\s+\1\b(?![-‑])", re.I),
    # a capitalised function word after a mid-sentence "the" ("the The", "the A"): a glued
    # sentence pasted mid-sentence; "the Adam optimiser", "the Transformer" are fine
    "capital after 'the'": re.compile(rf"\bthe\s+(?:{_FUNCTION_WORDS})\b"),
    # an outcome phrase pasted after a verb: "ended did not learn", "which learned did not
    # learn", "was diverged" ("was learned", a passive, is fine)
    "outcome after a verb": re.compile(
        rf"\b(?!(?:was|were|is|are)\s+(?:learned|trained)\b){_SUBJECT_VERB}\s+{_OUTCOME}\b"),
    # a setting's label pasted as prose: a capitalised name and a setting's value, then a
    # colon ("Warmup none:", "Warmup True:"); code in the prose ("(embed_scale=False):") is fine
    "label": re.compile(r"\b[A-Z][\w-]*\s+(?:none|None|True|False|true|false)\s*:"),
}


def grammar_in(text: str) -> list:
    """The slips of one string, as ``[(kind, the words)]`` (:data:`GRAMMAR`)."""
    text = re.sub(r"\s+", " ", text)
    return [(kind, m.group(0)) for kind, p in GRAMMAR.items() for m in p.finditer(text)]


def grammar_slips(html_text: str) -> list:
    """Glued-grammar slips in a page: over its open text (where a glued string meets the
    words around it) and over every glued string (``span.pasted-text``), folded or not,
    each slip once. Target: none."""
    soup = _soup(html_text)
    found = grammar_in(open_text(html_text))
    for span in _article(soup).find_all(class_=["pasted-text", "pasted-inline"]):
        for slip in grammar_in(span.get_text()):
            if slip not in found:
                found.append(slip)
    return found


_OPEN_READING = re.compile(r"Reading time\W*(?:about|around|roughly|~)?\s*(\d+)"
                           r"(?:\s*[–-]\s*(\d+))?\s*min", re.I)


def open_stated_minutes(html_text: str) -> float | None:
    """The reading time the page's "In this chapter" box states (the middle of a range), or
    None."""
    soup = _soup(html_text)
    box = next((t for t in _article(soup).find_all(class_="admonition")
                if (t.find(class_="admonition-title") or t).get_text().strip().lower()
                == "in this chapter"), None)
    m = _OPEN_READING.search(box.get_text(" ") if box else "")
    if not m:
        return None
    return (int(m.group(1)) + int(m.group(2) or m.group(1))) / 2


def reading_time_ratio(html_text: str) -> float | None:
    """Stated reading minutes / (open words / :data:`WORDS_PER_MINUTE`); None when no time is
    stated or the page has no words. Target: within ×1.5 (between 1/1.5 and 1.5)."""
    stated, words = open_stated_minutes(html_text), open_word_count(html_text)
    return stated / (words / WORDS_PER_MINUTE) if stated and words else None


def open_measures(html_text: str, targets=None) -> dict:
    """Every open-text measure of one built page, ``{measure: value}``; the lists
    (claim ids, bookkeeping, slips) are what was found."""
    return {
        "open_numbers": round(numbers_per_1000(html_text), 1),
        "open_words": open_word_count(html_text),
        "open_claim_ids": claim_ids(html_text),
        "open_bookkeeping": bookkeeping(html_text, targets),
        "open_grammar": grammar_slips(html_text),
        "open_reading_time": reading_time_ratio(html_text),
    }


def open_problem(measure: str, value) -> str | None:
    """What misses ``measure``'s target (:data:`OPEN_TARGETS`) as text, or None if ``value``
    (from :func:`open_measures`) meets it."""
    target = OPEN_TARGETS[measure]
    what = {"open_numbers": "numbers per 1,000 open words", "open_words": "open words",
            "open_claim_ids": "claim ids in the open prose", "open_bookkeeping":
            "bookkeeping in the open (only in the folded 'Reproduce this page' box)",
            "open_grammar": "glued-grammar slips"}.get(measure, measure)
    if measure == "open_reading_time":
        if value is None:
            return "no reading time stated in the 'In this chapter' box"
        return (None if 1 / target <= value <= target else
                f"stated reading time is {value:.2f} × open words / {WORDS_PER_MINUTE} "
                f"(target: within ×{target:g})")
    if isinstance(value, list):
        return (None if len(value) <= target else
                f"{len(value)} {what} (target ≤ {target}): "
                + ", ".join(str(v) for v in value[:8]) + (" …" if len(value) > 8 else ""))
    return None if value <= target else f"{value} {what} (target ≤ {target})"


def open_text_report(root=ROOT, html_root=None) -> str:
    """For every chapter ``_toc.yml`` lists: each open-text measure and whether it meets its
    target (what ``python tools/pagecheck.py --open-text`` prints)."""
    root = Path(root)
    html_root = Path(html_root) if html_root else root / "_build" / "html"
    targets = make_targets(root / "Makefile")
    t = OPEN_TARGETS
    lines = [f"open text of {html_root} (targets: ≤ {t['open_numbers']} numbers per 1,000 words, "
             f"≤ {t['open_words']} words, ≤ {t['open_claim_ids']} claim ids, no bookkeeping, no "
             f"slips, reading time within ×{t['open_reading_time']:g})"]
    for nb in toc_notebooks(root):
        page = html_root / nb.relative_to(root).with_suffix(".html")
        if not page.is_file():
            lines.append(f"{nb.stem}: no built page ({page})")
            continue
        values = open_measures(page.read_text(encoding="utf-8", errors="replace"), targets)
        lines.append(nb.stem)
        for k, v in values.items():
            problem = open_problem(k, v)
            shown = (f"{len(v)}" + (f": {v[:4]}" if v else "") if isinstance(v, list) else
                     f"{v:.2f}" if isinstance(v, float) and k == "open_reading_time" else v)
            lines.append(f"  {'ok  ' if problem is None else 'MISS'} {k}: {shown}")
    return "\n".join(lines)


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
    their bar: what ``python tools/pagecheck.py book/NN-x.ipynb`` prints."""
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
    """Print each page's notebook measures (stated and estimated reading minutes under
    reading_time), exit 1 if any page misses a bar; or, with ``--open-text``, every chapter's
    open-text measures from the built book (a report: exit 0, or 2 with no built book)."""
    import argparse

    ap = argparse.ArgumentParser(description="Measure chapter pages against the page conventions.")
    ap.add_argument("notebooks", nargs="*")
    ap.add_argument("--open-text", action="store_true",
                    help="every chapter's open-text measures (issue 44) from the built HTML")
    ap.add_argument("--html", default=None,
                    help="the built book (default: $TFX_BOOK_HTML or _build/html)")
    args = ap.parse_args(argv)
    if args.open_text:
        import os

        html_root = Path(args.html or os.environ.get("TFX_BOOK_HTML") or ROOT / "_build" / "html")
        if not html_root.is_dir():
            print(f"{html_root}: no built book (make book-rendered)")
            return 2
        print(open_text_report(ROOT, html_root))
        return 0
    if not args.notebooks:
        ap.error("name notebooks, or --open-text")
    failed = False
    for path in args.notebooks:
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
