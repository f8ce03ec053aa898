"""Explorers over recorded sweeps: what did every seed of one grid cell do?

A sweep (``experiments/NAME.toml``, recorded in ``results/NAME.PROFILE.jsonl``) is a grid
of variants × seeds. These explorers (``tfx.book.explorer.Explorer``) pick one cell of the grid,
one control per axis, and draw every seed's recorded history. Nothing trains here: every
state is read from the records, so the HTML book holds them all. The controls list the
variants the experiment file declares for the profile (``Experiment.grid``), so a variant
added to the file appears as soon as it is recorded; until then its cell says so::

    exp = Experiment.load("experiments/depth")
    recs = results.load_or_run("depth", "book")
    depth_explorer(recs, exp, "book")              # architecture × depth, chapter 12

Every seed keeps its own line ("seed 0", "seed 1", …); a diverged run's curve ends where
the run stopped, and the note above the first panel gives each seed's status
(``seed_status``). The figure is stamped with the records' profile and provenance
(device, code version, date: ``results.provenance``), not the notebook's profile.
"""
from __future__ import annotations

import math

import numpy as np

from ..runs import outcome, results, traces
from .explorer import Explorer, Panel
from .plot import GREYS, SEED_COLORS  # one colour per seed: seeds are runs of one setting

REFERENCE_COLOR = GREYS["reference"]  # a reference that is not a level (Panel.level draws those)



# What a panel can show: {name: (title, History field of x, History field of y — or a function
# of the History giving y —, y label, log y)}. The probe curves need ``TrainConfig(probes=True)``.
CURVES = {
    "loss": ("training loss", "step", "loss", "loss (nats/token)", True),
    "eval_loss": ("validation loss, at each evaluation", "eval_step", "eval_loss", "loss (nats/token)", True),
    "update_norm": ("update size per step", "step", "update_norm", "‖Δθ‖ of the step", True),
    "grad_norm": ("gradient norm (before clipping)", "step", "grad_norm", "‖∂L/∂θ‖", True),
    "attn_logit_max": ("largest attention logit, any layer", "probe_step",
                       lambda h: traces.trace(h, "attn_logit_max")[1], "max |q·k|/√d_h", True),
    "attn_entropy_min": ("lowest attention entropy, any head", "probe_step",
                         lambda h: traces.trace(h, "attn_entropy_min")[1], "entropy (nats)", False),
    "log_z": ("output log Z, mean over tokens", "step", "log_z", "log Z (nats)", False),
}
MAX_POINTS = 400  # a longer history is thinned to every k-th logged point (the page stays small)


def grid_axes(experiment, profile: str, axes=None) -> dict:
    """``{axis: [variant names]}`` of ``experiment`` (an ``Experiment``) in ``profile``, in
    the order the file declares them; ``axes`` picks (and orders) some of them."""
    grid = {axis: [name for name, _ in variants] for axis, variants in experiment.grid(profile).items()}
    if axes is None:
        return grid
    for axis in axes:
        if axis not in grid:
            raise ValueError(f"axes: {axis!r} is not an axis of {experiment.name} in profile {profile!r}; "
                             f"its axes are {', '.join(grid) or 'none'}")
    return {axis: grid[axis] for axis in axes}


def seed_curve(rec, curve: str, max_points: int = MAX_POINTS):
    """(xs, ys) of one recorded history field (``CURVES[curve]``), thinned to at most
    ``max_points`` points (the last one always kept). Non-finite values stay: the chart
    leaves them out, so a diverged run's curve ends where it blew up."""
    if curve not in CURVES:
        raise ValueError(f"curve={curve!r}: choose one of {', '.join(CURVES)}")
    _, xf, yf, _, _ = CURVES[curve]
    xs, ys = getattr(rec.history, xf), (yf(rec.history) if callable(yf) else getattr(rec.history, yf))
    n = min(len(xs), len(ys))
    xs, ys = np.asarray(xs[:n], dtype=float), np.asarray(ys[:n], dtype=float)
    if n > max_points:
        keep = np.unique(np.r_[np.arange(0, n, math.ceil(n / max_points)), n - 1])
        xs, ys = xs[keep], ys[keep]
    return xs, ys


