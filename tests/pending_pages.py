"""The chapters not yet held to a page convention, with why: THE one list of exceptions the
page tests consult (tests/book/test_pages.py: one test per measure of tools/pagecheck.py;
tests/test_notation.py: measure ``notation``; tests/book/test_open_text.py: the open-text
measures of the built page).

    PENDING = {chapter stem: {measure: "why / what is left"}}

Each listed pair is checked to STILL fail (:func:`check`), so an entry cannot outlive the
work: when a chapter meets the bar its test fails and says "take it off the list". Measured
on main at 8568c1a (before the issue-29 rewrites); trim it as rewritten chapters land.

Measures: visible_code_lines, dense_paragraphs, opening_box, reading_time, takeaways_box,
uncaptioned_figures, wide_output_lines, ends_with_reproduce (tests/book/test_pages.py),
notation (tests/test_notation.py), and the open-text measures of the built page (issue 44:
open_numbers, open_words, open_claim_ids, open_bookkeeping, open_grammar, open_reading_time;
tests/book/test_open_text.py, on _build/html: skipped without a build). The open-text entries
were measured with tools/pagecheck.py on the book built from main at 8358834 (before the
issue-44 rewrites; ``python tools/pagecheck.py --open-text`` measures them again).
"""
from __future__ import annotations

# measures read by tests other than tests/book/test_pages.py
OTHER_MEASURES = ("notation", "open_numbers", "open_words", "open_claim_ids", "open_bookkeeping",
                  "open_grammar", "open_reading_time")

PENDING: dict[str, dict[str, str]] = {
    # open text of the built page (issue 44; targets: tools/pagecheck.py's OPEN_TARGETS)
}


def check(stem: str, measure: str, problem: str | None) -> None:
    """Pass if chapter ``stem`` meets ``measure``'s bar (``problem`` is None); if the pair is
    listed above, pass only while it still fails, and once it meets the bar fail, saying to
    take the entry off this list."""
    why = PENDING.get(stem, {}).get(measure)
    if why is None:
        assert problem is None, f"book/{stem}.ipynb: {problem}"
    else:
        assert problem is not None, (
            f"book/{stem}.ipynb now meets '{measure}': take it off tests/pending_pages.py "
            f"(the entry said: {why})")
