"""tfx.theory.fit: line and power-law fits with their R², and the summaries of measured profiles."""
import numpy as np
import pytest

from tfx.theory import fit


def test_fit_linear_exact_and_noisy():
    x = np.arange(10.0)
    slope, icpt, r2 = fit.fit_linear(x, 3 * x - 2)
    assert slope == pytest.approx(3) and icpt == pytest.approx(-2) and r2 == pytest.approx(1.0)
    slope, icpt, r2 = fit.fit_linear(x, np.full_like(x, 5.0))
    assert slope == pytest.approx(0, abs=1e-12) and icpt == pytest.approx(5) and r2 == 1.0
    rng = np.random.default_rng(0)
    y = 2 * x + rng.normal(0, 1, x.size)
    slope, _, r2 = fit.fit_linear(x, y)
    res = y - np.polyval(np.polyfit(x, y, 1), x)
    assert r2 == pytest.approx(1 - res @ res / np.sum((y - y.mean()) ** 2))
    assert 0 < r2 < 1
    with pytest.raises(ValueError):
        fit.fit_linear([1.0], [2.0])


def test_fit_loglog_exact():
    x = np.array([1, 2, 4, 8, 16.0])
    k, c, r2 = fit.fit_loglog(x, 3.5 * x ** -0.5)
    assert k == pytest.approx(-0.5) and c == pytest.approx(3.5) and r2 == pytest.approx(1.0)
    k, c, r2 = fit.fit_loglog(x, 1.6 * x ** 0.0)
    assert k == pytest.approx(0.0, abs=1e-12) and c == pytest.approx(1.6) and r2 == 1.0
    with pytest.raises(ValueError):
        fit.fit_loglog([1, 2], [1, -1])


def test_profile_stats():
    up = fit.profile_stats([1, 2, 3, 4])
    assert up["spearman"] == pytest.approx(1.0) and up["last_over_first"] == 4 and up["slope"] == pytest.approx(1.0)
    down = fit.profile_stats([4, 3, 2.5, 1])
    assert down["spearman"] == pytest.approx(-1.0)
    flat = fit.profile_stats([2, 2, 2])
    assert flat["cv"] == 0 and flat["spearman"] == 0 and flat["slope"] == pytest.approx(0, abs=1e-12)
    with pytest.raises(ValueError):
        fit.profile_stats([1])


def test_exponent_interval():
    x = np.array([2, 4, 8, 16])
    ys = np.stack([x ** 1.0 * c for c in (1.0, 2.0, 3.0)], axis=1)
    r = fit.exponent_interval(x, ys)
    assert r["exponent"] == pytest.approx(1.0) and r["n"] == 3
    noisy = ys * np.array([[1, 1.2, 0.9], [1.1, 0.8, 1], [0.9, 1, 1.2], [1, 1.1, 0.8]])
    r = fit.exponent_interval(x, noisy)
    assert r["low"] < r["exponent"] < r["high"] and r["low"] < 1 < r["high"]
    with pytest.raises(ValueError):
        fit.exponent_interval(x, ys[:, :1])


def test_geo_mean_rows_skips_values_not_finite_and_positive():
    rows = np.array([[1.0, 4.0], [2.0, np.inf], [np.nan, -1.0]])
    out = fit.geo_mean_rows(rows)
    assert out[0] == pytest.approx(2.0) and out[1] == pytest.approx(2.0) and np.isnan(out[2])


def test_geo_mean_and_exponent_intervals_inside_and_overlapping():
    assert fit.geo_mean([1, 100]) == pytest.approx(10)
    assert fit.inside({"low": 0.9, "high": 1.1}, 1) and not fit.inside({"low": 1.2, "high": 1.3}, 1)
    assert fit.overlap({"low": 0, "high": 1}, {"low": 0.5, "high": 2})
    assert not fit.overlap({"low": 0, "high": 1}, {"low": 1.5, "high": 2})
