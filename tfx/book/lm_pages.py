"""The language-model chapters (14-17): the values they glue, their tables, figures and
the registry's verdicts, tested in ``tests/book/test_lm_pages.py``. The readings come from
:mod:`tfx.runs.readings` and :mod:`tfx.theory.norms`; whether a run learned is
:mod:`tfx.runs.outcome`'s call, whether a claim reproduces :mod:`tfx.book.evidence`'s."""
from __future__ import annotations

import matplotlib.lines
import matplotlib.pyplot as plt
import numpy as np

from ..runs import effects, outcome, results, traces
from ..runs.effects import per_seed
from ..runs.readings import (log_z_pull, median, norm_sweep, probe, saturated,
                             stream_growth, top_stream, top_streams)
from . import evidence
from .claims import NOT_TESTABLE, glue_parts, part_verdict
from .notebook import glue, glue_all, md, md_table, sizes
from .plot import (ARCH_COLORS, FIX_COLORS, GREYS, LABELS, NORM_COLORS, OUTCOME_COLORS, color,
                   effects_figure, effects_plot, figure, label_color, level, log_ticks,
                   lr_curves, seed_curves)
from .tables import effects_table, interval_text, learned_at, median_range, outcome_counts, seed_table


def effect_values(e, key: str = "") -> dict:
    """A paired effect's mean (``<key>-mean``) and 95 % interval (``<key>-ci``)."""
    return {f"{key}-mean": e.mean, f"{key}-ci": interval_text(e, "{:+.2f}")}


def seed_lines(ax, recs, lrs, value, color, label: str, style: dict, **point) -> None:
    """One line per seed: ``value(record)`` against the learning rate, at each of ``lrs``."""
    at = [per_seed(recs, value, lr=lr, **point) for lr in lrs]
    x = [results.select(recs, lr=lr, **point)[0].train_config.lr for lr in lrs]
    for k, s in enumerate(at[0]):
        ax.plot(x, [a.get(s, np.nan) for a in at], "o-", color=color,
                label=label if k == 0 else None, **style)


# a recorded LM sweep's size as the chapters state it (:func:`tfx.book.notebook.sizes`)
SWEEP_SIZES = ("layers:dec", "d:width", "steps", "seeds", "rates", "lr-range")


# ------------------------------------------------------------ chapter 14: a decoder-only LM


def lm_task(task) -> dict:
    """The LM corpus's size, its chance loss and the uniform guess ln V (``lm-*``)."""
    return {"sentences": f"{task.size('train'):,}", "valid": f"{task.size('valid'):,}",
            "vocab": f"{task.tgt_vocab:,}", "chance": task.chance_loss,
            "uniform": float(np.log(task.tgt_vocab))}


def lm_init_figure(P, at_init: dict, depths):
    """Σβ²_ii and the output change against depth, solid for the LM, dashed for the encoder."""
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=3.6,
                             task="reverse and libreoffice-en")
    for name, r in at_init.items():
        ls = "-" if name.startswith("decoder") else "--"
        for s, label in (("post", "Post-LN"), ("pre", "Pre-LN")):
            c = ARCH_COLORS[label]
            ax1.plot(depths, r["sum_beta_sq"][s].mean(1), ls, marker="o", color=c,
                     label=f"{label}, {name}")
            ax2.plot(depths, r[s].mean(1), ls, marker="o", color=c)
    ax1.set(xlabel="layers N", ylabel="Σ_i β²_ii", title="layer dependency at init")
    ax2.set(xlabel="layers N", ylabel="‖ΔF‖² per token",
            title="output change at init, random δ")
    ax1.legend(fontsize=7)
    return fig


def lm_init(at_init: dict, fits: dict, depths, lm: str, enc: str) -> dict:
    """Chapter 14's init-time values: the Σβ² table, each fit's R² (``lm1-*``, the encoder's
    ``lm1-enc-*``), exercise 1's Σβ²_ii at N = 8 against H_17 − 1, and the verdicts."""
    lm_f, beta = fits[lm], at_init[lm]["sum_beta_sq"]
    rows = [[f"{label}, Σβ²_ii", *(f"{v:.1f}" for v in beta[s].mean(1))]
            for s, label in (("post", "Post-LN"), ("pre", "Pre-LN"))]
    out = {"lm1-beta-table": md(md_table(["layers N", *depths], rows)),
           "lm1-r2-post-log": lm_f["r2_post_log"], "lm1-depth-max": depths[-1]}
    for prefix, f in (("lm1-", lm_f), ("lm1-enc-", fits[enc])):
        out |= {prefix + k: f[v] for k, v in (("r2-post", "r2_post_n"), ("r2-pre", "r2_pre_log"),
                                              ("ratio", "ratio"), ("r2-pre-n", "r2_pre_n"))}
    if 8 in depths:  # exercise 1: Pre-LN's Σβ²_ii at N = 8 against H_17 − 1
        out |= {"ex13-measured": float(beta["pre"].mean(1)[list(depths).index(8)]),
                "ex13-predicted": sum(1 / (i + 1) for i in range(1, 17))}
    same = all(f["holds"] for f in fits.values())
    return out | dict(zip(("lm1-init-verdict", "lm1-init-takeaway"),
                          init_verdicts(lm_f, fits[enc], same)))