def seed_status(rec) -> str:
    """One seed's outcome in words, by the book's one rule (:mod:`tfx.runs.outcome`):
    'diverged at step s', or 'learned' / 'did not learn' with its held-out loss."""
    out = outcome.judge(rec)
    if out.verdict == "diverged":
        return f"diverged at step {rec.history.diverged_step or '?'}"
    return f"{out.verdict}, held-out loss {out.loss:.2f}"


def _seed_note(recs, curve: str) -> str:
    """One line per seed under a panel's title (every panel of a state has as many lines)."""
    lines = []
    for r in recs:
        if curve == "loss":
            what = seed_status(r)
        else:
            xs, ys = seed_curve(r, curve)
            ok = np.isfinite(ys)
            if not ok.any():
                what = "not recorded" if not len(ys) else "no finite value"
            elif curve == "eval_loss":
                what = f"last {ys[ok][-1]:.3g} (step {xs[ok][-1]:.0f})"
            else:
                what = f"step {xs[ok][0]:.0f}: {ys[ok][0]:.3g}, last: {ys[ok][-1]:.3g}"
        lines.append(f"seed {r.seed}: {what}")
    return "\n".join(lines)


def records_stamp(records, profile: str) -> str:
    """What is stamped under the figure: the records' profile, device, code and date."""
    return f"records: profile {profile} · {results.provenance(records)}"


def _failures(recs, axis: str) -> str:
    """'did not learn or diverged: k of n runs', then per variant of ``axis`` with such a
    run, e.g. 'lr=0.01: 2 diverged' ('every run learned' when none failed)."""
    failed: dict = {}
    for r in recs:
        verdict = outcome.judge(r).verdict
        if verdict != "learned":
            failed.setdefault(r.point.get(axis), []).append(verdict)
    per_variant = [f"{v}: " + ", ".join(f"{st.count(s)} {s}" for s in dict.fromkeys(st)) for v, st in failed.items()]
    count = sum(map(len, failed.values()))
    return "\n".join([f"did not learn or diverged: {count} of {len(recs)} runs",
                      *(per_variant or ["every run learned"])])


def cell_panels(recs, curves, where: str = "") -> list[Panel]:
    """The panels of one grid cell: for each of ``curves`` (names in ``CURVES``), every
    seed's recorded curve; the loss panels mark the chance loss (and the task's floor where
    it is above 0), and the validation-loss panel the level a run must end at or below to
    have learned (:func:`tfx.runs.outcome.learned_level`). ``where`` names the cell in the
    note of a cell with no records."""
    if not recs:
        return [Panel(title=CURVES[c][0], x="step", y=CURVES[c][3], ylog=CURVES[c][4],
                      note=f"not recorded yet: {where}" if k == 0 else "") for k, c in enumerate(curves)]
    chance, floor = recs[0].history.chance_loss, recs[0].history.floor_loss
    learned_at = outcome.learned_level(chance, floor) if math.isfinite(chance) else None
    last = max(r.train_config.steps for r in recs)
    panels = []
    for curve in curves:
        title, _, _, ylabel, ylog = CURVES[curve]
        lines = {f"seed {r.seed}": seed_curve(r, curve) for r in recs}
        colors = {f"seed {r.seed}": SEED_COLORS[r.seed % len(SEED_COLORS)] for r in recs}
        panel = Panel(title=title, x="step", y=ylabel, lines=lines, colors=colors, ylog=ylog,
                      note=_seed_note(recs, curve))
        if curve in ("loss", "eval_loss") and math.isfinite(chance):
            panel.level("chance", 1, last, chance)
            if floor > 0:
                panel.level("floor", 1, last, floor)
        if curve == "eval_loss" and learned_at is not None:
            panel.level("learned", 1, last, learned_at)
        panels.append(panel)
    return panels


