"""Each measure of a page (tools/pagecheck.py) on small constructed notebooks: one that fails
its bar and one that passes it, so a measure that stopped measuring would be caught."""
from __future__ import annotations

import json

import pytest

import pagecheck as page  # tools/pagecheck.py (tests/conftest.py puts tools/ on the path)

COLAB = ("# On Colab only: install tfx-book\nimport subprocess, sys\n"
         "if \"google.colab\" in sys.modules:\n    pass\n")


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(text, tags=(), outputs=()):
    return {"cell_type": "code", "metadata": {"tags": list(tags)} if tags else {},
            "source": text, "outputs": list(outputs), "execution_count": None}


def glue_output(name, plain, prefix="application/papermill.record/"):
    return {"output_type": "display_data", "data": {prefix + "text/plain": plain},
            "metadata": {"scrapbook": {"name": name, "mime_prefix": prefix}}}


def stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def image(tags_meta=None):
    return {"output_type": "display_data", "data": {"image/png": "iVBORw0K", "text/plain": "<Figure>"},
            "metadata": tags_meta or {}}


def notebook(*cells):
    return {"cells": [code(COLAB, tags=("colab-setup", "remove-cell")), *cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


# -- visible code lines ------------------------------------------------------------------

def test_visible_code_lines_counts_only_what_a_reader_sees():
    nb = notebook(md("# T"), code("a = 1\n\nb = 2\n"), code("x = 1\n", tags=("remove-input",)),
                  code("y = 1\n", tags=("hide-input",)), code("z = 1\n", tags=("remove-cell",)))
    assert page.visible_code_lines(nb) == 2  # not the Colab cell, blanks or hidden inputs


def test_visible_code_lines_skips_an_untagged_colab_cell_only_as_the_first_code_cell():
    nb = {"cells": [code(COLAB), md("# T"), code("a = 1\n")]}
    assert page.visible_code_lines(nb) == 1
    nb = {"cells": [code("a = 1\n"), code(COLAB)]}
    assert page.visible_code_lines(nb) == 1 + 4


def test_visible_code_lines_bar():
    long = notebook(md("# T"), code("x = 1\n" * 121))
    short = notebook(md("# T"), code("x = 1\n" * 120))
    assert page.visible_code_lines(long) > page.MAX_VISIBLE_CODE_LINES
    assert page.visible_code_lines(short) <= page.MAX_VISIBLE_CODE_LINES


def test_visible_code_lines_reads_a_path(tmp_path):
    f = tmp_path / "x.ipynb"
    f.write_text(json.dumps(notebook(md("# T"), code("a = 1\nb = 2\n"))))
    assert page.visible_code_lines(f) == page.visible_code_lines(str(f)) == 2


# -- dense paragraphs --------------------------------------------------------------------

def test_dense_paragraphs_fails_past_the_limit_and_passes_at_it():
    thirteen = " ".join(str(k) for k in range(13))
    twelve = " ".join(str(k) for k in range(12))
    assert [n for _, n, _ in page.dense_paragraphs(notebook(md(f"Seeds {thirteen}.")))] == [13]
    assert page.dense_paragraphs(notebook(md(f"Seeds {twelve}."))) == []
    assert page.dense_paragraphs(notebook(md(f"Seeds {twelve}.")), limit=11) != []


def test_paragraphs_and_list_items_are_counted_apart():
    six = "1 2 3 4 5 6"
    nb = notebook(md(f"A {six}\nstill the same paragraph {six}.\n\nAnother {six}."))
    assert [n for _, n, _ in page.dense_paragraphs(nb, limit=6)] == [12]
    nb = notebook(md(f"- one {six} {six}\n- two {six}\n  continued {six}\n- three {six}"))
    assert [n for _, n, _ in page.dense_paragraphs(nb, limit=6)] == [12, 12]


def test_a_glued_value_counts_the_numbers_it_prints():
    nb = notebook(md("Loss {glue:text}`seeds` and {glue:text}`m:.2f` and {glue}`missing`."),
                  code("glue(...)", outputs=[glue_output("seeds", "'1.0, 2.0, 3.0, 4.0 (5–6)'"),
                                             glue_output("m", "0.123456", prefix="")]))
    assert page.numbers_in(page.markdown_cells(nb)[0][1], page.glued_values(nb)) == 6 + 1 + 1
    assert page.dense_paragraphs(nb, limit=7) == [(1, 8, page.markdown_cells(nb)[0][1][:70])]
    assert page.dense_paragraphs(nb, limit=8) == []


def test_a_glued_markdown_table_is_a_table():
    table = "| seed | loss |\n|---|---|\n" + "".join(f"| {k} | 0.{k}1 |\n" for k in range(9))
    glued = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "t", "mime_prefix": ""}},
             "data": {"text/markdown": "Over 3 seeds at 2 rates:\n\n" + table, "text/plain": "<Markdown>"}}
    nb = notebook(md("{glue:md}`t`"), code("glue('t', Markdown(table))", outputs=[glued]))
    assert page.numbers_in("{glue:md}`t`", page.glued_values(nb)) == 2  # the sentence's, not the table's
    assert page.dense_paragraphs(nb, limit=2) == []


