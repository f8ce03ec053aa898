"""The book's notation (book/notation.md) holds in every chapter, and the notation page
defines the three terms the chapters link.

β is the layer dependency β_{i,j} (two indices) or Adam's β₁, β₂, nothing else: a chapter
whose Markdown writes another ``\\beta`` (a bare ``\\beta``, DeepNorm's ``\\beta``, LayerNorm's
bias) fails, unless it is listed under measure ``notation`` in tests/pending_pages.py (then
it must still fail: the entry goes when the chapter is fixed).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pagecheck as page  # tools/pagecheck.py (tests/conftest.py puts tools/ on the path)
from tfx.runs import outcome, train

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import pending_pages  # noqa: E402

NOTATION = ROOT / "book" / "notation.md"
LABELS = ("chance-loss", "floor-loss", "outcome-rule")
STEMS = [p.stem for p in page.toc_notebooks(ROOT)]


def _page_as_notebook(text: str) -> dict:
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": text}]}


def _stray(nb) -> str | None:
    found = page.stray_betas(nb)
    return ("β other than the layer dependency \\beta_{i,j} or Adam's \\beta_1, \\beta_2 "
            "(book/notation.md: DeepNorm's init gain is \\kappa, LayerNorm's bias b): "
            + ", ".join(f"cell {i}: {b}" for i, b in found[:8])) if found else None


@pytest.mark.parametrize("stem", STEMS or [pytest.param(None, marks=pytest.mark.skip("no chapters"))])
def test_chapters_use_beta_only_for_layer_dependency_and_adam(stem):
    pending_pages.check(stem, "notation", _stray(page.as_notebook(ROOT / "book" / f"{stem}.ipynb")))


def test_the_beta_check_catches_a_stray_beta():
    nb = _page_as_notebook(r"DeepNorm's $\beta$ and Adam's $\beta_2$ and $\beta_{i,i}^2$.")
    assert _stray(nb) is not None and r"\beta" in _stray(nb)
    assert _stray(_page_as_notebook(r"Adam's $\beta_2$ and $\beta_{i,i}^2$.")) is None


@pytest.mark.parametrize("label", LABELS)
def test_the_notation_page_defines_the_terms_chapters_link(label):
    text = NOTATION.read_text(encoding="utf-8")
    assert f"({label})=\n#" in text, f"book/notation.md lacks the section labelled ({label})="


def test_the_notation_page_keeps_its_own_notation():
    assert _stray(_page_as_notebook(NOTATION.read_text(encoding="utf-8"))) is None


def test_the_outcome_rule_on_the_page_states_the_codes_thresholds():
    """The page describes tfx.runs.outcome's rule: its constants, by the names the code uses
    and the values it holds (a change to the code must change the page)."""
    text = NOTATION.read_text(encoding="utf-8")
    words = {0.25: "a quarter", 0.2: "a fifth"}
    assert outcome.LEARNED_SHARE in words and f"{words[outcome.LEARNED_SHARE]} (`LEARNED_SHARE`)" in text
    assert outcome.LAST_SHARE in words and f"{words[outcome.LAST_SHARE]} of the\n  run earlier (`LAST_SHARE`)" in text
    assert f"{outcome.STILL_FALLING:.0%}".replace("%", " %") + " (`STILL_FALLING`)" in text
    assert f"BLEU $\\ge {outcome.MIN_BLEU:g}$ (`MIN_BLEU`)" in text
    assert f"${train.DIVERGE_OVER_CHANCE:g}\\ln V$" in text
    assert f"{train.DIVERGE_OVER_START:g} times the loss at step 1" in text
    for verdict in outcome.OUTCOMES:
        assert f"**{verdict.capitalize()}.**" in text, f"the page does not define '{verdict}'"