def grid_explorer(records, axes: dict, curves=("loss", "eval_loss"), *, default: dict | None = None,
                  labels: dict | None = None, title: str = "", profile: str = "") -> Explorer:
    """An explorer over the cells of a recorded sweep: one control per axis of ``axes``
    (``{axis: [variant names]}``, e.g. from ``grid_axes``), the panels of ``cell_panels``
    for the chosen cell. ``records``: the sweep's Records (``results.load_or_run``);
    ``profile``: the profile they were recorded in, stamped with their provenance."""
    if not records:
        raise ValueError("records: no recorded runs to explore (results.load_or_run returned none)")
    for curve in curves:
        if curve not in CURVES:
            raise ValueError(f"curves: {curve!r} is not one of {', '.join(CURVES)}")
    profile = profile or records[0].profile

    def compute(**cell):
        recs = results.select(records, **cell)
        where = ", ".join(f"{labels.get(a, a) if labels else a} = {v}" for a, v in cell.items())
        return cell_panels(recs, curves, where=f"{where} ({profile} profile)")

    return Explorer(axes, compute, default=default, labels=labels, title=title,
                    P=records_stamp(records, profile))


# ============================================================== the chapters' explorers


def warmup_explorer(records, experiment, profile: str, default: dict | None = None) -> Explorer:
    """Chapter 11 (WU-1, WU-3): Post-LN trained with each optimiser of ``experiment``
    (``experiments/warmup.toml``) × each warmup length. Panels, every seed: the training
    loss (chance dotted, each seed's status above it), the validation loss at each
    evaluation, the size of each update ‖θ_t − θ_{t−1}‖ (Adam's first steps are its
    largest without warmup) and the gradient norm."""
    axes = grid_axes(experiment, profile, ("optimizer", "train.warmup"))
    return grid_explorer(records, axes, ("loss", "eval_loss", "update_norm", "grad_norm"), default=default,
                         labels={"optimizer": "optimiser", "train.warmup": "warmup (steps)"}, profile=profile,
                         title="Post-LN: optimiser × warmup, every seed")


def depth_explorer(records, experiment, profile: str, default: dict | None = None) -> Explorer:
    """Chapter 12 (AD-3, GV-2): each architecture of ``experiment``
    (``experiments/depth.toml``, every variant it declares) × each depth, all with warmup.
    Panels, every seed: the training loss (chance dotted, each seed's outcome above it) and
    the validation loss at each evaluation (the level a run must end at to have learned dash-dotted)."""
    axes = grid_axes(experiment, profile, ("architecture", "depth"))
    return grid_explorer(records, axes, ("loss", "eval_loss"), default=default,
                         labels={"depth": "depth"}, profile=profile,
                         title="Architecture × depth, with warmup: every seed")


