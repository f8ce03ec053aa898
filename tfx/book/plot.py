"""The book's figure style and the plots that recur.

Every figure says which profile and device produced it: ``stamp(fig, profile)``
writes "profile: book · device: cpu" in its corner, and ``figure()`` does it for you.
"""
from __future__ import annotations

import dataclasses
import math
import textwrap

import matplotlib

import matplotlib.pyplot as plt
import numpy as np

# ------------------------------------------------------------------------------- colours
# The one registry of the book's colours: every colour a figure or an explorer gives a named
# thing is here, keyed by the thing's name, so that a thing looks the same on every page. The
# chapters' modules read them from here (tests/book/test_plot.py fails on a colour spelled
# anywhere else in tfx/book, except the listed conflicts).

# One colour per scheme (the keys of tfx.nn.config.SCHEMES), optimiser and schedule. Figures
# and explorers also look a label's first word up here ("Post-LN, lr 1e-3" → "post"), so a
# family whose names could start a label ("diverged", "encoder") has a map of its own below.
COLORS = {
    "post": "#d62728", "pre": "#1f77b4", "admin": "#2ca02c", "rezero": "#9467bd",
    "deepnorm": "#ff7f0e", "none": "#7f7f7f", "t-fixup": "#8c564b", "lipschitz": "#e377c2",
    "admin-profiling-free": "#1b9e77", "t-fixup-weights": "#c49c94",
    "t-fixup-embeddings": "#e7ba52", "lipschitz-linears": "#9edae5",
    "post+warmup": "#ff9896",  # Post-LN trained with warmup: its scheme's red, lighter
    "post+long-warmup": "#a50f15",  # Post-LN with the longer of two warmups: its red, darker
    "pre+warmup": "#aec7e8",  # Pre-LN trained with warmup: its scheme's blue, lighter
    "post-enc-pre-dec": "#666666",  # a Post-LN encoder under a Pre-LN decoder (chapter 12)
    # where the norm goes (chapter 16) and how a branch scales with depth (depth-μP)
    "peri-ln": "#2ca02c", "output-norm": "#ff7f0e", "sub-ln": "#9467bd", "ln-scaling": "#17becf",
    "dyt": "#bcbd22", "depth-mup": "#444444",
    "adam": "#1f77b4", "sgd": "#d62728", "radam": "#1b9e77",
    # the learning-rate schedules of tfx.nn.config (chapter 21: figure and explorer alike)
    "constant": "#444444", "cosine": "#17becf", "wsd-linear": "#bcbd22", "wsd-sqrt": "#e377c2",
    "linear-decay": "#8c564b",
}
# Where optimisers are drawn in panels beside the schemes (chapter 1), COLORS' red and blue for
# SGD and Adam would read as Post-LN and Pre-LN: there they take a pair of their own.
OPTIMISERS_BESIDE_SCHEMES = {"sgd": "#ff7f0e", "adam": "#9467bd"}
# Figures and explorers that name schemes by the recorded sweeps' labels ("Post-LN") rather
# than their keys: each label takes its scheme's colour (label_color reads it).
ARCH_COLORS = {label: COLORS[scheme] for label, scheme in (
    ("Post-LN", "post"), ("Pre-LN", "pre"), ("Admin", "admin"),
    # chapters 12 and 13's depth, warmup and translation sweeps
    ("Admin (profiling-free)", "admin-profiling-free"), ("T-Fixup (no LN)", "t-fixup"),
    ("Post-LN enc / Pre-LN dec", "post-enc-pre-dec"), ("Lipschitz init (Post-LN)", "lipschitz"),
    # chapter 16's placements (experiments/placements.toml)
    ("Peri-LN", "peri-ln"), ("output norm", "output-norm"), ("Pre-LN, 1/√ℓ", "ln-scaling"),
    ("Sub-LN", "sub-ln"))}
# Chapter 15's fixes for logits that grow.
FIX_COLORS = {"no fix": "#7f7f7f", "QK-norm": "#1f77b4", "z-loss": "#ff7f0e",
              "soft-capping": "#9467bd"}
# The norms of chapter 17; DyT at its default α (0.5) is the scheme "dyt".
NORM_COLORS = {"LayerNorm": "#1f77b4", "RMSNorm": "#17becf", "DyT": COLORS["dyt"],
               "DyT, α = 0.5": COLORS["dyt"], "DyT, α = 2": "#8c564b",
               "DyT, α = 0.1": "#8c564b", "DyT, α = 0.02": "#e377c2"}
