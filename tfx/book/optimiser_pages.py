"""Tables, figures and verdicts of chapters 17 and 18 (the optimiser's share), kept out of the
pages' visible code.

Chapter 17: the 1-D quadratic's grid over β₂ and ε (:func:`quadratic_grid`, the agreement rule
:data:`ONSET_TOLERANCE`) and its figures. Chapter 18: the coordinate check's verdict under the
criterion fixed before the five-seed run (:data:`FLAT_SLOPE`, :func:`slope_intervals`).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..theory import optimiser as O
from .plot import figure

# chapter 17: a spike agrees with its prediction when the observed onset is within 3 % of the
# predicted distance from the start of v's decay (t₀), plus one step
ONSET_TOLERANCE = 0.03
# chapter 18: a log-log slope of RMS on width inside ±FLAT_SLOPE is flat; above it, growing
FLAT_SLOPE = 0.3


def onset_agrees(pred, onset, t0) -> bool:
    """Both None (no spike predicted, none seen), or |onset − pred| ≤ 3 % of (pred − t₀) + 1."""
    if pred is None or onset is None:
        return pred is None and onset is None
    return abs(onset - pred) <= ONSET_TOLERANCE * (pred - t0) + 1


def quadratic_grid(beta2s, epss, lr=0.01, h=1.0, beta1=0.9, steps=2000) -> list:
    """One Adam run on h x²/2 per (β₂, ε): a dict with the start of v's decay ``t0``, the
    ``predicted`` crossing, the measured ``crossing`` of the threshold, the observed spike
    ``onset`` (None: none) and whether prediction and onset ``agree``."""
    rows = []
    for b2 in beta2s:
        for eps in epss:
            run = O.quadratic_run("adam", h=h, lr=lr, steps=steps, betas=(beta1, b2), eps=eps)
            t0 = O.decay_start(run)
            pred = O.predict_crossing(run, lr, h=h, betas=(beta1, b2), eps=eps)
            onset = O.spike_onset(run, after=t0 or 1)
            rows.append(dict(beta2=b2, eps=eps, t0=t0, predicted=pred, crossing=O.crossing(run, t0 or 1),
                             onset=onset, agree=onset_agrees(pred, onset, t0)))
    return rows


def grid_summary(rows) -> dict:
    """Counts for the prose: runs, spikes seen, spikes predicted, agreements, and the largest
    |onset − predicted| as a share of (predicted − t₀) among the spikes."""
    gaps = [abs(r["onset"] - r["predicted"]) / (r["predicted"] - r["t0"])
            for r in rows if r["onset"] is not None and r["predicted"] is not None]
    return dict(runs=len(rows), spiked=sum(r["onset"] is not None for r in rows),
                predicted=sum(r["predicted"] is not None for r in rows),
                agree=sum(r["agree"] for r in rows), worst_gap=100 * max(gaps) if gaps else float("nan"))


def grid_table(rows) -> str:
    """The grid as a Markdown table."""
    def cell(v):
        return "none" if v is None else f"{v}"
    lines = ["| β₂ | ε | decay starts | predicted | onset seen | agree |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['beta2']} | {r['eps']:.0e} | {cell(r['t0'])} | {cell(r['predicted'])} | "
              f"{cell(r['onset'])} | {'yes' if r['agree'] else 'no'} |" for r in rows]
    return "\n".join(lines)


def quadratic_figure(P, runs: dict, predicted: int | None, floor: float = 1e-80):
    """Left: the loss of each run (log scale, cut at ``floor``); right: the preconditioned
    curvature a_t h of the adaptive runs against their threshold, the predicted crossing
    dashed. One colour per run in both panels."""
    fig, (a, b) = figure(P, ncols=2, width=10, height=3.6)
    colours = dict(zip(runs, ("#555555", "#1f77b4", "#2ca02c", "#d62728", "#9467bd")))
    for name, run in runs.items():
        steps = np.arange(1, len(run.loss) + 1)
        a.semilogy(steps, np.maximum(run.loss, floor / 10), label=name, lw=1, color=colours[name])
        if run.optimizer != "gd":
            b.semilogy(steps, run.sharpness, label=name, lw=1, color=colours[name])
            thr = run.threshold
    b.axhline(thr, color="k", ls=":", lw=1, label="2(1+β₁)/(1−β₁)")
    a.set_ylim(floor, 10)
    for ax in (a, b):
        if predicted is not None:
            ax.axvline(predicted, color="grey", ls="--", lw=0.8)
        ax.set_xlabel("step t")
    a.set_ylabel("loss h x²/2")
    b.set_ylabel("a_t h = η h/(√v̂ + ε)")
    a.legend(fontsize=7)
    b.legend(fontsize=7)
    return fig


def lm_eps_figure(P, hists: dict, n_params: int, task: str = "libreoffice-en"):
    """Left: the gradient RMS ‖g‖/√P of each LM run and the ε values; right: the update norm."""
    fig, (a, b) = figure(P, ncols=2, width=10, height=3.4, task=task)
    for name, h in hists.items():
        steps = np.arange(1, len(h.grad_norm) + 1)
        a.semilogy(steps, np.array(h.grad_norm) / math.sqrt(n_params), label=name, lw=1)
        b.plot(steps, h.update_norm, label=name, lw=1)
    last = max(len(h.grad_norm) for h in hists.values())
    for eps in (1e-8, 1e-3):
        a.axhline(eps, color="k", ls=":", lw=0.8)
        a.annotate(f"ε = {eps:.0e}", (0.7 * last, eps), fontsize=7, va="top")
    a.set_ylabel("gradient RMS ‖g‖/√P")
    b.set_ylabel("update norm ‖Δθ‖")
    for ax in (a, b):
        ax.set_xlabel("step")
    b.legend(fontsize=7)
    return fig


# ------------------------------------------------------------------ chapter 18
def slope_intervals(check, level: float = 0.95) -> list:
    """[(name, mean slope over seeds, low, high)] per recorded quantity: a t interval over the
    seeds (the interval is the mean alone with one seed)."""
    out = []
    n = check.slope.shape[0]
    for j, name in enumerate(check.names):
        s = check.slope[:, j]
        half = stats.t.ppf(0.5 + level / 2, n - 1) * s.std(ddof=1) / math.sqrt(n) if n > 1 else 0.0
        out.append((name, float(s.mean()), float(s.mean() - half), float(s.mean() + half)))
    return out


def is_flat(check) -> bool:
    """The criterion fixed before the five-seed run: every quantity's mean slope over the seeds
    inside ±FLAT_SLOPE (a derivation check of an implementation: the prediction is 0 under μP
    and about 1 under the standard parameterisation; the intervals are shown, not gated on)."""
    return all(-FLAT_SLOPE < m < FLAT_SLOPE for _, m, _, _ in slope_intervals(check))


def grows(check) -> bool:
    """Every quantity's mean slope above +FLAT_SLOPE."""
    return all(m > FLAT_SLOPE for _, m, _, _ in slope_intervals(check))