def stability_explorer(records, experiment, profile: str, default: dict | None = None) -> Explorer:
    """Chapter 12's stability map, per seed (AD-3, WU-1): each architecture of ``experiment``
    (``experiments/stability-map.toml``, no warmup) × Adam's β2 × learning rate. Left: every
    seed's final training loss against the learning rate (the chosen one marked), chance
    dotted; a diverged run has no final loss and is named in the note. Right: every seed's
    training loss at the chosen learning rate, each seed's status above it."""
    axes = grid_axes(experiment, profile, ("architecture", "beta2", "train.lr"))
    finals = [r.final_loss for r in records if r.status != "diverged" and math.isfinite(r.final_loss)]
    span = [min(finals), max(finals)] if finals else [0.0, 1.0]

    def compute(architecture, beta2, **rest):
        lr_name = rest["train.lr"]
        row = results.select(records, architecture=architecture, beta2=beta2)
        chosen = [r for r in row if r.point.get("train.lr") == lr_name]
        where = f"{architecture}, {beta2}, {lr_name} ({profile} profile)"
        curves = cell_panels(chosen, ("loss",), where=where)[0]
        curves.title = f"training loss at {lr_name}"
        points, colors = {}, {}
        for r in sorted(row, key=lambda r: (r.seed, r.train_config.lr)):
            label = f"seed {r.seed}"
            colors[label] = SEED_COLORS[r.seed % len(SEED_COLORS)]
            xs, ys = points.setdefault(label, ([], []))
            if r.status != "diverged":  # a diverged run has no final loss: the note names it
                xs.append(r.train_config.lr)
                ys.append(r.final_loss)
        note = _failures(row, "train.lr") if row else f"not recorded yet: {architecture}, {beta2}"
        final = Panel(title=f"final loss against lr, {beta2}", x="peak learning rate", y="final loss (nats/token)",
                      xlog=True, points=points, colors={**colors, "chosen lr": GREYS["guide"]}, note=note)
        lrs = sorted({r.train_config.lr for r in row})
        if row and math.isfinite(row[0].history.chance_loss):  # (wider would widen the log axis by a decade)
            final.level("chance", lrs[0], lrs[-1], row[0].history.chance_loss)
        if chosen:
            final.lines["chosen lr"] = ([chosen[0].train_config.lr] * 2, span)
        return [final, curves]

    return Explorer(axes, compute, default=default, title="The stability map, every seed (no warmup)",
                    P=records_stamp(records, profile),
                    labels={"train.lr": "learning rate", "beta2": "Adam's β2"})


def lr_sensitivity_explorer(records, experiment, profile: str, default: dict | None = None) -> Explorer:
    """Chapter 12 (AD-3, WU-1): ``experiments/lr-sensitivity.toml``. Controls: depth,
    warmup, architecture. Left: every architecture's held-out loss at the end against the
    learning rate (median over seeds; chance dotted, the task's floor dashed), the chosen
    architecture's seeds as points. Right: the chosen architecture's validation curves at
    every learning rate, seed 0. The note gives each seed's LR sensitivity
    (:mod:`tfx.runs.sensitivity`)."""
    from ..runs import sensitivity

    axes = grid_axes(experiment, profile, ("depth", "warmup", "architecture"))
    archs = axes["architecture"]

    def compute(depth, warmup, architecture):
        cell = results.select(records, depth=depth, warmup=warmup)
        where = f"{depth}, {warmup} ({profile} profile)"
        if not cell:
            return [Panel(title="held-out loss against the learning rate", note=f"not recorded yet: {where}")]
        lines, points, colors = {}, {}, {}
        h = cell[0].history
        for a in archs:
            lrs, med = sensitivity.median_curve(results.select(cell, architecture=a))
            if lrs:
                lines[a] = (lrs, med)
        for seed, (xs, ys) in sensitivity.curves(results.select(cell, architecture=architecture)).items():
            points[f"seed {seed}"] = (xs, ys)
            colors[f"seed {seed}"] = SEED_COLORS[seed % len(SEED_COLORS)]
        s = sensitivity.summarize(results.select(cell, architecture=architecture))
        note = (f"{architecture}: LR sensitivity per seed "
                + ", ".join(f"{v['sensitivity']:.2f}" for v in s["per_seed"].values())
                + "\n" + _failures(results.select(cell, architecture=architecture), "train.lr"))
        left = Panel(title=f"held-out loss against lr, {depth}, {warmup}", x="learning rate",
                     y="held-out loss (nats)", xlog=True, lines=lines, points=points, colors=colors, note=note)
        every = sorted({r.train_config.lr for r in cell})
        left.level("chance", every[0], every[-1], h.chance_loss)
        if h.floor_loss > 0:
            left.level("floor", every[0], every[-1], h.floor_loss)
        mine = [r for r in results.select(cell, architecture=architecture) if r.seed == 0]
        curves = {f"lr {r.train_config.lr:g}": seed_curve(r, "eval_loss") for r in mine}
        right = Panel(title=f"{architecture}, seed 0: validation loss", x="step", y="validation loss (nats)",
                      lines=curves, note="")
        return [left, right]

    return Explorer(axes, compute, default=default, title="Learning-rate sensitivity, every seed",
                    P=records_stamp(records, profile), labels={"architecture": "highlight"})