def init_verdicts(lm_fit: dict, enc_fit: dict, same: bool) -> tuple:
    """What the init-time fits (:func:`tfx.theory.change.depth_laws`) say: (the sentence, law
    by law, with whether the encoder misses the same laws; the takeaway's phrase, 'as the
    encoder's' only where both follow every law, ``same``)."""
    missed = "”, “".join(p for p, ok in lm_fit["parts"].items() if not ok)
    same_text = "follow Theorem 2's laws, as the encoder's do"
    if not missed:
        return ("follow Theorem 2's laws, as in the encoder: the first half of LM-1 holds",
                same_text if same else "follow Theorem 2's laws, though the encoder's do not "
                "at this scale")
    both = all(not ok for p, ok in enc_fit["parts"].items() if not lm_fit["parts"][p])
    where = "in the LM and in the encoder alike" if both else "in the LM (the encoder follows it)"
    fails = "do not follow every law of Theorem 2 at this scale"
    return (f"{fails}: “{missed}” fails {where} (the fits above), so the first half of LM-1 is "
            "not borne out here", same_text if same else f"{fails} (“{missed}” fails)")


def lm_sweep(lrecs, lr_names, warmups) -> dict:
    """``experiments/lm.toml``'s size and recipe (``lm-*``) and ``final-tables`` (every seed's
    end loss, one placement × rate table per warmup)."""
    return sizes(lrecs, "layers:dec", "d:width", "steps", "batch", "runs", "seeds") | {
        "warm": results.select(lrecs, warmup=warmups[-1])[0].train_config.warmup,
        "lrs": ", ".join(lr_names), "outcomes": outcome_counts(lrecs),
        "learned-level": outcome.learned_level(lrecs[0].history.chance_loss),
        "final-tables": md("\n\n".join(f"Warmup **{w}**:\n\n" + results.table(
            results.select(lrecs, warmup=w), rows="placement", cols="lr") for w in warmups))}


def lm_sweep_figure(P, lrecs, placements, warmups):
    """Held-out loss at the end against the learning rate, one panel per warmup."""
    fig, axes = figure(P, ncols=len(warmups), width=9.4, height=3.6, sharey=True,
                       task=lrecs[0].task)
    learned = outcome.learned_level(lrecs[0].history.chance_loss)
    for ax, w in zip(np.atleast_1d(axes), warmups):
        lr_curves(ax, results.select(lrecs, warmup=w), placements, axis="placement",
                  title=f"warmup: {w}")
        level(ax, "learned", learned)
    np.atleast_1d(axes)[0].legend(fontsize=7)
    return fig


def lm_effects_figure(P, lm1, task: str):
    return effects_figure(P, [(f"{e.a} − {e.b}", e) for _, e in lm1], task=task,
                          title="LM-1: held-out loss, paired by seed (dots), mean and 95 % interval",
                          xlabel="difference in held-out loss at the end (nats)")


def warmup_summary(lm1, layers: int) -> str:
    """What warmup did in chapter 14's LM, from LM-1's paired effects (first: Post-LN without
    minus with warmup; last: Post-LN minus Pre-LN, no warmup), and whether seeds resolve it."""
    warm, gap = lm1[0][1], lm1[-1][1]
    told = ("" if warm.verdict in ("reproduces", "reversed") else
            f", an amount its {warm.n} seeds cannot tell from zero")
    return (f"In the {layers}-layer language model of chapter 14, warmup "
            f"{'lowered' if warm.mean > 0 else 'raised'} Post-LN's final held-out loss by "
            f"{abs(warm.mean):.2f} nats{told} (95 % interval of the difference {warm.low:+.2f} "
            f"to {warm.high:+.2f}), while without warmup Post-LN ended {abs(gap.mean):.2f} nats "
            f"{'above' if gap.mean > 0 else 'below'} Pre-LN (95 % interval {gap.low:+.2f} to "
            f"{gap.high:+.2f}).")


def glue_lm1(lm1, fits: dict, lm: str, lrecs, profile: str, warm_name: str) -> None:
    """Glue LM-1's evidence table, its halves (``parts-LM-1``: init, the LM's own depth-law
    fit; training, the registered comparisons), status, claims-page line and
    ``warmup-summary-14``."""
    lm_fit = fits[lm]
    init_verdict = part_verdict(bool(lm_fit["holds"]))
    init = ("init", "Σβ²_ii and the output change grow like N for Post-LN and like ln N for Pre-LN",
            init_verdict)
    warm, gap = lm1[0][1], lm1[-1][1]
    post_warm = results.select(lrecs, placement="Post-LN", warmup=warm_name)
    glue_all({
        "lm1-evidence": md(effects_table(lm1)), "lm1-init-status": init_verdict,
        "lm1-status": glue_parts("LM-1", [init, *evidence.part_items(
            (c, e, c.verdict(lrecs, e)) for c, e in lm1)]),
        "claim-LM-1": evidence.describe("LM-1", profile, load=evidence.reading(lrecs)),
        "lm1-init-law": ("follows Theorem 2's laws" if all(f["holds"] for f in fits.values())
                         else "does not follow every law of Theorem 2"),
        "lm1-warm-does": "lowered" if warm.mean > 0 else "raised",
        "lm1-warm-share": abs(warm.mean) / abs(gap.mean),  # warmup's effect over the gap
        "lm1-contrast-verdict": lm1[1][1].verdict,  # warmup's help to Post-LN minus Pre-LN
        "warmup-summary-14": warmup_summary(lm1, lrecs[0].config.n_dec),
        "lm1-post-warm-learned": sum(outcome.learned(r) for r in post_warm),
        "lm1-post-warm-runs": len(post_warm), "lm1-warm-verdict": warm.verdict,
        "lm1-warm-abs": abs(warm.mean), "lm1-warm-ci": effect_values(warm)["-ci"]}
        | effect_values(gap, "lm1-gap"))


