"""Every chapter of the book held to the page conventions (issue 29; tfx/book/page.py's
docstring and CONTRIBUTING.md): one test per measure of tools/pagecheck.py, for each notebook
the table of contents lists (_toc.yml: a chapter added or split is tested without a change
here).

A chapter not yet rewritten to a convention is on THE one list of exceptions,
tests/pending_pages.py, with why; its test then checks that the chapter still fails, so an
entry cannot outlive the work: once the chapter passes, the test fails and says to take the
entry off the list.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

import pagecheck as page  # tools/pagecheck.py (tests/conftest.py puts tools/ on the path)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import pending_pages  # noqa: E402  tests/pending_pages.py: the one list of exceptions

CHAPTERS = page.toc_notebooks(ROOT)
STEMS = [p.stem for p in CHAPTERS]


@functools.lru_cache(maxsize=None)
def _notebook(stem: str) -> dict:
    return page.as_notebook(ROOT / "book" / f"{stem}.ipynb")


def _lines(items, show=5) -> str:
    items = list(items)
    more = f"\n  … and {len(items) - show} more" if len(items) > show else ""
    return "\n  " + "\n  ".join(str(x) for x in items[:show]) + more


# measure -> (what the bar is, a function of the notebook: the problem as text, or None)
def _visible_code(nb):
    n = page.visible_code_lines(nb)
    return (f"{n} visible code lines (bar: ≤ {page.MAX_VISIBLE_CODE_LINES}); move glue, tables, "
            "verdicts and figure drawing into a tfx.book module or a remove-input/hide-input cell"
            if n > page.MAX_VISIBLE_CODE_LINES else None)


def _dense(nb):
    found = page.dense_paragraphs(nb)
    return (f"paragraphs with more than {page.MAX_NUMBERS} numbers (cell, numbers, start): "
            "put per-seed numbers in a table or a dropdown" + _lines(found) if found else None)


def _opening(nb):
    return (None if page.has_opening_box(nb) else
            "no ':::{admonition} In this chapter' box with 'Reading time: about N minutes' "
            "in the first Markdown after the title")


def _reading_time(nb):
    if page.reading_time_fits(nb):
        return None
    stated, words = page.stated_reading_minutes(nb), page.word_count(nb)
    if stated is None:
        return (f"no reading time stated in the opening box ({words} words: about "
                f"{words / page.WORDS_PER_MINUTE:.0f} minutes at {page.WORDS_PER_MINUTE} a minute)")
    return (f"stated reading time {stated:g} min is not within a factor "
            f"{page.READING_TIME_FACTOR:g} of {words} words / {page.WORDS_PER_MINUTE} = "
            f"{words / page.WORDS_PER_MINUTE:.1f} min")


def _takeaways(nb):
    return (None if page.has_takeaways_box(nb) else
            "no ':::{admonition} Key takeaways' box before the Exercises")


def _figures(nb):
    found = page.uncaptioned_figures(nb)
    return "figures without a numbered caption:" + _lines(found) if found else None


def _wide(nb):
    found = page.wide_output_lines(nb)
    return (f"printed lines over {page.OUTPUT_WIDTH} characters (cell, line):" + _lines(found)
            if found else None)


def _reproduce(nb):
    return (None if page.ends_with_reproduce(nb) else
            "the last cell is not page.reproduce(P, …) tagged remove-input")


MEASURES = {
    "visible_code_lines": _visible_code,
    "dense_paragraphs": _dense,
    "opening_box": _opening,
    "reading_time": _reading_time,
    "takeaways_box": _takeaways,
    "uncaptioned_figures": _figures,
    "wide_output_lines": _wide,
    "ends_with_reproduce": _reproduce,
}


check = pending_pages.check


def _params():
    return STEMS or [pytest.param(None, marks=pytest.mark.skip("no notebook in _toc.yml"))]


@pytest.mark.parametrize("stem", _params())
def test_visible_code_lines(stem):
    check(stem, "visible_code_lines", _visible_code(_notebook(stem)))


@pytest.mark.parametrize("stem", _params())
def test_dense_paragraphs(stem):
    check(stem, "dense_paragraphs", _dense(_notebook(stem)))


@pytest.mark.parametrize("stem", _params())
def test_opening_box(stem):
    check(stem, "opening_box", _opening(_notebook(stem)))


@pytest.mark.parametrize("stem", _params())
def test_reading_time(stem):
    check(stem, "reading_time", _reading_time(_notebook(stem)))


@pytest.mark.parametrize("stem", _params())
def test_takeaways_box(stem):
    check(stem, "takeaways_box", _takeaways(_notebook(stem)))


@pytest.mark.parametrize("stem", _params())
def test_uncaptioned_figures(stem):
    check(stem, "uncaptioned_figures", _figures(_notebook(stem)))


@pytest.mark.parametrize("stem", _params())
def test_wide_output_lines(stem):
    check(stem, "wide_output_lines", _wide(_notebook(stem)))


@pytest.mark.parametrize("stem", _params())
def test_ends_with_reproduce(stem):
    check(stem, "ends_with_reproduce", _reproduce(_notebook(stem)))


def test_the_pending_list_names_real_chapters_and_measures():
    """An entry for a chapter the table of contents no longer lists (renamed, split), or for a
    measure no test reads, would excuse nothing: it must go."""
    known = set(MEASURES) | set(pending_pages.OTHER_MEASURES)
    for stem, entries in pending_pages.PENDING.items():
        assert stem in STEMS, f"tests/pending_pages.py: {stem} is not a notebook in _toc.yml"
        unknown = set(entries) - known
        assert not unknown, f"tests/pending_pages.py: {stem}: unknown measures {sorted(unknown)}"
        assert all(isinstance(w, str) and w.strip() for w in entries.values()), \
            f"tests/pending_pages.py: {stem}: every entry says why"


def test_a_pending_entry_cannot_outlive_the_work(monkeypatch):
    """The still-fails check: a listed chapter that meets the bar fails its test."""
    monkeypatch.setitem(pending_pages.PENDING, "99-fixture", {"opening_box": "not yet written"})
    check("99-fixture", "opening_box", "no box")  # still failing: passes
    with pytest.raises(AssertionError, match="take it off"):
        check("99-fixture", "opening_box", None)
    with pytest.raises(AssertionError, match="no box"):
        check("98-not-listed", "opening_box", "no box")


def test_a_page_written_to_the_conventions_meets_every_measure():
    """The conventions can be met: a small chapter written as CONTRIBUTING.md says passes
    every measure (and the notation check), and dropping any one part fails its measure."""
    sys.path.insert(0, str(ROOT / "tests" / "book"))
    from test_page_measures import code, glue_output, md, notebook

    prose = " ".join(["A sentence a learner reads."] * 300)  # 1500 words: 7.5 minutes
    opening = ("# A chapter\n\n:::{admonition} In this chapter\n**The question.** Why?\n\n"
               "**Reading time:** about 8 minutes. **Symbols:** $N$ layers, $d$ width.\n:::\n")
    figure = ("```{glue:figure} fig-xx-loss\n:name: fig-xx-loss\n\n"
              "**The loss falls.** Held-out loss against steps.\n```\n")
    takeaways = (":::{admonition} Key takeaways\n:class: tip\nAdam's $\\beta_2$ matters; "
                 "$\\beta_{i,j}$ too. Loss {glue:text}`loss:.2f`. See the "
                 "[practice page](25-practice.md).\n:::\n")
    cells = {
        "opening": md(opening),
        "setup": code("from tfx.book import notebook\nP = notebook.setup()"),
        "prose": md("## The argument\n\n" + prose),
        "glue": code("glue('fig-xx-loss', fig, display=False)\nglue('loss', 0.5)",
                     outputs=[glue_output("fig-xx-loss", "<Figure>"), glue_output("loss", "0.5")]),
        "figure": md(figure),
        "takeaways": md(takeaways),
        "exercises": md("## Exercises\n\n1. Predict, then run."),
        "reproduce": code("from tfx.book import page\npage.reproduce(P, experiments=('x',))",
                          tags=("remove-input",)),
    }
    nb = notebook(*cells.values())
    for measure, problem in MEASURES.items():
        assert problem(nb) is None, f"{measure}: {problem(nb)}"
    assert page.stray_betas(nb) == []
    without = {"opening": ("opening_box", "reading_time"), "takeaways": ("takeaways_box",),
               "reproduce": ("ends_with_reproduce",)}
    for part, measures in without.items():
        cut = notebook(*(c for k, c in cells.items() if k != part))
        for measure in measures:
            assert MEASURES[measure](cut) is not None, f"{measure} passes without the {part}"


def test_the_claims_page_links_every_chapter_it_names():
    """'chapter N' on the generated claims page is a link to chapter N's file (issue 44: every
    "chapter N" a link); a number no chapter has stays text."""
    from tfx.book.claims_page import link_chapters
    assert link_chapters("see chapter 3") == "see [chapter 3](03-layernorm-jacobian.ipynb)"
    assert link_chapters("Chapters 11 and 12 agree") == (
        "Chapters [11](11-warmup-adam.ipynb) and [12](12-depth-with-warmup.ipynb) agree")
    assert link_chapters("chapter 99 and chapter 3's") == "chapter 99 and [chapter 3](03-layernorm-jacobian.ipynb)'s"
    assert link_chapters("[chapter 3](03-layernorm-jacobian.ipynb)") == "[chapter 3](03-layernorm-jacobian.ipynb)"