def logits_explorer(records, experiment, profile: str, default: dict | None = None) -> Explorer:
    """Chapter 15 (LG-1, LG-2, ZL-1, EC-1): ``experiments/logits.toml``. Controls: the fix
    (none, QK-norm, z-loss, soft-capping) and the learning rate. Panels: every seed's
    validation loss, largest attention logit, lowest per-head attention entropy and output
    log Z over training (recorded by ``tfx.runs.probes`` on the training step's own forward)."""
    return grid_explorer(records, grid_axes(experiment, profile, ("fix", "lr")),
                         curves=("eval_loss", "attn_logit_max", "attn_entropy_min", "log_z"),
                         default=default, labels={"fix": "fix", "lr": "learning rate"},
                         title="Logits over training, every seed", profile=profile)


def zoo_explorer(records, experiment, profile: str, default: dict | None = None, before: int = 10,
                 every: int = 2) -> Explorer:
    """Chapter 21's spike zoo (SZ-1..3; ``experiments/spike-zoo.toml``): each cause × guard ×
    learning rate. Left: every seed's training loss minus its control's (the same seed, no
    injection, no guard: :func:`tfx.runs.spikes.control_of`) from ``before`` steps ahead of the
    injection to the end, every ``every``-th step; the note gives the median cost and height,
    the runs that recovered and what the guard did (:func:`tfx.runs.spikes.summary`). Right:
    every seed's gradient norm before clipping over the same steps."""
    from ..runs import spikes

    axes = grid_axes(experiment, profile, ("cause", "guard", "lr"))
    at = spikes.injection_step(records)
    start = max(1, at - before)
    last = max(r.train_config.steps for r in records)

    def compute(cause, guard, lr):
        recs = sorted(results.select(records, cause=cause, guard=guard, lr=lr), key=lambda r: r.seed)
        if not recs:
            return [Panel(title="loss − the control's", note=f"not recorded yet: {cause}, {guard}, {lr}")]
        colors = {f"seed {r.seed}": SEED_COLORS[r.seed % len(SEED_COLORS)] for r in recs}
        excess, norms = {}, {}
        for r in recs:
            control = spikes.control_of(records, r).history
            steps = [t for t in range(start, last + 1) if t in set(control.step)]
            ys = spikes.excess(r.history, control, start, last - start + 1)
            excess[f"seed {r.seed}"] = (steps[:len(ys)][::every], ys[::every])
            kept = [(t, g) for t, g in zip(r.history.step, r.history.grad_norm) if t >= start]
            norms[f"seed {r.seed}"] = ([t for t, _ in kept][::every], [g for _, g in kept][::every])
        lines = {"no difference": ([start, last], [0.0, 0.0]), **excess}
        styles = {"no difference": "faint"}
        s = spikes.summary(records, cause=cause, guard=guard, lr=lr)
        acted = (f"clipped {s['clipped']} of {s['steps_done']} steps, skipped {s['skipped']}, "
                 f"rollbacks {s['rollbacks']}")
        note = (f"injected at step {at}: median cost {s['cost']:+.3f} nats\n"
                f"height {s['height']:+.2f} nats; "
                f"recovered: {s['recovered']} of {s['n']} runs\n{acted}")
        return [Panel(title="loss − the control's loss", x="step", y="nats",
                      lines=lines, styles=styles, colors={**colors, "no difference": REFERENCE_COLOR},
                      note=note),
                Panel(title=CURVES["grad_norm"][0], x="step", y=CURVES["grad_norm"][3], lines=norms,
                      colors=colors, ylog=True)]

    return Explorer(axes, compute, default=default, labels={"lr": "learning rate"},
                    title="The spike zoo: cause × guard × rate, every seed against its control",
                    P=records_stamp(records, profile))