# How a run ended (tfx.runs.outcome's verdicts, and a run with loss spikes); "learned" also
# colours the level a run must reach to count as learned.
OUTCOME_COLORS = {"learned": "#2ca02c", "diverged": "#d62728", "did not learn": "#7f7f7f",
                  "still learning": "#1f77b4", "spiking": "#ff7f0e"}
# The verdicts of paired effects (tfx.runs.effects), as effects_plot draws them.
VERDICT_COLORS = {"reproduces": "#1b9e77", "reversed": "#d62728",
                  "not resolved at this scale": "#777777"}
# Inside a model: sub-layers by kind, the two stacks, and the Post-LN encoder alone or under a
# decoder (chapter 5).
SUBLAYER_COLORS = {"self-attn": "#1f77b4", "cross-attn": "#d62728", "ffn": "#7f7f7f"}
STACK_COLORS = {"encoder": "#7f7f7f", "decoder": "#000000"}
ENCODER_SETTING_COLORS = {"alone": "#d62728", "with a decoder": "#1f77b4"}
# A closed form against its autograd check (chapter 3); chapter 9's two bounds on σ/(b − a).
CHECK_COLORS = {"closed form": "#1f77b4", "autograd": "#d62728"}
BOUND_COLORS = {"Popoviciu": "#444444", "Xu et al.": "#d62728"}
# A loss spike's onset and the update norm read before it (chapter 18).
SPIKE_COLORS = {"onset": "#1f78b4", "update norm": "#d95f02"}
# The book's map (chapter 1): a box's fill says what it is, an arrow's colour what it does.
MAP_FILLS = {"problem": "#fff2cc", "mechanism": "#dae8fc", "failure": "#f8cecc",
             "ruled out": "#eeeeee", "fix": "#d5e8d4"}
MAP_ARROW_COLORS = {"cause": "#333333", "fix": "#2ca02c", "ruled out": "#888888"}

# Chapter 19: a model made larger by depth or by width.
SHAPE_COLORS = {"deeper": "#d95f02", "wider": "#1b9e77"}
# Chapter 20's recipes: the warmups from light to dark, then the two forms of weight decay.
WARMUP_DECAY_COLORS = {"warmup 10": "#a6cee3", "warmup 40": "#1f78b4", "warmup 160": "#08306b",
                       "coupled decay": "#d95f02", "independent decay": "#1b9e77"}
# Chapter 21: what breaks a run on purpose, and the guards that rescue it.
SPIKE_CAUSE_COLORS = {"repeated n-gram": "#1b9e77", "rate bump": "#d95f02", "fresh moments": "#7570b3",
                      "data reset": "#e7298a"}
GUARD_COLORS = {"clip at 1.0": "#e7298a", "skip-step": "#66a61e", "rollback": "#a6761d",
                "rollback, window 50": "#e6ab02"}
# Chapters 21 and 23: AdamW, Muon and QK-clip, and the singular values of an update before and
# after orthogonalising it (Newton–Schulz against the SVD's U Vᵀ).
MUON_COLORS = {"AdamW": "#1f78b4", "Muon": "#d95f02", "Muon + QK-clip": "#1b9e77"}
ORTHOGONALISATION_COLORS = {"the update": "#7f7f7f", "Newton–Schulz": "#d95f02", "SVD": "#1f78b4"}

# Things drawn in an order rather than by name: each sequence, first to last.
SEED_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#a6761d")  # Dark2
# chapter 9's distributions on an interval, in order: clear of BOUND_COLORS and of the
# histogram's pink beneath them (Dark2 with blue for its magenta)
DISTRIBUTION_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#1f78b4", "#66a61e", "#a6761d")
WARMUP_COLORS = ("#d95f02", "#e6ab02", "#66a61e", "#1b9e77")  # no warmup … the longest
# which of WARMUP_COLORS n warmups take, shortest first: the ends of the scale for two
_WARMUP_PICKS = {1: (0,), 2: (0, 3), 3: (0, 1, 3), 4: (0, 1, 2, 3)}


def warmup_colors(n: int) -> tuple:
    """The colours of ``n`` warmups, shortest first (no warmup is always WARMUP_COLORS[0], the
    longest always the last); n from 1 to 4, else a ValueError saying so."""
    if n not in _WARMUP_PICKS:
        raise ValueError(f"n={n}: warmup_colors colours 1 to {len(WARMUP_COLORS)} warmups")
    return tuple(WARMUP_COLORS[i] for i in _WARMUP_PICKS[n])


