"""tfx.book.optimiser_pages: the agreement rule, the grid's counts, the slope criterion."""
import numpy as np
import pytest

from tfx.book import optimiser_pages as pages
from tfx.theory.optimiser import CoordinateCheck


def test_onset_agreement_rule():
    assert pages.onset_agrees(None, None, 100)
    assert not pages.onset_agrees(500, None, 100) and not pages.onset_agrees(None, 480, 100)
    assert pages.onset_agrees(500, 488, 100)  # 12 ≤ 0.03·400 + 1 = 13
    assert not pages.onset_agrees(500, 486, 100)


def test_grid_finds_a_spike_and_a_capped_run():
    rows = pages.quadratic_grid([0.95], [1e-8, 1e-3], steps=600)
    assert [r["onset"] is not None for r in rows] == [True, False]
    assert all(r["agree"] for r in rows)
    s = pages.grid_summary(rows)
    assert (s["runs"], s["spiked"], s["predicted"], s["agree"]) == (2, 1, 1, 2)
    assert "| 0.95 | 1e-03 |" in pages.grid_table(rows)


def check(slopes):
    slopes = np.array(slopes, dtype=float)
    return CoordinateCheck([32, 64], ["a", "logits"], np.ones((len(slopes), 2, 2)), slopes)


def test_flat_and_growing_follow_the_intervals():
    flat = check([[0.05, -0.1], [0.0, -0.05], [0.1, -0.12]])
    assert pages.is_flat(flat) and not pages.grows(flat)
    steep = check([[1.0, 0.6], [1.1, 0.5], [0.9, 0.55]])
    assert pages.grows(steep) and not pages.is_flat(steep)
    tilted = check([[0.05, -0.35], [0.0, -0.35], [0.1, -0.32]])  # one mean outside ±0.3
    assert not pages.is_flat(tilted) and not pages.grows(tilted)
    assert "+1.00" in pages.slope_table({"standard": steep, "μP": flat})
    name, mean, lo, hi = pages.slope_intervals(steep)[0]
    assert mean == pytest.approx(1.0) and lo < 1.0 < hi