def lm_stream(lrecs, placements, warm: str, lr: str) -> dict:
    """The stream's growth (``readings.stream_growth``) with warmup ``warm`` at ``lr``:
    medians (``lm-stream-*``) and every seed in a table."""
    at = {p: {r.seed: stream_growth(r) for r in results.select(
        lrecs, placement=p, warmup=warm, lr=lr)} for p in placements}
    rows = {f"{p}: top ÷ bottom": {s: g for s, (g, _) in at[p].items()} for p in placements}
    jumps = [j for _, j in at["Pre-LN"].values()]
    rows["Pre-LN: largest growth across one sub-layer"] = {
        s: j for s, (_, (j, _)) in at["Pre-LN"].items()}
    return {"lr": lr, "post": median(rows["Post-LN: top ÷ bottom"].values()),
            "pre": median(rows["Pre-LN: top ÷ bottom"].values()),
            "jump": median(j for j, _ in jumps), "where": ", ".join(sorted({n for _, n in jumps})),
            "table": md(seed_table(rows, "variance ratio at the end", "{:.1f}"))}


def lm_stream_figure(P, lrecs, placements, warm: str, lr: str):
    """The variance of the stream entering each sub-layer, first probe (dotted) and end, every
    seed at ``lr`` with warmup ``warm``."""
    fig, ax = figure(P, width=7.0, height=3.6, task=lrecs[0].task)
    for p in placements:
        for r in results.select(lrecs, placement=p, warmup=warm, lr=lr):
            first, last = traces.stream_profile(r.history, 0)[1], traces.stream_profile(r.history)[1]
            x = np.arange(1, len(last) + 1)
            ax.plot(x, last, "-o", color=ARCH_COLORS[p], ms=3, lw=1,
                    label=f"{p}, end" if r.seed == 0 else None)
            ax.plot(x, first, ":", color=ARCH_COLORS[p], lw=1,
                    label=f"{p}, step {r.history.probe_step[0]}" if r.seed == 0 else None)
    ax.set_yscale("log")
    ax.set(xlabel="sub-layer i (bottom → top)", ylabel="variance of the stream $x_{i-1}$",
           title=f"the stream entering each sub-layer, lr {lr}, warmup")
    ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------- chapter 15: logits that grow


def logits_lr_figure(P, lrecs, fixes):
    fig, ax = figure(P, width=7.0, height=4.0, task=lrecs[0].task)
    lr_curves(ax, lrecs, fixes, axis="fix", colors=FIX_COLORS,
              title="final held-out loss against the learning rate, every seed")
    ax.legend(fontsize=7)
    return fig


def judge(claim: str, lrecs, profile: str) -> list:
    """A claim's registered comparisons and effects (:func:`tfx.book.evidence.evaluate`, a
    quick grid's those it recorded); glues :func:`tfx.book.evidence.glue_claim`'s keys,
    ``<id>-status`` and ``<id>-evidence`` (each row headed by the half its records show)."""
    load, key = evidence.reading(lrecs), claim.lower().replace("-", "")
    glue(f"{key}-status", evidence.glue_claim(claim, profile, load=load))
    pairs = evidence.evaluate(claim, profile, load=load)
    glue(f"{key}-evidence", md(effects_table([(c.label(load(c.experiment)), e) for c, e in pairs])))
    return pairs


def logit_traces_figure(P, lrecs, best_lr: str, high_lr: str):
    """Largest attention logit (top) and lowest head entropy (bottom) over training, no fix
    (left) and QK-norm (right), at the best rate (solid) and ``high_lr`` (dashed)."""
    fig, axes = figure(P, ncols=2, nrows=2, width=9.4, height=6.4, sharex=True,
                       sharey="row", task=lrecs[0].task)
    for col, f in enumerate(("no fix", "QK-norm")):
        for lr, ls in ((best_lr, "-"), (high_lr, "--")):
            for row, name in enumerate(("attn_logit_max", "attn_entropy_min")):
                seed_curves(axes[row][col], results.select(lrecs, fix=f, lr=lr), FIX_COLORS[f],
                            f"lr {lr}", name, ls=ls, alpha=0.8)
        axes[0][col].set(yscale="log", title=f"{f}: largest attention logit, any layer")
        axes[1][col].set(xlabel="step", title=f"{f}: lowest head entropy (nats)")
        axes[0][col].legend(fontsize=7)
    return fig


