"""Tables and figures of chapters 18 to 21 (the optimiser's share), kept out of the pages'
visible code. What they show is computed elsewhere: the quadratic's grid and the slope
criterion in :mod:`tfx.theory.optimiser`, the LM's loss spikes in :mod:`tfx.runs.spikes`, the
best rates in :mod:`tfx.runs.sensitivity`.
"""
from __future__ import annotations

import math

import numpy as np

from ..runs.sensitivity import best_rate_interval
from ..theory import optimiser as O
from .notebook import md_table
from .plot import GREYS, QUADRATIC_RUN_COLORS, RECIPE_COLORS, SPIKE_COLORS, color, figure
from .tables import rate_name


def grid_table(rows) -> str:
    """The grid of :func:`tfx.theory.optimiser.quadratic_grid` as a Markdown table: per (β₂, ε)
    the step v starts to decay, the predicted spike, the spike seen ('none': no such step) and
    whether they agree."""
    def cell(v):
        return "none" if v is None else v

    return md_table(["β₂", "ε", "decay starts", "predicted", "onset seen", "agree"],
                    [[r["beta2"], f"{r['eps']:.0e}", cell(r["t0"]), cell(r["predicted"]),
                      cell(r["onset"]), "yes" if r["agree"] else "no"] for r in rows])


def noise_table(rows, threshold: float) -> str:
    """:func:`tfx.theory.optimiser.noise_grid` as a Markdown table."""
    return md_table(["gradient noise σ", "runs crossing the threshold", "median step of the crossing",
                     f"median peak of a·h (threshold {threshold:.0f})", "ruled out by σ ≥ η h/threshold"],
                    [[f"{r['sigma']:.0e}" if r["sigma"] else "0", f"{r['crossed']} of {r['runs']}",
                      "none" if r["step"] is None else f"{r['step']:.0f}", f"{r['peak']:.0f}",
                      "yes" if r["ruled_out"] else "no"] for r in rows])


def quadratic_figure(P, runs: dict, predicted: int | None, floor: float = 1e-80):
    """Left: the loss of each run (log scale, cut at ``floor``); right: the preconditioned
    curvature a_t h of the adaptive runs against their threshold, the predicted crossing
    dashed. One colour per run in both panels."""
    fig, (a, b) = figure(P, ncols=2, width=10, height=3.6)
    colours = dict(zip(runs, QUADRATIC_RUN_COLORS))
    for name, run in runs.items():
        steps = np.arange(1, len(run.loss) + 1)
        a.semilogy(steps, np.maximum(run.loss, floor / 10), label=name, lw=1, color=colours[name])
        if run.optimizer != "gd":
            b.semilogy(steps, run.sharpness, label=name, lw=1, color=colours[name])
            thr = run.threshold
    b.axhline(thr, color=GREYS["ink"], ls=":", lw=1, label="2(1+β₁)/(1−β₁)")
    a.set_ylim(floor, 10)
    for ax in (a, b):
        if predicted is not None:
            ax.axvline(predicted, color=GREYS["guide"], ls="--", lw=0.8)
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
        a.axhline(eps, color=GREYS["ink"], ls=":", lw=0.8)
        a.annotate(f"ε = {eps:.0e}", (0.7 * last, eps), fontsize=7, va="top")
    a.set_ylabel("gradient RMS ‖g‖/√P")
    b.set_ylabel("update norm ‖Δθ‖")
    for ax in (a, b):
        ax.set_xlabel("step")
    b.legend(fontsize=7)
    return fig