BETA2_COLORS = ("#1b9e77", "#d95f02", "#7570b3")  # RAdam's β₂ values (chapter 11)
# chapter 11's optimiser settings (Adam at two rates, then SGD)
OPTIMISER_SETTING_COLORS = ("#7570b3", "#d95f02", "#666666")
# chapter 18's runs on a quadratic: gradient descent, then the Adam variants
QUADRATIC_RUN_COLORS = ("#555555", "#1f77b4", "#2ca02c", "#d62728", "#9467bd")
RECIPE_COLORS = ("#7f7f7f", "#d95f02", "#1b9e77", "#7570b3")  # chapter 20's recipes
# an explorer's series whose label names no scheme (tfx.book.explorer)
UNNAMED_SERIES_COLORS = ("#444444", "#17becf", "#bcbd22", "#e377c2", "#8c564b", "#aec7e8",
                         "#98df8a", "#c5b0d5")

# Greys, for what is not one of the things compared.
GREYS = {
    "ink": "#333333",  # text, and a series with no colour of its own
    "reference": "#444444",  # chance, a prediction, a fit: what the runs are read against
    "heading": "#555555",  # a column's heading on the map
    "stamp": "#666666",  # the profile stamp
    "neutral": "#7f7f7f",  # the gradient an update is compared with (chapter 5)
    "mark": "#888888",  # a value marked on an axis (DyT's default α)
    "guide": "#999999",  # a level or a step drawn for the eye (y = 1, a spike), a control run
    "level": "#808080",  # chance, a task's floor: the levels a loss is read against (LEVELS)
    "zero": "#666666",  # the zero of a paired difference (effects_plot)
    "band": "#e6e6e6",  # a region shaded for the eye (an equivalence margin)
    "paper": "#ffffff",  # an explorer's background (white in the theme's dark mode too)
}

# How a figure names each scheme of tfx.nn.config.SCHEMES (the same keys).
LABELS = {
    "post": "Post-LN (Xavier)", "pre": "Pre-LN (Xavier)", "admin": "Admin",
    "admin-profiling-free": "Admin (profiling-free)", "t-fixup": "T-Fixup (no LN)",
    "t-fixup-weights": "T-Fixup, weights only", "t-fixup-embeddings": "T-Fixup, embeddings only",
    "lipschitz": "Lipschitz (Post-LN)", "lipschitz-linears": "Lipschitz linears, Xavier embeddings", "rezero": "ReZero", "deepnorm": "DeepNorm",
    "peri-ln": "Peri-LN", "output-norm": "output-norm", "sub-ln": "Sub-LN",
    "ln-scaling": "Pre-LN, 1/√ℓ", "dyt": "Pre-DyT", "depth-mup": "depth-μP",
}
STATUS_MARKERS = {"diverged": "x", "did not learn": "v", "still learning": ">"}

# The levels a run's loss is read against, each drawn one way on every figure (the captions
# say so: chance dotted, the task's floor dashed, the outcome rule's learned level dash-dotted
# in the outcome's green, a run's target dashed in ink; a guide, such as y = 1, plain and
# faint).
LEVELS = {
    "chance": dict(color=GREYS["level"], ls=":", lw=1, label="chance"),
    "floor": dict(color=GREYS["level"], ls="--", lw=1, label="floor"),
    "learned": dict(color=OUTCOME_COLORS["learned"], ls="-.", lw=1, label="learned at or below"),
    "target": dict(color=GREYS["ink"], ls="--", lw=1, label="target"),
    "guide": dict(color=GREYS["guide"], ls="-", lw=0.8, label=None),
}

STYLE = {
    "figure.figsize": (6.4, 3.6), "figure.dpi": 110, "savefig.dpi": 110,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.3, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9,
    "legend.frameon": False, "font.size": 10,
}


def use_style():
    """Apply the book's matplotlib style."""
    matplotlib.rcParams.update(STYLE)


def color(name: str, default: str = GREYS["ink"]) -> str:
    return COLORS.get(name, default)


def label_color(label: str, default: str | None = GREYS["ink"]) -> str | None:
    """The colour of a series named ``label``, the same in every figure and explorer: the
    label's own (``ARCH_COLORS``), else its first word's scheme ("Post-LN, lr 1e-3" → "post"),
    else ``default``."""
    if label in ARCH_COLORS:
        return ARCH_COLORS[label]
    first = label.replace("-LN", " ").replace("(", " ").split()[0].lower() if label.strip() else ""
    return COLORS.get(first, default)