def slope_table(checks: dict) -> str:
    """Mean slope [95 % interval] per quantity (rows) and parameterisation (columns)."""
    names = next(iter(checks.values())).names
    lines = ["| quantity | " + " | ".join(checks) + " |", "|---" * (len(checks) + 1) + "|"]
    ivs = {k: slope_intervals(c) for k, c in checks.items()}
    for j, name in enumerate(names):
        cells = [f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]" for _, m, lo, hi in (ivs[k][j] for k in checks)]
        lines.append(f"| {name.replace('decoder.', '')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def coordinate_figure(P, checks: dict):
    """One panel per parameterisation: RMS (mean over seeds) of each quantity against width."""
    fig, axes = figure(P, ncols=len(checks), width=5 * len(checks), height=3.4, sharey=True)
    for ax, (name, c) in zip(np.atleast_1d(axes), checks.items()):
        for j, q in enumerate(c.names):
            ax.loglog(c.widths, c.rms[:, :, j].mean(0), "o-", ms=3, lw=1, label=q.replace("decoder.", ""))
        ax.set_xticks(c.widths, [str(w) for w in c.widths])
        ax.minorticks_off()
        ax.set_xlabel("width d")
        ax.set_title(name)
    np.atleast_1d(axes)[0].set_ylabel("RMS after the Adam steps")
    np.atleast_1d(axes)[-1].legend(fontsize=7)
    return fig


# the gradient RMS at least this many times ε: ε changes no step that matters (OP-2)
EPS_HEADROOM = 100


def eps_status(rms_min: float, eps: float) -> str | None:
    """OP-2's status from the smallest gradient RMS of a run: 'not testable at this scale'
    when it stays ≥ EPS_HEADROOM · ε (the regime the claim is about is not reached); None
    (not judged) otherwise: then only a sweep over ε and seeds can judge it."""
    return "not testable at this scale" if rms_min >= EPS_HEADROOM * eps else None


def falls_every_step(run) -> bool:
    """Does the quadratic's loss fall (or stay) at every step? (gradient descent below 2/h)"""
    return bool(np.all(np.diff(run.loss) <= 0))


def rise_orders(run, onset: int) -> float:
    """log10 of the spike's peak loss over the loss just before the onset."""
    return float(np.log10(run.loss[onset:].max() / run.loss[onset - 1]))


def peak_after(run, onset) -> float:
    """The largest loss from ``onset`` on (nan without an onset)."""
    return float(run.loss[onset:].max()) if onset else float("nan")
