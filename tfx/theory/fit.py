"""Does a measurement follow the predicted shape? Fits and summaries of measured profiles.

A line (:func:`fit_linear`), a power law (:func:`fit_loglog`), each with its R²; the
shape of a per-layer profile (:func:`profile_stats`); and how many decades a set of
sizes spans (:func:`log_spread`). Numbers in, numbers out: the predictions they are
held against live with their question (:mod:`tfx.theory.jacobian`, :mod:`tfx.theory.gradients`,
:mod:`tfx.theory.change`, ...).
"""
from __future__ import annotations

import numpy as np


# ----------------------------------------------------------------- fits
def _r2(y: np.ndarray, y_hat: np.ndarray) -> float:
    ss_res = float(np.sum((y - y_hat) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    tiny = 1e-24 * max(float(np.sum(y**2)), 1e-300)   # rounding-level spread
    if ss_tot <= tiny:               # constant data: the fitted line reproduces it
        return 1.0 if ss_res <= tiny else 0.0
    return 1.0 - ss_res / ss_tot


def fit_linear(xs, ys) -> tuple[float, float, float]:
    """Least-squares line ``y = slope * x + intercept``; returns ``(slope, intercept, r2)``.

    ``r2 = 1 - SS_res / SS_tot`` with ``SS_res = sum (y - y_hat)^2`` and
    ``SS_tot = sum (y - mean y)^2`` (1.0 for exactly fitted constant data).
    Used for AM-2 (Post-LN change against N; Pre-LN change against ln N).
    """
    x = np.asarray(xs, dtype=float).ravel()
    y = np.asarray(ys, dtype=float).ravel()
    if x.size != y.size or x.size < 2:
        raise ValueError("need at least two (x, y) pairs of equal length")
    A = np.stack([x, np.ones_like(x)], axis=1)
    (slope, intercept), *_ = np.linalg.lstsq(A, y, rcond=None)
    return float(slope), float(intercept), _r2(y, A @ np.array([slope, intercept]))


def fit_loglog(xs, ys) -> tuple[float, float, float]:
    """Power-law fit ``y = prefactor * x^exponent``; returns ``(exponent, prefactor, r2)``.

    A straight line through ``(ln x, ln y)``; ``r2`` is computed in that log
    space. Used for LN-1 (||J|| against ||x||: exponent -1) and LN-4
    (gradient norm against depth: 0 for Post-LN, -1/2 for Pre-LN). All values
    must be positive.
    """
    x = np.asarray(xs, dtype=float).ravel()
    y = np.asarray(ys, dtype=float).ravel()
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("fit_loglog needs positive xs and ys")
    k, b, r2 = fit_linear(np.log(x), np.log(y))
    return k, float(np.exp(b)), r2


def exponent_interval(xs, ys, confidence: float = 0.95) -> dict:
    """A log-log exponent with its interval over seeds: ``ys`` is (len(xs), seeds), column s
    the measurements of seed s at every x. Each seed's curve gets its own exponent
    (:func:`fit_loglog`); the result is their mean and a Student-t interval on them,
    ``{"exponent", "low", "high", "per_seed", "n"}``. A criterion such as "the predicted
    exponent lies inside the interval" can then fail, where one fit through the seed means
    gives a number with no error bar."""
    from scipy import stats

    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if y.ndim != 2 or y.shape[0] != x.size or y.shape[1] < 2:
        raise ValueError(f"ys must be (len(xs), seeds ≥ 2), got shape {y.shape}")
    k = np.array([fit_loglog(x, y[:, s])[0] for s in range(y.shape[1])])
    half = float(stats.t.ppf(0.5 + confidence / 2, k.size - 1) * k.std(ddof=1) / np.sqrt(k.size))
    return {"exponent": float(k.mean()), "low": float(k.mean() - half), "high": float(k.mean() + half),
            "per_seed": k, "n": int(k.size)}


# ----------------------------------------------------------------- summaries of a measured profile
def _ranks(v):
    v = np.asarray(v, dtype=float)
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    r[order] = np.arange(len(v), dtype=float)
    for val in np.unique(v):  # average ranks of ties
        tie = v == val
        r[tie] = r[tie].mean()
    return r


def profile_stats(values) -> dict:
    """Shape of a per-layer profile (LN-5): ``spearman`` (rank correlation with the
    layer index: +1 rises all the way to the output, −1 falls, ≈0 flat),
    ``last_over_first`` (value at the top layer / value at the bottom layer),
    ``slope`` (log-log exponent against the layer index 1 … N) and ``cv``
    (standard deviation / mean: 0 is perfectly flat)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        raise ValueError("a profile needs at least two layers")
    idx = np.arange(1, v.size + 1, dtype=float)
    ri, rv = _ranks(idx), _ranks(v)
    sp_ = float(np.corrcoef(ri, rv)[0, 1]) if rv.std() > 0 else 0.0
    slope = fit_loglog(idx, v)[0] if np.all(v > 0) else float("nan")
    return {"spearman": sp_, "last_over_first": float(v[-1] / v[0]), "slope": float(slope),
            "cv": float(v.std() / v.mean())}


def log_spread(values, q: float = 0.1) -> float:
    """How many decades separate the (1−q) and q quantiles of positive ``values``:
    log10(quantile(1−q) / quantile(q)). 0 means all equal."""
    v = np.asarray(values, dtype=float)
    v = v[v > 0]
    return float(np.log10(np.quantile(v, 1 - q) / np.quantile(v, q)))


# ----------------------------------------------------------------- means and exponent intervals
def geo_mean_rows(vals):
    """Geometric mean of each row (a depth's seeds) over its values that are finite and > 0;
    NaN for a row with none."""
    import warnings

    v = np.asarray(vals, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row with no such value: NaN
        return np.exp(np.nanmean(np.where(np.isfinite(v) & (v > 0), np.log(v), np.nan), axis=1))


def geo_mean(x) -> float:
    """The geometric mean exp(mean(ln x)) of positive values."""
    return float(np.exp(np.mean(np.log(np.asarray(x, dtype=float)))))


def inside(e: dict, value: float) -> bool:
    """Is ``value`` inside the :func:`exponent_interval` ``e``?"""
    return e["low"] <= value <= e["high"]


def overlap(e: dict, f: dict) -> bool:
    """Do two :func:`exponent_interval` results overlap?"""
    return e["low"] <= f["high"] and f["low"] <= e["high"]