def test_what_is_not_a_number_in_the_prose():
    text = ("## 12 Chapter heading 34\n\n"
            "Math $x_1 + 2 = 3$ and $$y = 4$$ (eq-lemma-2), code `f(5, 6)`, a link "
            "[chapter](https://e.org/7/8.html), {cite:p}`smith2019` {numref}`fig-09-x` "
            "{ref}`chance-loss` {eq}`eq-10`, ids LN-1 H100 fp16 fig-05-a, chapter 6, "
            "chapters 11 and 13, ch. 3 and a real 11.\n\n"
            "| a | b |\n|---|---|\n| 13 | 14 |\n\n"
            "```python\nx = [15, 16]\n```\n\n"
            ":::{dropdown} Per-seed losses\n17 18 19\n:::\n\n"
            "```{admonition} Note\n:class: dropdown\n20 21\n```\n\n"
            "```{glue:figure} fig-22\n:name: fig-22\n\nCaption with 23.\n```\n")
    nb = notebook(md(text))
    counts = [page.numbers_in(p) for p in page.paragraphs(text)]
    assert sum(counts) == 2  # "11" and the caption's "23"
    assert [n for _, n, _ in page.dense_paragraphs(nb, limit=0)] == [1, 1]


# -- opening box and reading time --------------------------------------------------------

OPENING = (":::{admonition} In this chapter\n**The question.** Why?\n"
           "**Reading time:** about 2 minutes. **Symbols:** $N$ layers.\n:::\n")


def test_has_opening_box_in_the_first_markdown_after_the_title():
    assert page.has_opening_box(notebook(md("# Title\n\n" + OPENING)))
    assert page.has_opening_box(notebook(md("# Title"), code("P = setup()"), md(OPENING)))
    assert not page.has_opening_box(notebook(md("# Title\n\nSome text."), md(OPENING)))  # too late
    assert not page.has_opening_box(notebook(md("# Title\n\n## First section\n\n" + OPENING)))
    no_time = OPENING.replace("**Reading time:** about 2 minutes. ", "")
    assert not page.has_opening_box(notebook(md("# Title\n\n" + no_time)))
    other = OPENING.replace("In this chapter", "Note")
    assert not page.has_opening_box(notebook(md("# Title\n\n" + other)))


def test_stated_reading_minutes():
    assert page.stated_reading_minutes(notebook(md("# T\n\n" + OPENING))) == 2
    ranged = OPENING.replace("about 2 minutes", "10–14 min")
    assert page.stated_reading_minutes(notebook(md("# T\n\n" + ranged))) == 12
    assert page.stated_reading_minutes(notebook(md("# T\n\nNo box."))) is None