def lg1_probes(lrecs, best_lr: str, high_lr: str) -> dict:
    """LG-1's probe readings (``lg1-*``): medians in the prose, every seed in ``table``; the
    QK-norm bound √d_h (``logits.qk_norm_logit_bound``)."""
    from ..theory.logits import qk_norm_logit_bound

    rows, vals = {}, {}
    for key, what, name, f, lr, at, end in (
            ("none-first", "largest logit", "attn_logit_max", "no fix", high_lr, 0, "first probe"),
            ("none-high", "largest logit", "attn_logit_max", "no fix", high_lr, -1, "end"),
            ("none-best", "largest logit", "attn_logit_max", "no fix", best_lr, -1, "end"),
            ("qk-high", "largest logit", "attn_logit_max", "QK-norm", high_lr, -1, "end"),
            ("ent-none-high", "lowest entropy (nats)", "attn_entropy_min", "no fix", high_lr, -1, "end"),
            ("ent-qk-high", "lowest entropy (nats)", "attn_entropy_min", "QK-norm", high_lr, -1, "end")):
        rows[f"{what}, {f}, lr {lr}, {end}"] = vals[key] = per_seed(
            lrecs, probe(name, at), fix=f, lr=lr)
    qk, cfg = results.select(lrecs, fix="QK-norm", lr=high_lr), lrecs[0].config
    return {k: median(v.values()) for k, v in vals.items()} | {
        "ratio": min(vals["none-high"][s] / vals["qk-high"][s] for s in vals["qk-high"]),
        "best": best_lr, "high": high_lr, "bound": qk_norm_logit_bound(cfg.d_model // cfg.n_heads),
        "qk-learned": f"{sum(map(outcome.learned, qk))} of {len(qk)}",
        "none-outcomes": outcome_counts(results.select(lrecs, fix="no fix", lr=high_lr)),
        "table": md(seed_table(rows, "probe", "{:.3g}"))}


def lg1_effects_figure(P, lg1, task: str):
    fig, (a1, a2) = figure(P, ncols=2, width=9.4, height=0.9 + 0.4 * len(lg1), task=task)
    effects_plot(a1, [(f"{c.point['lr']}", e) for c, e in lg1 if "logit" in c.measure],
                 title="largest attention logit", xlabel="no fix − QK-norm (decades)")
    effects_plot(a2, [(f"{c.point['lr']}", e) for c, e in lg1 if c.measure == "end loss"],
                 title="held-out loss at the end", xlabel="no fix − QK-norm (nats)")
    a1.set_ylabel("learning rate")
    return fig


def log_z_figure(P, lrecs, lr_names, high_lr: str):
    """log Z at the end against the rate, and over training at ``high_lr``, no fix/z-loss."""
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=3.6, sharey=True,
                             task=lrecs[0].task)
    for f in ("no fix", "z-loss"):
        seed_lines(ax1, lrecs, lr_names, probe("log_z"), FIX_COLORS[f], f, dict(lw=0.8, alpha=0.7),
                   fix=f)
        seed_curves(ax2, results.select(lrecs, fix=f, lr=high_lr), FIX_COLORS[f], f, "log_z")
    ax1.set(xscale="log", xlabel="learning rate", ylabel="mean log Z (nats)",
            title="at the end, every seed")
    ax2.set(xlabel="step", title=f"lr {high_lr}, every seed")
    ax1.legend(fontsize=7)
    return fig


def zl1(lrecs, best_lr: str, high_lr: str) -> dict:
    """ZL-1's log Z at start and end, the share of its distance from 0 the z-loss removed
    and the z-loss's cost (``zl-*``; ``readings.log_z_pull``)."""
    z = log_z_pull(lrecs, best_lr, high_lr)
    pulled, cost, log_z = z["pulled"], z["cost"], z["log_z"]
    table = log_z | {"z-loss − no fix, best loss (nats)": cost}
    return {"pull": 100 * median(pulled), "pull-n": len(pulled),
            "pull-range": f"{100 * min(pulled):.1f} to {100 * max(pulled):.1f} %",
            "cost": median(cost.values()),
            "cost-range": f"{min(cost.values()):+.3f} to {max(cost.values()):+.3f}",
            "start": median(log_z["start (first probe)"].values()),
            "none": median(log_z[f"no fix, lr {high_lr}"].values()),
            "z": median(log_z[f"z-loss, lr {high_lr}"].values()),
            "table": md(seed_table(table, "mean log Z at the end (nats)", "{:+.3f}")),
            "why": evidence.NOT_TESTABLE["ZL-1"]}


def ec1(ec: dict) -> dict:
    """EC-1 at this scale from ``readings.entropy_collapse`` (``ec-*``, the words of its line
    in :mod:`tfx.book.claims`): how the no-fix runs ended, where the still-learning runs above
    the best rate part from the learned ones; its status."""
    nofix, failed, learned = ec["nofix"], ec["failed"], ec["learned"]
    return {f"ec-{k}": v for k, v in {
        "outcomes": outcome_counts(nofix), "failed": len(failed), "slow": len(ec["slow"]),
        "learned": len(learned), "seeds": len({r.seed for r in nofix}),
        "learned-lrs": ", ".join(sorted({r.point["lr"] for r in learned})) or "none",
        "ent-step": str(ec["ent_step"]) if ec["ent_step"] is not None else "no step",
        "loss-step": str(ec["loss_step"]) if ec["loss_step"] is not None else "no step",
        "rate-ratio": "{:.0f} to {:.0f}".format(*ec["rate_ratio"]) if ec["rate_ratio"] else "—",
        "ent-every": ec["ent_every"], "eval-every": ec["eval_every"],
        "why": f"no run without a fix failed (outcome rule: {' or '.join(outcome.FAILED)})"
        if not failed else f"the {len(failed)} failed runs are at other learning rates than "
        f"the {len(learned)} learned ones"}.items()} | {"status-EC-1": NOT_TESTABLE}