STAMP_HEIGHT_IN = 0.16  # the strip under the axes that the stamp (7 pt) lives in


def stamp(fig, profile) -> None:
    """Write 'profile: … · device: …' in the figure's bottom-right corner."""
    fig.text(0.995, 0.005, str(profile), ha="right", va="bottom", fontsize=7, color=GREYS["stamp"])


def figure(profile, ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None,
           task: str | None = None, **kw):
    """``plt.subplots`` in the book's style, stamped with ``profile``; returns (fig, axes).
    ``task``: the task the figure shows, where it is not the profile's (e.g. a recorded
    language-model sweep), so the stamp names the right one."""
    use_style()
    if task is not None and task != profile.task:
        profile = dataclasses.replace(profile, task=task, task_note="")
    w = width or 4.2 * ncols + 0.6
    h = height or 3.2 * nrows + 0.3
    fig, axes = plt.subplots(nrows, ncols, figsize=(w, h), layout="constrained", **kw)
    strip = STAMP_HEIGHT_IN / h  # keep the stamp's strip free: axis labels stay above it
    fig.get_layout_engine().set(rect=(0, strip, 1, 1 - strip))
    stamp(fig, profile)
    return fig, axes


def level(ax, kind: str, y: float, label: bool | str = True) -> None:
    """A horizontal line at ``y`` in the look of ``LEVELS[kind]``; ``label``: True for the
    level's own legend entry, a string for another, False for none."""
    if kind not in LEVELS:
        raise ValueError(f"kind={kind!r}: a level is one of {', '.join(LEVELS)}")
    style = dict(LEVELS[kind])
    if label is not True:
        style["label"] = label or None
    ax.axhline(y, **style)


def loss_levels(ax, history, learned: float | None = None, label: bool = True) -> None:
    """A loss panel's levels (:data:`LEVELS`): the chance loss, the task's floor where it is
    above 0, and the ``learned`` level where given."""
    level(ax, "chance", history.chance_loss, label)
    if history.floor_loss > 0:
        level(ax, "floor", history.floor_loss, label)
    if learned is not None:
        level(ax, "learned", learned, label)


def seed_curves(ax, runs, color: str, label: str | None = None, curve: str = "eval_loss",
                **style) -> None:
    """Every run of ``runs`` (Records) over training in ``color``, the first labelled
    ``label``: its held-out loss (``curve="eval_loss"``), training loss (``"loss"``) or a
    probe, as :func:`tfx.runs.traces.trace` reads it."""
    from ..runs import traces

    for k, r in enumerate(runs):
        ax.plot(*traces.trace(r.history, curve), color=color, label=label if k == 0 else None,
                **{"lw": 1, **style})


def loss_curves(ax, histories: dict, smooth: int = 1, chance: bool = True, key: str = "loss"):
    """Training curves of {label: History} on ``ax``; a diverged run ends in ×, a
    stuck one in ▼, and the chance loss is a dotted line."""
    for label, h in histories.items():
        ys = np.asarray(getattr(h, key), dtype=float)
        xs = np.asarray(h.step[: len(ys)])
        if smooth > 1 and len(ys) >= smooth:
            ys = np.convolve(ys, np.ones(smooth) / smooth, mode="valid")
            xs = xs[smooth - 1:]
        c = color(label.split()[0].lower().rstrip(":,"), None)
        line, = ax.plot(xs, ys, label=f"{label} ({h.status})", color=c, lw=1.4)
        if h.status in STATUS_MARKERS and len(xs):
            finite = np.isfinite(ys)
            if finite.any():
                i = np.flatnonzero(finite)[-1]
                ax.plot(xs[i], ys[i], STATUS_MARKERS[h.status], color=line.get_color(), ms=9, mew=2)
    if chance and histories:
        cl = next(iter(histories.values())).chance_loss
        if math.isfinite(cl):
            level(ax, "chance", cl, "chance (best prediction ignoring the input)")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats/token)" if key == "loss" else key)
    ax.legend()
    return ax


def heatmap(ax, matrix, title: str = "", xlabel: str = "j", ylabel: str = "i", vmin=0.0, vmax=None, cmap="viridis"):
    """A lower-triangular matrix (e.g. β_{i,j}) as an image, NaN left blank, with a colour bar."""
    m = np.asarray(matrix, dtype=float)
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, origin="upper")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    return im