def test_word_count_counts_prose_words_only():
    nb = notebook(md("# A title\n\nTwo words $x^2 + y$ and {cite:p}`k`.\n\n"
                     "```python\nnot prose at all\n```\n\n$$\na + b = c\n$$\n\n"
                     ":::{dropdown} Solution\n:open:\nfolded but read\n:::\n\n"
                     "| seed | loss |\n|---|---|\n"))
    # the title's 2; a formula and a citation: 1 each; the dropdown's title 1 and body 3;
    # the table's 2
    assert page.word_count(nb) == 2 + 5 + 4 + 2


def test_reading_time_within_a_factor_two():
    box_words = page.word_count(notebook(md("# T\n\n" + OPENING)))
    words = " ".join(["word"] * (800 - box_words))  # 800 words: 4 minutes at 200 a minute
    for minutes, fits in ((2, True), (8, True), (1, False), (9, False), (0, False)):
        box = OPENING.replace("about 2 minutes", f"about {minutes} minutes")
        assert page.reading_time_fits(notebook(md("# T\n\n" + box), md(words))) is fits, minutes
    assert not page.reading_time_fits(notebook(md("# T"), md(words)))


# -- takeaways ---------------------------------------------------------------------------

TAKEAWAYS = ":::{admonition} Key takeaways\n:class: tip\nOne. Two. Three.\n:::\n"


def test_has_takeaways_box_before_the_exercises():
    assert page.has_takeaways_box(notebook(md("# T"), md(TAKEAWAYS), md("## Exercises\n\n1. Do.")))
    assert page.has_takeaways_box(notebook(md("# T"), md(TAKEAWAYS)))
    assert page.has_takeaways_box(notebook(md("# T\n\n" + TAKEAWAYS + "\n## Exercises\n")))
    assert not page.has_takeaways_box(notebook(md("# T"), md("## Exercises\n\n1. Do."), md(TAKEAWAYS)))
    assert not page.has_takeaways_box(notebook(md("# T\n\n## Exercises\n\n" + TAKEAWAYS)))
    assert not page.has_takeaways_box(notebook(md("# T"), md("**Key takeaways.** One.")))


# -- figures -----------------------------------------------------------------------------

FIGURE = "```{glue:figure} fig-x\n:name: fig-x\n\n**The point.** What is drawn.\n```\n"


def test_uncaptioned_figures():
    glued = glue_output("fig-x", "<Figure>")
    good = notebook(md("# T"), code("glue('fig-x', fig)", outputs=[glued]), md(FIGURE),
                    code("plot()", tags=("remove-output",), outputs=[image()]))
    assert page.uncaptioned_figures(good) == []
    shown = notebook(md("# T"), code("plot()", outputs=[image()]))
    assert len(page.uncaptioned_figures(shown)) == 1
    unnamed = notebook(md(FIGURE.replace(":name: fig-x\n", "")))
    assert [p for p in page.uncaptioned_figures(unnamed) if "no :name:" in p]
    bare = notebook(md("```{glue:figure} fig-x\n:name: fig-x\n```\n"))
    assert [p for p in page.uncaptioned_figures(bare) if "no caption" in p]
    colons = notebook(md(":::{glue:figure} fig-x\n:name: fig-x\n:::\n"))
    assert [p for p in page.uncaptioned_figures(colons) if "no caption" in p]


# -- wide output lines -------------------------------------------------------------------

def test_wide_output_lines():
    wide, fits = "x" * 78, "x" * 77
    assert page.wide_output_lines(notebook(code("print()", outputs=[stream(fits + "\n")]))) == []
    assert page.wide_output_lines(notebook(code("print()", outputs=[stream(wide + "\n")]))) == [(1, wide)]
    plain = {"output_type": "execute_result", "data": {"text/plain": wide}, "metadata": {}}
    assert len(page.wide_output_lines(notebook(code("x", outputs=[plain])))) == 1
    html = {"output_type": "display_data", "data": {"text/plain": wide, "text/html": "<b>x</b>"},
            "metadata": {}}
    assert page.wide_output_lines(notebook(code("x", outputs=[html]))) == []  # shown as HTML
    removed = code("print()", tags=("remove-output",), outputs=[stream(wide)])
    assert page.wide_output_lines(notebook(removed)) == []
    assert page.wide_output_lines(notebook(code("g", outputs=[glue_output("v", repr(wide))]))) == []


