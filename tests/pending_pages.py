"""The chapters not yet held to a page convention, with why: THE one list of exceptions the
page tests consult (tests/book/test_pages.py: one test per measure of tfx.book.page;
tests/test_notation.py: measure ``notation``).

    PENDING = {chapter stem: {measure: "why / what is left"}}

Each listed pair is checked to STILL fail (:func:`check`), so an entry cannot outlive the
work: when a chapter meets the bar its test fails and says "take it off the list". Measured
on main at 8568c1a (before the issue-29 rewrites); trim it as rewritten chapters land.

Measures: visible_code_lines, dense_paragraphs, opening_box, reading_time, takeaways_box,
uncaptioned_figures, wide_output_lines, ends_with_reproduce (tests/book/test_pages.py) and
notation (tests/test_notation.py).
"""
from __future__ import annotations

# measures read by tests other than tests/book/test_pages.py
OTHER_MEASURES = ("notation",)

PENDING: dict[str, dict[str, str]] = {
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