def ec1_figure(P, ec: dict):
    """The no-fix runs: end loss against the lowest head entropy at the end; the entropy over
    training, coloured by how each run ended."""
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=3.6, task=ec["nofix"][0].task)
    marks = {"learned": "o", "still learning": "s", "did not learn": "v", "diverged": "x"}
    for r in ec["nofix"]:
        v = ec["verdict"][id(r)]
        ent = traces.trace(r.history, "attn_entropy_min")
        ax1.plot(ent[1][-1], outcome.judge(r).loss, marks[v], color=FIX_COLORS["no fix"],
                 ms=5, alpha=0.8)
        ax2.plot(*ent, color=OUTCOME_COLORS[v], lw=0.6, alpha=0.5)
    ax1.set(xscale="symlog", xlabel="lowest head entropy at the end (nats)",
            ylabel="held-out loss at the end (nats)",
            title="no fix (○ learned, □ still learning, ▼ did not learn)")
    ax2.set(xlabel="step", ylabel="lowest head entropy (nats)", title="no fix: every run, by how it ended")
    shown = [v for v in OUTCOME_COLORS if v in ec["verdict"].values()]  # the registry's order
    ax2.legend(handles=[matplotlib.lines.Line2D([], [], color=OUTCOME_COLORS[v], label=v) for v in shown],
               fontsize=7)
    return fig


# ------------------------------------------------- chapter 16: where the norm goes (PL-1)

PLACEMENT_ROWS = ("pre", "peri-ln", "output-norm", "post", "sub-ln", "ln-scaling", "dyt")


def placements_init(init: dict, depths, seeds: int) -> dict:
    """PL-1's init values from ``norms.placement_summary``: in ``pl1-init-table``, the growth per
    layer of Pre-LN and the output norms (``pl1_slope_*``); whether each fix holds it under half
    Pre-LN's (``pl1_<scheme>_verdict``)."""
    slope, rows = init["slope"], []
    out = {f"pl1_slope_{k}": slope[n] for n, k in (("pre", "pre"), ("peri-ln", "peri"),
                                                   ("output-norm", "out"))}
    for name in [n for n in PLACEMENT_ROWS if n in init["rows"]]:
        vals = init["rows"][name]
        rows.append([LABELS.get(name, name), *(f.format(v) for f, v in zip(
            ("{:.2f}", "{:.2f}", "{:.1f}", "{:.2f}", "{:.1e}", "×{:.1f}"), vals))])
    head = ["placement", "growth per layer", "after layer 1", "at the top",
            "last ÷ first FFN gradient", "output change", "its growth with depth"]
    bound = {n: "bounds it" if slope[n] < 0.5 * slope["pre"] else "does not bound it"
             for n in ("peri-ln", "output-norm", "ln-scaling")}
    both = bound["peri-ln"] == bound["output-norm"] == "does not bound it"
    return out | {"pl1-init-table": md(md_table(head, rows)), "pl1_depth": depths[-1],
                  "pl1_depth_min": depths[0], "pl1_seeds": seeds,
                  "pl1_scaled_over_pre": init["scaled_over_pre"],
                  "pl1_scaled_r2_H": init["scaled_r2_H"],
                  "pl1_peri_verdict": bound["peri-ln"], "pl1_out_verdict": bound["output-norm"],
                  "pl1_scaled_verdict": bound["ln-scaling"],
                  "pl1_outnorms_verdict": "do not bound it" if both else "bound it in part"}


def placements_init_figure(P, init: dict, depths, seeds: int):
    """The stream per layer at the deepest N; against N, the last/first FFN gradient and the
    output change under a random 1 % perturbation."""
    fig, (a, b, c) = figure(P, ncols=3, width=9.4, height=3.8)
    layers = np.arange(1, depths[-1] + 1)
    for name in [n for n in PLACEMENT_ROWS if n in init["stream"]]:
        col = color(name)
        a.plot(layers, init["stream"][name], "o-", ms=3, color=col, label=LABELS.get(name, name))
        for ax, k in ((b, "grad_ratio"), (c, "rel_change")):
            ax.plot(depths, [np.median(init["across"](name, k, n)) for n in depths], "o-",
                    ms=3, color=col)
            for n in depths:
                ax.plot([n] * seeds, init["across"](name, k, n), ".", ms=2, color=col,
                        alpha=0.5)
    a.set(yscale="log", xlabel="layer ℓ", ylabel="E‖x_ℓ‖²/d")
    a.set_title(f"stream, {depths[-1]} layers (mean of {seeds} seeds)", fontsize=9)
    a.legend(fontsize=6)
    for ax, title in ((b, "last / first layer's FFN gradient"), (c, "‖ΔF‖²/‖F‖², random 1 % δ")):
        log_ticks(ax, depths)
        ax.set(xlabel="layers N", yscale="log")
        ax.set_title(title, fontsize=9)
    return fig


DEPTH_ROWS = ("pre", "deepnorm", "admin", "t-fixup", "ln-scaling", "depth-mup")


def depth_scalings(mult: dict, slopes: dict, depths) -> dict:
    """The depth scalings' log-log slopes (``norms.depth_slopes``) in ``ds-table``, depth-μP's
    measured one as ``ds_k_mup``."""
    measured, derived = slopes["measured"], slopes["derived"]
    rows = [[LABELS.get(name, name), f"{measured[name]:+.2f}", f"{derived[name]:+.2f}"]
            for name in DEPTH_ROWS]
    return {"ds_k_mup": measured["depth-mup"],
        "ds-table": md(md_table(["scheme", "measured slope", "derived slope"], rows)),
        "ds_rezero_max": float(mult["rezero"].max()), "ds_depth_min": depths[0],
        "ds_depth_max": depths[-1], "ds_seeds": next(iter(mult.values())).shape[1]}