def lr_curve_explorer(records, axes: dict, title: str, trace: str | None = None, every: int = 10,
                      default: dict | None = None):
    """An explorer over the recipes of a recorded learning-rate sweep (``axes``: {axis:
    [variants]}, the learning rate left free): every seed's final held-out loss against the
    rate (a diverged run at L₀, as the LR sensitivity counts it), with each seed's best rate
    and LR sensitivity in the note; with ``trace`` (e.g. 'log_z') a second panel of that
    recorded trace at the recipe's best rate, every ``every``-th logged step. ``default``: the
    state it opens in (default: each axis's first variant)."""
    from ..runs import effects, sensitivity

    def compute(**cell):
        recs = results.select(records, **cell)
        s = sensitivity.summarize(recs)
        lines = {}
        for seed, (lrs, vals) in sensitivity.curves(recs).items():
            start = s["per_seed"][seed]["start"]
            lines[f"seed {seed}"] = (lrs, [min(v, start) if math.isfinite(v) else start for v in vals])
        best = sensitivity.best_rates(recs)
        note = (f"best rate {10 ** np.mean(list(best.values())):.1e} (mean of log10 over seeds)\n"
                f"LR sensitivity {s['median']:.2f} nats (median), {s['low']:.2f} to {s['high']:.2f}")
        panels = [Panel(title="final held-out loss against the rate", x="learning rate",
                        y="held-out loss (nats)", lines=lines, xlog=True, note=note)]
        if trace:
            b, at = effects.runs_at_best_rate(recs)
            series = {}
            for r in sorted(at, key=lambda r: r.seed):
                xs, ys = traces.trace(r.history, trace)
                series[f"seed {r.seed}"] = (xs[::every], ys[::every])
            panels.append(Panel(title=f"{trace.replace('_', ' ')} at the best rate, {b.variant}", x="step",
                                y=trace.replace("_", " "), lines=series, fixed_y=False))
        return panels

    return Explorer(axes, compute, title=title, default=default,
                    P=f"records: profile {records[0].profile} · {results.provenance(records)}")


def quadratic_explorer(P, beta2s, epss, lr=0.01, h=1.0, steps=2000, every=10):
    """Adam on h x²/2 for each β₂ × ε: the loss (log) and the preconditioned
    curvature a_t h against the momentum threshold, every ``every``-th step."""
    from ..theory import optimiser as O

    threshold = O.stability_threshold(0.9)

    def compute(beta2, eps):
        run = O.quadratic_run("adam", h=h, lr=lr, steps=steps, betas=(0.9, beta2), eps=eps)
        t = np.arange(1, len(run.loss) + 1)[::every]
        loss = np.maximum(run.loss[::every], 1e-80)
        onset = O.spike_onset(run, after=O.decay_start(run) or 1)
        note = f"spike at step {onset}" if onset else "no spike"
        return [Panel(title="loss h x²/2", x="step", y="loss", lines={"Adam": (t, loss)}, ylog=True, note=note),
                Panel(title="preconditioned curvature a h", x="step", y="a h",
                      lines={"a h": (t, run.sharpness[::every]), "threshold": (t, np.full(len(t), threshold))},
                      styles={"threshold": "dashed"}, ylog=True)]

    return Explorer({"beta2": list(beta2s), "eps": list(epss)}, compute, labels={"beta2": "β₂", "eps": "ε"},
                    title="Adam on a quadratic: β₂ and ε", P=P)