# -- reproduce ---------------------------------------------------------------------------

def test_ends_with_reproduce():
    last = "from tfx.book import page\npage.reproduce(P, experiments=('warmup',))"
    assert page.ends_with_reproduce(notebook(md("# T"), code(last, tags=("remove-input",))))
    assert not page.ends_with_reproduce(notebook(md("# T"), code(last)))  # input shown
    assert not page.ends_with_reproduce(notebook(code(last, tags=("remove-input",)), md("## After")))
    assert not page.ends_with_reproduce(notebook(md("# T"), code("print(1)", tags=("remove-input",))))


# -- notation ----------------------------------------------------------------------------

@pytest.mark.parametrize("beta", [
    r"\beta_{i,j}", r"\beta_{ij}", r"\beta_{i,i}^2", r"\beta^2_{i,j}", r"\beta^{\text{pre}}_{i,j}",
    r"\beta_{i, i-1}", r"\beta_1", r"\beta_2", r"\beta_2^t", r"\beta_{2}", r"\beta_1^{t}",
    r"\beta_2^{t-t_0}"])
def test_the_betas_the_notation_allows(beta):
    assert page.stray_betas(notebook(md(f"Here ${beta}$ is fine."))) == []


@pytest.mark.parametrize("beta", [r"\beta", r"\beta^2", r"\beta_e", r"\beta_k", r"\beta_{l}", r"\beta_3"])
def test_the_betas_the_notation_refuses(beta):
    assert page.stray_betas(notebook(md(f"Here ${beta} = 1$ is not."))) == [(1, beta)]


def test_stray_betas_reads_markdown_only():
    assert page.stray_betas(notebook(code("# $\\beta$ in a comment"))) == []


# -- raw Markdown tables in built HTML ---------------------------------------------------

def test_raw_markdown_tables():
    raw = ('<div class="cell_output docutils container"><div class="output stream highlight-myst-ansi">'
           '<div class="highlight"><pre><span></span>| a | b |\n|---|---|\n| 1 | 2 |\n</pre></div></div></div>')
    rendered = ('<div class="cell_output docutils container"><div class="output text_markdown">'
                '<table><tr><th>a</th></tr><tr><td>1</td></tr></table></div></div>')
    quoted = '<div class="highlight"><pre>| a | b |\n|---|---|\n</pre></div>'  # prose code: fine
    assert page.raw_markdown_tables(raw) == ["|---|---|"]
    assert page.raw_markdown_tables(rendered) == []
    assert page.raw_markdown_tables(quoted) == []
    aligned = raw.replace("|---|---|", "| :- | -: |")
    assert page.raw_markdown_tables(aligned) == ["| :- | -: |"]
    assert page.raw_markdown_tables(raw.replace("|---|---|", "|-1|2|")) == []


# -- the chapters the tests read ---------------------------------------------------------

def test_toc_notebooks_reads_parts_chapters_and_sections(tmp_path):
    (tmp_path / "book").mkdir()
    for name in ("a", "b", "c"):
        (tmp_path / "book" / f"{name}.ipynb").write_text("{}")
    (tmp_path / "book" / "m.md").write_text("# M")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/m\nparts:\n  - caption: X\n    chapters:\n"
        "      - file: book/b\n        sections:\n          - file: book/a\n      - file: book/m\n"
        "      - file: book/c.ipynb\n")
    assert [p.name for p in page.toc_notebooks(tmp_path)] == ["b.ipynb", "a.ipynb", "c.ipynb"]


def test_summary_and_the_command(tmp_path, capsys):
    nb = notebook(md("# T"), code("x = 1\n" * 121))
    s = page.summary(nb)
    assert "visible_code_lines" not in s["ok"] and "dense_paragraphs" in s["ok"]
    assert "opening_box" not in s["ok"] and "notation" in s["ok"]
    f = tmp_path / "x.ipynb"
    f.write_text(json.dumps(nb))
    assert page.main([str(f)]) == 1
    assert "MISS visible_code_lines: 121" in capsys.readouterr().out