def depth_scalings_figure(P, mult: dict, depths, slopes: dict):
    from ..theory import norms

    ns = np.array(depths, dtype=float)
    fig, a = figure(P, width=7, height=4.2)
    dense = np.arange(ns[0], ns[-1] + 1)  # every depth: the factors use whole N
    for name in DEPTH_ROWS:
        c, m = color(name), mult[name].mean(1)
        anchor = m[0] / norms.depth_factor(name, ns[:1])[0]
        a.plot(ns, m, "o", color=c, ms=5, label=f"{LABELS[name]}: "
               f"{slopes['measured'][name]:+.2f} ({slopes['derived'][name]:+.2f})")
        a.plot(dense, anchor * norms.depth_factor(name, dense), "-", color=c, lw=1)
    log_ticks(a, depths)
    a.set(yscale="log", xlabel="layers N (decoder-only, L = 2N sub-layers)",
          ylabel="last branch / stream, $m_L$")
    a.set_title("measured (dots, mean of seeds) and derived (lines); ReZero: 0", fontsize=9)
    a.legend(fontsize=7, title="log-log slope: measured (derived)", title_fontsize=7)
    return fig


def placements_trained(precs, names, lrs, lr: str) -> dict:
    """The placements sweep's readings (``pt-*``; ``readings.top_streams``): each scheme's best
    rate, top stream across the rates and, per seed, as a multiple of Pre-LN's (``ratio-table``);
    ``lr``: the rate the profiles are drawn at."""
    t = top_streams(precs, names, lrs)
    top, growths, ratio, bests, best = (t[k] for k in ("top", "growth", "ratio", "best_loss", "best_rate"))
    rows = {f"{n} ÷ Pre-LN, lr {r}": v for (n, r), v in ratio.items()}
    post_runs = results.select(precs, placement="Post-LN")
    post_top = [top_stream(r) for r in post_runs]
    out = sizes(precs, "layers:dec", "d:width", "steps", "batch", "seeds") | {
        "lr": lr, "lrs": ", ".join(lrs), "lr-lo": lrs[0], "lr-hi": lrs[-1],
        "pre-growth": median(growths["Pre-LN"].values()),
        "pre-top": median(top["Pre-LN", lrs[-1]].values()),
        "pre-best": median(bests["Pre-LN"].values()),
        "best-rates": "; ".join(f"{n} {best[n].variant}" for n in names),
        "bracketed": f"{sum(b.bracketed for b in best.values())} of {len(best)}",
        "ratio-table": md(seed_table(rows, "top stream at the end", "{:.2g}")),
        "growth-table": md(
            seed_table({f"{n}: ×": g for n, g in growths.items()}, f"top stream, lr "
                       f"{lrs[-1]} ÷ lr {lrs[0]}", "{:.3g}") + "\n\n" +
            seed_table(bests, "best held-out loss over the rates (nats)", "{:.3f}")),
        "post-top": f"{min(post_top):.1f} to {max(post_top):.1f}" if post_top else "—",
        "post-outcomes": outcome_counts(post_runs),
        "pre-hi-outcomes": outcome_counts(results.select(precs, placement="Pre-LN", lr=lrs[-1]))}
    for name, key in (("Peri-LN", "peri"), ("output norm", "out"), ("Pre-LN, 1/√ℓ", "scaled")):
        if name in best:
            out[f"{key}-growth"] = median(growths[name].values())
        if name in best and key != "scaled":
            out |= {f"{key}-best": median(bests[name].values()),
                    f"{key}-rate-ratio": best[name].lr / best["Pre-LN"].lr}
    if "Peri-LN" in best:
        out |= {f"peri-{k}-ratio": median(ratio["Peri-LN", r].values())
                for k, r in (("hi", lrs[-1]), ("lo", lrs[0]))}
    if "Sub-LN" in best:
        out |= {"subln-growth": median(growths["Sub-LN"].values()),
                "subln-low": median(ratio["Sub-LN", lrs[0]].values())}
    return out


def placements_trained_figure(P, precs, names, lrs, lr: str):
    """End loss and top stream against the rate; the stream per sub-layer at ``lr``."""
    fig, (a, b, c) = figure(P, ncols=3, width=9.4, height=3.6, task=precs[0].task)
    lr_curves(a, precs, names, axis="placement", title="held-out loss at the end")
    a.legend(fontsize=6)
    for name in names:
        seed_lines(b, precs, lrs, top_stream, label_color(name), name, dict(lw=1, ms=3), placement=name)
        for r in results.select(precs, placement=name, lr=lr):
            prof = traces.stream_profile(r.history)[1]
            c.plot(np.arange(1, len(prof) + 1), prof, "-", color=label_color(name), lw=1)
    b.set(xscale="log", yscale="log", xlabel="learning rate",
          ylabel="variance of the top sub-layer's input", title="the top stream, at the end")
    c.set(yscale="log", xlabel="sub-layer i (bottom → top)",
          ylabel="variance of the stream $x_{i-1}$", title=f"every sub-layer, lr {lr}")
    return fig