def schedule_explorer(P, steps=(400, 1600), warmups=(0, 40), cooldowns=(0.1, 0.2, 0.4)):
    """Every schedule of :data:`tfx.book.optimiser_pages.SCHEDULE_NAMES` for a run of ``steps`` steps with
    ``warmup`` steps of linear warmup and a WSD cooldown over the last ``cooldown`` of the steps
    (``tfx.nn.optim.lr_at``, the rate the trainer uses). Left: the rate as a share of the peak,
    s_t = η_t/η. Right: the rate spent so far, Σ s_t, the 'area' that sets how far the weights
    can move; the note gives each schedule's mean s_t over the run."""
    from ..nn.config import TrainConfig
    from ..nn.optim import lr_at
    from .optimiser_pages import SCHEDULE_COLORS, SCHEDULE_NAMES

    def compute(steps, warmup, cooldown):
        t = np.arange(1, steps + 1)
        share, spent, means = {}, {}, {}
        for name, kind in SCHEDULE_NAMES.items():
            tc = TrainConfig(lr=1.0, steps=steps, warmup=warmup, schedule=kind,
                             **({"cooldown_fraction": cooldown} if kind.startswith("wsd") else {}))
            s = np.array([lr_at(int(k), tc) for k in t])
            # about 100 points a curve keep the page small; the last step is always drawn
            keep = np.unique(np.r_[np.arange(0, steps, max(1, steps // 100)), steps - 1])
            share[name] = (t[keep], s[keep])
            spent[name] = (t[keep], np.cumsum(s)[keep])
            means[name] = s.mean()
        return [Panel(title="rate / peak rate", x="step", y="s_t", lines=share, fixed_y=True,
                      colors=SCHEDULE_COLORS),
                Panel(title="rate spent so far", x="step", y="Σ s_t", lines=spent, fixed_y=False,
                      colors=SCHEDULE_COLORS,
                      note=(f"mean s_t: constant {means['constant']:.2f}, cosine {means['cosine to 10 %']:.2f}\n"
                            f"WSD {means['WSD, linear cooldown']:.2f} (linear), "
                            f"{means['WSD, (1 − √) cooldown']:.2f} (1 − √)\n"
                            f"linear to zero {means['linear to zero']:.2f}"))]

    return Explorer({"steps": list(steps), "warmup": list(warmups), "cooldown": list(cooldowns)}, compute,
                    labels={"steps": "run length (steps)", "warmup": "warmup (steps)",
                            "cooldown": "WSD cooldown (share of the run)"},
                    default={"steps": steps[0], "warmup": 40 if 40 in warmups else warmups[0],
                             "cooldown": 0.2 if 0.2 in cooldowns else cooldowns[0]},
                    title="Five schedules: the rate at each step, and the rate spent", P=P)


EXPLORER_POINTS = 25  # training-loss points per seed in a sweep_explorer state (the page stays small)


def _thin(xs, ys, n: int):
    xs, ys = np.asarray(xs), np.asarray(ys)
    if len(xs) <= n:
        return xs, ys
    keep = np.unique(np.r_[np.linspace(0, len(xs) - 1, n).astype(int)])
    return xs[keep], ys[keep]


def sweep_explorer(records, experiment, profile: str, axis: str, default: dict | None = None,
                   title: str = "", points: int = EXPLORER_POINTS) -> Explorer:
    """Chapters 8 and 9: the cells of a recorded learning-rate sweep, one control for ``axis``
    ("scheme", "init") and one for the rate; panels, every seed: the training loss (thinned to
    ``points`` per seed) and the held-out loss (:func:`cell_panels`)."""
    axes = grid_axes(experiment, profile, (axis, "lr"))

    def compute(**cell):
        recs = results.select(records, **cell)
        where = ", ".join(f"{a} = {v}" for a, v in cell.items())
        panels = cell_panels(recs, ("loss", "eval_loss"), where=f"{where} ({profile} profile)")
        panels[0].lines = {k: (_thin(*xy, points) if k.startswith("seed") else xy)
                           for k, xy in panels[0].lines.items()}
        return panels

    return Explorer(axes, compute, default=default, title=title, P=records_stamp(records, profile),
                    labels={"lr": "learning rate"})
