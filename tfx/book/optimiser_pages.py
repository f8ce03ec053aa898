"""Tables, figures and verdicts of chapters 18 and 19 (the optimiser's share), kept out of the
pages' visible code.

Chapter 18: the 1-D quadratic's grid over β₂ and ε (:func:`quadratic_grid`, the agreement rule
:data:`ONSET_TOLERANCE`) and its figures. Chapter 19: the coordinate check's verdict under the
criterion fixed before the five-seed run (:data:`FLAT_SLOPE`, :func:`slope_intervals`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..theory import optimiser as O
from .notebook import md_table
from .tables import rate_name  # noqa: F401 (chapters 19-22 and 26 call it from here)
from .plot import QUADRATIC_RUN_COLORS, RECIPE_COLORS, SPIKE_COLORS, color, figure

# chapter 18: a spike agrees with its prediction when the observed onset is within 3 % of the
# predicted distance from the start of v's decay (t₀), plus one step
ONSET_TOLERANCE = 0.03
# chapter 19: a log-log slope of RMS on width inside ±FLAT_SLOPE is flat; above it, growing
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
    """The grid of :func:`quadratic_grid` as a Markdown table: per (β₂, ε) the step v starts to
    decay, the predicted spike, the spike seen ('none': no such step) and whether they agree."""
    def cell(v):
        return "none" if v is None else v

    return md_table(["β₂", "ε", "decay starts", "predicted", "onset seen", "agree"],
                    [[r["beta2"], f"{r['eps']:.0e}", cell(r["t0"]), cell(r["predicted"]),
                      cell(r["onset"]), "yes" if r["agree"] else "no"] for r in rows])


def noise_grid(sigmas, seeds, lr=0.01, h=1.0, betas=(0.9, 0.99), steps=2000) -> list:
    """OP-1's noise control: one Adam run on h x²/2 per (σ, seed), the gradient h x + σ ξ
    (:func:`tfx.theory.optimiser.quadratic_run`); per σ the runs whose preconditioned curvature
    crosses the threshold (:func:`~tfx.theory.optimiser.crossing`), the median step of the
    crossing and the median peak a_t h, beside the cap that rules a crossing out,
    σ ≥ η h/threshold (``ruled_out``)."""
    limit = lr * h / O.stability_threshold(betas[0])
    rows = []
    for sigma in sigmas:
        runs = [O.quadratic_run("adam", h=h, lr=lr, steps=steps, betas=betas, noise=sigma, seed=s)
                for s in seeds]
        steps_at = [c for c in (O.crossing(r) for r in runs) if c is not None]
        rows.append(dict(sigma=sigma, runs=len(runs), crossed=len(steps_at), ruled_out=sigma >= limit,
                         step=float(np.median(steps_at)) if steps_at else None,
                         peak=float(np.median([r.sharpness.max() for r in runs]))))
    return rows


def noise_table(rows, threshold: float) -> str:
    """:func:`noise_grid` as a Markdown table."""
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


# ------------------------------------------------------------------ chapter 19
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
    ivs = {k: slope_intervals(c) for k, c in checks.items()}
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


# ---------------------------------------------------------------- chapter 19: the transfer sweep
def best_rate_interval(records) -> tuple[float, float, float, int]:
    """One recipe's best learning rate over its seeds: (10^mean, 10^low, 10^high, n) of the
    seeds' log10 best rates (:func:`tfx.runs.sensitivity.best_rates`), the interval Student's t
    at 95 % (scipy.stats), as every effect of the book."""
    from ..runs import sensitivity

    x = list(sensitivity.best_rates(records).values())
    m = float(np.mean(x))
    if len(x) < 2:
        return 10 ** m, math.nan, math.nan, len(x)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=m, scale=stats.sem(x)) if np.std(x) > 0 else (m, m)
    return 10 ** m, 10 ** lo, 10 ** hi, len(x)


def transfer_figure(P, records, widths, pars=("standard", "μP")):
    """One panel per parameterisation: the held-out loss at the end (median over seeds) against
    the learning rate, one line per width (darker: wider), each width's best rate
    (:func:`best_rate_interval`) marked by a triangle on the x axis."""
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
def spike_precursors(records) -> tuple[dict, dict, dict]:
    """Per seed, pooled over its runs that did not diverge (:func:`tfx.theory.optimiser.
    update_before_spikes`, each run from the end of its warmup): ({seed: mean relative update
    norm in the steps before a loss spike}, {seed: its mean over every step}, {seed: number of
    spikes}). A seed with no spike is left out of the first."""
    from ..runs.outcome import judge

    before, overall, count = {}, {}, {}
    for seed in sorted({r.seed for r in records}):
        b_sum, n_spikes, all_vals = 0.0, 0, []
        for r in records:
            h = r.history
            if r.seed != seed or judge(r).verdict == "diverged" or len(h.update_norm) != len(h.loss):
                continue
            b, a, n = O.update_before_spikes(h.loss, h.update_norm, after=r.train_config.warmup)
            if n:
                b_sum, n_spikes = b_sum + b * n, n_spikes + n
            if math.isfinite(a):
                all_vals.append(a)
        count[seed] = n_spikes
        overall[seed] = float(np.mean(all_vals)) if all_vals else math.nan
        if n_spikes:
            before[seed] = b_sum / n_spikes
    return before, overall, count


@dataclass(frozen=True)
class SharedSpikes:
    """OP-1's bad-batch control (:func:`shared_spikes`): ``shared`` of ``total`` loss spikes fall
    on a step where a run of another recipe with the same seed (the same batch) also spikes;
    ``chance`` is the share expected if spikes fell independently of the batch, and ``low`` to
    ``high`` the exact (Clopper-Pearson) 95 % interval of the observed share."""

    shared: int
    total: int
    chance: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        """'reproduces' (spikes come with the batch) when the whole interval lies above chance,
        'reversed' when below, else 'not resolved at this scale'."""
        if self.total and self.low > self.chance:
            return "reproduces"
        if self.total and self.high < self.chance:
            return "reversed"
        return "not resolved at this scale"

    def describe(self) -> str:
        return (f"{self.shared} of {self.total} ({self.shared / self.total:.0%}, 95 % interval "
                f"{self.low:.0%} to {self.high:.0%}) against {self.chance:.1%} by chance"
                if self.total else "no loss spike to read")


def shared_spikes(records) -> SharedSpikes:
    """OP-1's bad-batch control over the runs that did not diverge, each from the end of its
    warmup. Spikes shared across recipes come with the data, not with one optimiser's state.

    By chance, a spike of run r at step t is shared with probability
    p = 1 − Π_o (1 − n_o/E_o) over the runs o of the same seed and another recipe (n_o loss
    spikes among its E_o steps that can hold one); ``chance`` is the mean p over the spikes,
    set against the observed share's interval (``scipy.stats.binomtest``)."""
    from ..runs.outcome import judge

    runs = {}
    for r in records:
        if judge(r).verdict != "diverged" and len(r.history.update_norm) == len(r.history.loss):
            after = r.train_config.warmup
            onsets = O.loss_spikes(r.history.loss, after=after)
            eligible = len(r.history.loss) - max(after, O.SPIKE_WINDOW + 1)
            runs[id(r)] = (r, {r.history.step[i] for i in onsets}, len(onsets) / max(eligible, 1))
    shared = total = 0
    chance = []
    for r, steps, _ in runs.values():
        others = [o for o in runs.values() if o[0].seed == r.seed and o[0].point["recipe"] != r.point["recipe"]]
        for step in steps:
            total += 1
            shared += any(step in o[1] for o in others)
            chance.append(1 - math.prod(1 - o[2] for o in others))
    if not total:
        return SharedSpikes(0, 0, math.nan, math.nan, math.nan)
    ci = stats.binomtest(shared, total).proportion_ci(0.95)
    return SharedSpikes(shared, total, float(np.mean(chance)), float(ci.low), float(ci.high))