def fit_line(ax, xs, fn, label: str, **kw):
    """Draw a fitted curve ``fn(x)`` over a dense grid spanning ``xs``."""
    grid = np.linspace(min(xs), max(xs), 200)
    ax.plot(grid, fn(grid), ls="--", lw=1, label=label, **kw)


def log_ticks(ax, values, axis: str = "x"):
    """Put ``axis`` on a log scale with labelled ticks exactly at ``values`` (e.g. the depths
    swept), written as plain numbers. The minor ticks keep their marks but lose their labels:
    over about one decade matplotlib labels them too ("2×10¹"), on top of ours."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    values = list(values)
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    a.set_major_locator(FixedLocator(values))
    a.set_ticklabels([f"{v:g}" for v in values])
    a.set_minor_formatter(NullFormatter())
    return ax


def overlapping_tick_labels(fig) -> list:
    """Pairs of tick labels, on the same axis of ``fig``, whose drawn boxes overlap:
    [(axis title or index, label a, label b)]. Empty for a readable figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for k, ax in enumerate(fig.axes):
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text().strip()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            for i in range(len(labels)):
                for j in range(i + 1, len(labels)):
                    if boxes[i].overlaps(boxes[j]):
                        found.append((ax.get_title() or k, labels[i].get_text(), labels[j].get_text()))
    return found


def lr_curves(ax, records, archs, title: str = "", axis: str = "architecture", colors: dict | None = None):
    """Held-out loss at the end of each run against its learning rate (log axis), for each
    variant in ``archs`` of the records' ``axis`` (default: ``architecture``; colours from
    ``colors``, else the architecture's): every seed thin, the median
    over seeds bold; a diverged run is drawn as × at the loss it started from (Wortsman
    et al.'s cap, :func:`tfx.runs.sensitivity.lr_sensitivity`). Chance and, where above 0,
    the task's floor dashed."""
    from ..runs import sensitivity
    from ..runs.results import select

    for a in archs:
        c = (colors or {}).get(a) or label_color(a)
        mine = select(records, **{axis: a})
        curves = sensitivity.curves(mine)
        for seed, (lrs, vals) in curves.items():
            ax.plot(lrs, vals, "-", color=c, lw=0.8, alpha=0.45)
            start = next(sensitivity.start_loss(r) for r in mine if r.seed == seed)
            gone = [lr for lr, v in zip(lrs, vals) if not math.isfinite(v)]
            if gone:
                ax.plot(gone, [start] * len(gone), "x", color=c, ms=7, mew=1.5)
        if curves:
            ax.plot(*sensitivity.median_curve(mine), "-o", color=c, lw=2, ms=4, label=a)
    if records:
        loss_levels(ax, records[0].history)
    ax.set_xscale("log")
    ax.set(xlabel="learning rate", ylabel="held-out loss at the end (nats)", title=title)


def effects_plot(ax, items, title: str = "", xlabel: str = "paired difference (nats)"):
    """A forest plot of paired effects (:class:`tfx.runs.effects.Effect`): one row per
    ``(label, effect)`` of ``items``, every seed's difference as a dot, the mean as a bar tick
    and its 95 % interval as a line; 0 dashed. A row's colour says its verdict: green where it
    reproduces the claim, red where it is reversed, grey where the interval holds 0."""
    items = list(items)
    for row, (label, e) in enumerate(items):
        y = len(items) - 1 - row
        c = VERDICT_COLORS[e.verdict]
        ax.plot(list(e.diffs.values()), [y] * e.n, "o", ms=4, color=c, alpha=0.55, zorder=2)
        if e.low == e.low:  # an interval exists (more than one seed)
            ax.plot([e.low, e.high], [y, y], "-", lw=2.5, color=c, zorder=3)
        ax.plot([e.mean], [y], "|", ms=14, mew=2.5, color=c, zorder=4)
        if e.expect == "equal":
            ax.axvspan(-e.margin, e.margin, ymin=0, ymax=1, color=GREYS["band"], zorder=0)
    ax.axvline(0, color=GREYS["zero"], ls="--", lw=1, zorder=1)
    ax.set_yticks(range(len(items)), [label for label, _ in reversed(items)], fontsize=8)
    ax.set_ylim(-0.6, len(items) - 0.4)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=10)
    return ax


SPLIT_FACTOR = 5.0  # a forest row this many times wider than the median row gets its own panel


def _reach(e) -> float:
    vals = [abs(x) for x in (*e.diffs.values(), e.low, e.high, e.mean) if math.isfinite(x)]
    return max(vals) if vals else 0.0