def pl1_effects_figure(P, pl1, task: str):
    """PL-1's comparisons: a scheme minus Pre-LN in the stream's growth, one row each."""
    return effects_figure(P, [(f"{c.a} − Pre-LN, {c.part}", e) for c, e in pl1], task=task,
                          title=f"PL-1 at lr {pl1[0][0].point['lr']}: the stream's growth, "
                                "paired by seed, 95 % interval",
                          xlabel="difference in log10(top stream / lower stream) (decades)")


# ---------------------------------------------------- chapter 17: RMSNorm and Dynamic Tanh

def gain_figure(P, input_norms, gain: dict, d: int):
    """A norm's largest gain (the spectral norm of its Jacobian) against its input's size."""
    fig, a = figure(P)
    styles = {"LayerNorm": "-", "RMSNorm": "--", "DyT, α = 0.5": "-", "DyT, α = 2": ":"}
    for k, y in gain.items():
        c = NORM_COLORS[k] if k in styles else GREYS["ink"]
        a.loglog(input_norms, y, styles.get(k, "-"), color=c, label=k)
    a.set(xlabel=f"input norm ‖x‖ (d = {d})", ylabel="spectral norm of the Jacobian",
          title="a norm's largest gain against its input's size (ε = 1e-5)")
    a.legend(fontsize=8)
    return fig


def saturation_figure(P, alphas, share, predicted, depth: int):
    """The saturated share against the initial α (measured, Gaussian prediction), and per
    module for four values of α."""
    fig, (a, b) = figure(P, ncols=2, width=9.4)
    for s in range(share.shape[1]):
        a.semilogx(alphas, 100 * share[:, s].mean(1), "o", color=NORM_COLORS["DyT"], ms=4,
                   label="measured (each seed)" if s == 0 else None)
    a.fill_between(alphas, 100 * share.min(axis=(1, 2)), 100 * share.max(axis=(1, 2)),
                   color=NORM_COLORS["DyT"], alpha=0.2, label="range over DyT modules")
    a.semilogx(alphas, 100 * predicted.mean(axis=(1, 2)), "-", color=GREYS["reference"], lw=1,
               label="Gaussian prediction")
    a.axvline(0.5, ls=":", color=GREYS["mark"], lw=1)
    a.set(xlabel="initial α", ylabel="saturated units (%)")
    a.set_title(f"Pre-LN LM with DyT, {depth} layers", fontsize=10)
    a.legend(fontsize=7)
    k = np.arange(1, share.shape[-1] + 1)
    for a_i in np.linspace(0, len(alphas) - 1, 4).astype(int):
        b.plot(k, 100 * share[a_i].mean(0), "o-", ms=3,
               color=plt.cm.viridis(a_i / len(alphas)), label=f"α = {alphas[a_i]:.2g}")
    b.set(xlabel="DyT module, bottom to top (last: the final norm)",
          ylabel="saturated units (%)")
    b.legend(fontsize=7)
    return fig


def dy1_control_effects(nrecs) -> dict:
    """DY-1's controls at their own best rates (``effects.at_best_rate``), for the sentence
    under their table: does dropping the √d scale rescue DyT (``dy1-nosqrt-*``), where does no
    norm end against LayerNorm (``dy1-nonorm-*``) and DyT against no norm (``dy1-overnone-*``);
    a control whose best rate sits at the grid's edge is named (``dy1-ctrl-edge``)."""
    no_sqrt = effects.at_best_rate(nrecs, "norm", "DyT, no √d embedding scale", "DyT", "lower")
    over_none = effects.at_best_rate(nrecs, "norm", "DyT", "no norm", "higher")
    edge = [g["norm"] for g in effects.unbracketed(nrecs)
            if g.get("norm") in ("DyT, no √d embedding scale", "no norm")]
    return {**effect_values(no_sqrt, "dy1-nosqrt"), **effect_values(over_none, "dy1-overnone"),
            **effect_values(effects.at_best_rate(nrecs, "norm", "no norm", "LayerNorm", "higher"),
                            "dy1-nonorm"),
            "dy1-nosqrt-says": ("is what sinks the default α" if no_sqrt.verdict == "reproduces"
                                else "is not shown to be what sinks the default α"),
            "dy1-overnone-says": ("so at this scale the default DyT trains worse than no norm"
                                  if over_none.verdict == "reproduces"
                                  else "not resolved against no norm"),
            "dy1-ctrl-edge": (f" ({' and '.join(edge)}: best rate at the grid's edge, so its "
                              "best may lie beyond the grid)" if edge else "")}


def dy1_controls(nrecs) -> list:
    """DY-1's controls recorded so far, each at its own best rate against LayerNorm's: (the
    comparison, its paired effect)."""
    return [(c, c.effect(nrecs)) for c in (evidence.Comparison(
        "DY-1", f"{v}, at its best rate, ends within 0.05 nats of LayerNorm", "norms",
        "norm", v, "LayerNorm", "equal", own_rate=True, margin=0.05)
        for v in ("DyT, no √d embedding scale", "no norm") if results.select(nrecs, norm=v))]