# ------------------------------------------------------------------ chapter 19
def slope_table(checks: dict) -> str:
    """Mean slope [95 % interval] per quantity (rows) and parameterisation (columns)."""
    names = next(iter(checks.values())).names
    ivs = {k: O.slope_intervals(c) for k, c in checks.items()}
    rows = [[name.replace("decoder.", ""),
             *(f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]" for _, m, lo, hi in (ivs[k][j] for k in checks))]
            for j, name in enumerate(names)]
    return md_table(["quantity", *checks], rows)


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


# ---------------------------------------------------------------- chapter 19: the transfer sweep
def transfer_figure(P, records, widths, pars=("standard", "μP")):
    """One panel per parameterisation: the held-out loss at the end (median over seeds) against
    the learning rate, one line per width (darker: wider), each width's best rate
    (:func:`tfx.runs.sensitivity.best_rate_interval`) marked by a triangle on the x axis."""
    from ..runs import sensitivity
    from ..runs.results import select
    import matplotlib as mpl

    fig, axes = figure(P, ncols=len(pars), width=9.4, height=3.6, sharey=True, task=records[0].task)
    shades = mpl.colormaps["viridis"](np.linspace(0.85, 0.05, len(widths)))
    for ax, par in zip(np.atleast_1d(axes), pars):
        for c, w in zip(shades, widths):
            mine = select(records, parameterization=par, width=w)
            lrs, med = sensitivity.median_curve(mine)
            ax.plot(lrs, med, "-o", color=c, lw=1.6, ms=3.5, label=w)
            best = best_rate_interval(mine)[0]
            ax.plot([best], [0.02], "^", color=c, ms=8, transform=ax.get_xaxis_transform(), clip_on=False)
        ax.set_xscale("log")
        ax.set(xlabel="learning rate (▲ each width's best)", title=par)
    np.atleast_1d(axes)[0].set_ylabel("held-out loss at the end (nats)")
    np.atleast_1d(axes)[-1].legend(fontsize=8, title="width")
    return fig


def transfer_rate_table(records, widths, pars=("standard", "μP")) -> str:
    """Markdown: each width's best rate under each parameterisation, with its 95 % interval."""
    from ..runs.results import select
    rows = []
    for w in widths:
        cells = []
        for par in pars:
            m, lo, hi, n = best_rate_interval(select(records, parameterization=par, width=w))
            cells.append(f"{m:.1e} ({lo:.1e} to {hi:.1e})" if math.isfinite(lo) else f"{m:.1e} (one seed)")
        rows.append([w, *cells])
    return md_table(["width", *(f"best rate, {p} (95 % CI)" for p in pars)], rows)


# ---------------------------------------------------------------- chapter 20: warmup and decay
def log_z_figure(P, records, recipes, axis: str = "recipe"):
    """log Z of the output softmax (mean over tokens) against the step, for each recipe at its
    own best learning rate (:func:`tfx.runs.effects.best_rate`): every seed thin, the median bold."""
    from ..runs import effects, traces

    fig, ax = figure(P, width=6.4, height=3.4, task=records[0].task)
    for c, name in zip(RECIPE_COLORS, recipes):
        best, runs = effects.runs_at_best_rate(records, **{axis: name})
        series = [traces.trace(r.history, "log_z") for r in runs]
        for steps, vals in series:
            ax.plot(steps, vals, color=c, lw=0.6, alpha=0.4)
        n = min(len(v) for _, v in series)
        ax.plot(series[0][0][:n], np.median([v[:n] for _, v in series], axis=0), color=c, lw=2,
                label=f"{name} @ {best.variant}")
    ax.set(xlabel="step", ylabel="log Z (mean over tokens)")
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------- chapter 18: spikes in the LM
def spike_figure(P, run, effect):
    """Left: one run's training loss and its update norm over the running median, loss-spike
    onsets marked; right: the paired effect (before a spike against every step), per seed."""
    from .plot import effects_plot

    h = run.history
    fig, (ax, ax_e) = figure(P, ncols=2, width=9.4, height=3.4, task=run.task,
                             gridspec_kw={"width_ratios": [1.6, 1]})
    ax.plot(h.step, h.loss, color=GREYS["ink"], lw=0.8, label="training loss")
    ax.set(xlabel="step", ylabel="training loss (nats)")
    twin = ax.twinx()
    twin.plot(h.step, O.relative_to_running_median(h.update_norm), lw=0.8,
              color=SPIKE_COLORS["update norm"], label="update norm / running median")
    twin.set_ylabel("update norm / running median", color=SPIKE_COLORS["update norm"])
    for t in O.loss_spikes(h.loss, after=run.train_config.warmup):
        ax.axvline(h.step[t], color=SPIKE_COLORS["onset"], lw=0.8, ls=":")
    ax.set_title(f"{run.point.get('recipe', '')} · lr {rate_name(run.train_config.lr)} · seed {run.seed}", fontsize=9)
    if effect is not None:
        effects_plot(ax_e, [("before − every step", effect)], xlabel="difference in update norm / median")
    else:
        ax_e.text(0.5, 0.5, "no loss spike\nin these runs", ha="center", va="center", transform=ax_e.transAxes)
        ax_e.set_axis_off()
    return fig


# chapter 21: the schedules after cosine, as TrainConfig defines them (lr_at), no training
SCHEDULE_NAMES = {"constant": "constant", "cosine to 10 %": "cosine", "WSD, linear cooldown": "wsd-linear",
                  "WSD, (1 − √) cooldown": "wsd-sqrt", "linear to zero": "linear-decay"}
# one colour per schedule on every figure and explorer (tfx.book.plot.COLORS)
SCHEDULE_COLORS = {name: color(kind) for name, kind in SCHEDULE_NAMES.items()}


def schedules_figure(P, records, lengths=None, axis: str = "schedule", length_axis: str = "length"):
    """Chapter 21 (SC-1): the held-out loss at the end against the peak rate, one panel per run
    length (``lengths``: the records' own, in grid order), each schedule of
    :data:`SCHEDULE_NAMES` the records hold (:func:`tfx.book.plot.lr_curves`: every seed thin,
    the median bold). A schedule is judged at the bottom of its own curve, so a schedule that
    tolerates a higher peak is not penalised at a rate that suits another."""
    from ..runs.results import select
    from .plot import lr_curves

    lengths = list(lengths or dict.fromkeys(r.point[length_axis] for r in records))
    names = [n for n in SCHEDULE_NAMES if any(r.point.get(axis) == n for r in records)]
    fig, axes = figure(P, ncols=len(lengths), width=min(9.4, 3.5 * len(lengths) + 2.4),
                       task=records[0].task if records else None, squeeze=False)
    for ax, length in zip(axes[0], lengths):
        lr_curves(ax, select(records, **{length_axis: length}), names, title=length, axis=axis,
                  colors=SCHEDULE_COLORS)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside right upper", fontsize=8)
    return fig