def split_rows(items, factor: float = SPLIT_FACTOR):
    """(wide, narrow): the forest rows whose reach (largest |value| of a seed, the mean or the
    interval) exceeds ``factor`` times the median reach, and the others, in their order."""
    items = list(items)
    reach = [_reach(e) for _, e in items]
    med = float(np.median(reach)) if reach else 0.0
    wide = [it for it, r in zip(items, reach) if med > 0 and r > factor * med]
    return wide, [it for it in items if it not in wide]


def effects_figure(profile, items, title: str = "", xlabel: str = "paired difference (nats)",
                   wrap: int = 48, task: str | None = None):
    """The book's forest plot of paired effects (:func:`effects_plot`), one row per
    ``(label, Effect)``, labels wrapped at ``wrap`` characters. Rows far wider than the others
    (:func:`split_rows`) get a panel of their own above, on their own scale, so that one
    extreme row does not squash the rest. Returns the figure."""
    items = [(textwrap.fill(label, wrap), e) for label, e in items]
    wide, narrow = split_rows(items)
    if not wide:
        fig, ax = figure(profile, width=8.0, height=0.55 * len(items) + 1.4, task=task)
        panels = [(ax, narrow, title, xlabel)]
    else:
        fig, (top, bottom) = figure(profile, nrows=2, width=8.0, height=0.55 * len(items) + 2.8, task=task,
                                    gridspec_kw={"height_ratios": [len(wide) + 0.6, len(narrow) + 0.6]})
        panels = [(top, wide, (title + "\n" if title else "") + "rows on a wider scale (their own panel)", ""),
                  (bottom, narrow, "the other rows, on a scale that shows them", xlabel)]
    for ax, rows, head, label in panels:
        effects_plot(ax, rows, title=head, xlabel=label)
        ax.tick_params(axis="y", labelsize=9)  # readable where the page shrinks the figure
    return fig


# ------------------------------------------------------------------ chapters 8-10's sweeps
# Colours of the variants of the recorded sweeps (experiments/t-fixup, lipschitz).
TFIXUP_COLORS = {"T-Fixup": color("t-fixup"), "T-Fixup, weights only": color("t-fixup-weights"),
                 "T-Fixup, embeddings only": color("t-fixup-embeddings"),
                 "Xavier, no LN": color("none"), "Post-LN": color("post"),
                 "Post-LN, warmup": color("post+warmup"), "Pre-LN": color("pre")}
LIPSCHITZ_COLORS = {"Lipschitz": color("lipschitz"),
                    "Lipschitz linears": color("lipschitz-linears"),
                    "Xavier": color("post"), "Xavier, warmup": color("post+warmup")}
# experiments/warm-baselines.toml: the fixes without warmup against Post-LN with two warmups
WARM_BASELINE_COLORS = {"T-Fixup": color("t-fixup"), "Lipschitz": color("lipschitz"),
                        "Post-LN, warmup 100": color("post+warmup"),
                        "Post-LN, warmup 300": color("post+long-warmup"), "Pre-LN": color("pre")}
LOG_ABOVE = 5.0  # an lr_figure panel whose losses reach this many times chance is drawn on a log axis


def lr_figure(P, records, axis: str, groups: dict, colors: dict | None = None, title: str = ""):
    """:func:`lr_curves` in one panel per entry of ``groups`` (``{panel title:
    [variants of axis]}``), on a log y axis where losses reach ``LOG_ABOVE`` × chance, else from 0."""
    from ..runs import sensitivity

    fig, axes = figure(P, ncols=len(groups), width=min(5.0 * len(groups) + 0.6, 9.6), height=4.0,
                       task=records[0].task)
    for ax, (panel, variants) in zip(np.atleast_1d(axes), groups.items()):
        mine = [r for r in records if r.point[axis] in variants]
        lr_curves(ax, mine, variants, axis=axis, colors=colors)
        ys = [y for line in ax.get_lines() for y in line.get_ydata() if math.isfinite(y) and y > 0]
        if max(ys) > LOG_ABOVE * records[0].history.chance_loss:
            ax.set(yscale="log", ylim=(min(ys) / 2, max(ys) * 3))
        else:
            ax.set_ylim(0, max(ys) * 1.5)  # headroom: the legend sits above the curves
        if not all(math.isfinite(sensitivity.curve_loss(r)) for r in mine):
            ax.plot([], [], "x", color=GREYS["ink"], label="× diverged, at the loss it started from")
        ax.set_title(panel, fontsize=10)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