def norms_trained(nrecs, names, lrs, rn1, dy1, profile: str, load) -> dict:
    """Chapter 17's training half (``nt-*``, ``dy1-*``, ``rn1-*``, claims-page lines): every
    norm's LR sensitivity and best loss, DyT's saturation (``readings.norm_sweep``), the α
    variants and the controls. ``load``: the registry's records."""
    ns = norm_sweep(nrecs, names)
    summ, best, best_rate, sat_end = ns["summary"], ns["best"], ns["best_rate"], ns["saturated"]
    rows = [[f, median_range(summ[f]), learned_at(results.select(nrecs, norm=f)),
             ", ".join(f"{v:.3f}" for v in best[f])] for f in names]
    head = ["norm", "LR sensitivity, median (range)", "rates learned at, per seed",
            "best held-out loss, per seed"]
    dyt_best, hi = best_rate["DyT"], lrs[-1]
    sat = {"first probe, best rate": per_seed(nrecs, saturated(0), norm="DyT", lr=dyt_best),
           "end, best rate": sat_end["DyT"],
           f"end, lr {hi}": per_seed(nrecs, saturated(-1), norm="DyT", lr=hi)}
    flat_and_high = (summ["DyT"]["median"] < summ["LayerNorm"]["median"]
                     and min(best["DyT"]) > max(best["LayerNorm"]))
    out = {f"nt-{k}": v for k, v in sizes(nrecs, *SWEEP_SIZES).items()} | {
        "nt-table": md(md_table(head, rows)), "dy1-train-best": dyt_best, "dy1-train-hi": hi,
        "dy1-train-sat-first": median(sat["first probe, best rate"].values()),
        "dy1-train-sat": median(sat["end, best rate"].values()),
        "dy1-train-sat-hi": median(sat[f"end, lr {hi}"].values()),
        "dy1-sat-table": md(seed_table(sat, "% saturated, most saturated DyT", "{:.1f}")),
        "dy1-lrs-note": "Its smaller LR sensitivity is the flat curve of a recipe that ends "
        "above LayerNorm at every rate, not a stable one (chapter 12's caveat)."
        if flat_and_high else "Its LR sensitivity can be read as for the other two."}
    alpha_rows, alpha_lines = [], []
    for f in [f for f in names if f.startswith("DyT, α")]:
        s_end, b = ", ".join(f"{v:.1f}" for v in sat_end[f].values()), best_rate[f]
        alpha_rows.append([f, b, f"{median(best[f]):.3f}", f"{summ[f]['median']:.2f}", s_end])
        alpha_lines.append(f"{f}: best held-out loss {median(best[f]):.3f} against LayerNorm's "
                           f"{median(best['LayerNorm']):.3f} (medians over seeds); LR sensitivity "
                           f"{summ[f]['median']:.2f} against {summ['LayerNorm']['median']:.2f}; "
                           f"at its best rate {b}, {s_end} % saturated at the end")
    ctrl = dy1_controls(nrecs)
    return out | (dy1_control_effects(nrecs) if len(ctrl) == 2 else {}) | {
        "dy1-alpha-table": md(md_table(["variant", "best rate", "best held-out loss (median)",
                                        "LR sensitivity", "% saturated at the end, per seed"],
                                       alpha_rows)),
        "dy1-controls": md(effects_table(ctrl)) if ctrl else md(
            "Not yet recorded: `experiments/norms.toml` holds the controls *DyT, no √d "
            "embedding scale* and *no norm*, queued for a later session."),
        "dy1-evidence": md(effects_table(dy1)),
        "claim-RN-1": evidence.describe("RN-1", profile, load=load),
        "claim-DY-1": evidence.describe("DY-1", profile, load=load),
        "dy1-train": f"{dy1[0][0].says}: {dy1[0][1].describe()}, {dy1[0][1].verdict}",
        "dy1-alpha": "; ".join([f"{c.says}: {e.describe()}, {e.verdict}" for c, e in dy1[1:]]
                               + alpha_lines)} | effect_values(rn1[0][1], "rn1") | effect_values(
        dy1[0][1], "dy1")


def norms_figure(P, nrecs, names, lrs):
    """Every norm's end loss against the rate; DyT's saturation over training, every seed."""
    fig, (a, b) = figure(P, ncols=2, width=9.4, height=4.0, task=nrecs[0].task)
    lr_curves(a, nrecs, names, axis="norm", colors=NORM_COLORS,
              title="final held-out loss against the learning rate")
    a.legend(fontsize=7)
    for k, lr in enumerate(lrs):
        for r in results.select(nrecs, norm="DyT", lr=lr):
            b.plot(r.history.probe_step, [100 * max(row) for row in r.history.dyt_saturated],
                   color=plt.cm.viridis(k / max(1, len(lrs) - 1)), lw=1,
                   label=f"lr {lr}" if r.seed == 0 else None)
    b.set(xlabel="step", ylabel="% saturated, most saturated DyT",
          title="DyT (α = 0.5) during training, every seed")
    b.legend(fontsize=7)
    return fig


def norm_effects_figure(P, nrecs, rn1, dy1):
    """RN-1, DY-1 and DY-1's controls, each norm at its own best rate minus LayerNorm."""
    pairs = [(c.a, e) for c, e in rn1 + dy1 + dy1_controls(nrecs)]
    fig, ax = figure(P, width=9.4, height=0.6 + 0.5 * len(pairs), task=nrecs[0].task)
    effects_plot(ax, [(f"{x} − LayerNorm", e) for x, e in pairs],
                 title="each at its own best rate, paired by seed; grey band: ±0.05 nats",
                 xlabel="difference in best held-out loss (nats)")
    return fig