def spike_example(records):
    """The run (not diverged) with the most loss spikes after its warmup: the page's example."""
    from ..runs.outcome import judge

    def n_spikes(r):
        if judge(r).verdict == "diverged" or len(r.history.update_norm) != len(r.history.loss):
            return -1
        return len(O.loss_spikes(r.history.loss, after=r.train_config.warmup))

    return max(records, key=n_spikes)


def spike_figure(P, run, effect):
    """Left: one run's training loss and its update norm over the running median, loss-spike
    onsets marked; right: the paired effect (before a spike against every step), per seed."""
    from .plot import effects_plot

    h = run.history
    fig, (ax, ax_e) = figure(P, ncols=2, width=9.4, height=3.4, task=run.task,
                             gridspec_kw={"width_ratios": [1.6, 1]})
    ax.plot(h.step, h.loss, color="0.35", lw=0.8, label="training loss")
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


def centred_window_words(*sweeps) -> str:
    """The centred sensitivity's window in words (``evidence``'s 'centred LR sensitivity'): how
    many grid steps either side of each optimum, and how many decades that is, for every sweep
    given; sweeps that agree are said once."""
    from ..runs import effects, results, sensitivity

    said = []
    for recs in sweeps:
        lr = effects.lr_axis(recs)
        k = sensitivity.widest_centred_steps([results.select(recs, **g) for g in effects.groups(recs, lr)])
        lrs = sorted({r.train_config.lr for r in recs})
        decades = max(k, 1) * math.log10(lrs[1] / lrs[0])
        words = (f"{max(k, 1)} grid step{'s' if k > 1 else ''} ({decades:.1f} decades) either side of each "
                 f"optimum" + (", cut at the grid's edge" if k == 0 else ""))
        if words not in said:
            said.append(words)
    return "; ".join(said)


def log_z_ends(records, recipes, axis: str = "recipe") -> dict:
    """Per recipe, at its own best rate: the median over seeds of log Z at the first and the
    last logged step, and that rate's name."""
    from ..runs import effects, traces

    out = {}
    for name in recipes:
        best, runs = effects.runs_at_best_rate(records, **{axis: name})
        z = [traces.trace(r.history, "log_z")[1] for r in runs]
        out[name] = {"start": float(np.median([v[0] for v in z])), "end": float(np.median([v[-1] for v in z])),
                     "rate": best.variant}
    return out
