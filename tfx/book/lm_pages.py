"""The bookkeeping of the language-model chapters (14-17): the glued numbers, per-seed
tables, figures and verdict strings, out of the page and tested
(``tests/book/test_lm_pages.py``). Whether a run learned is :mod:`tfx.runs.outcome`'s call,
whether a claim reproduces :mod:`tfx.book.evidence`'s; this module only lays them out."""
from __future__ import annotations

import matplotlib.lines
import matplotlib.pyplot as plt
import numpy as np

from ..runs import effects, outcome, results, sensitivity, traces
from . import evidence
from .claims import glue_parts, glue_status, part_verdict, status_of
from .notebook import glue, glue_all, glue_sizes, md, md_table
from .plot import (ARCH_COLORS, FIX_COLORS, GREYS, LABELS, NORM_COLORS, OUTCOME_COLORS, color,
                   effects_figure, effects_plot, figure, log_ticks, lr_curves)
from .tables import effects_table, gpu_records, learned_at, median_range, outcome_counts, seed_table


def fmt(values, spec: str = "{:.2f}") -> str:
    """'1.0, 2.5, 3.1': values joined with one format."""
    return ", ".join(spec.format(v) for v in values)


def median(values) -> float:
    return float(np.median(list(values)))


def glue_effect(key: str, e) -> None:
    """Glue a paired effect's mean (``<key>-mean``) and 95 % interval (``<key>-ci``)."""
    glue_all({"-mean": e.mean, "-ci": f"{e.low:+.2f} to {e.high:+.2f}"}, key)


def per_seed(recs, value, **point) -> dict:
    """{seed: value(record)} over the records at ``point``."""
    return {r.seed: value(r) for r in results.select(recs, **point)}


def probe(name: str, at: int = -1):
    """A record's probe ``name`` (``traces.trace``) at recorded step ``at`` (the last)."""
    return lambda r: traces.trace(r.history, name)[1][at]


def seed_lines(ax, recs, lrs, value, color, label: str, style: dict, **point) -> None:
    """One line per seed: ``value(record)`` against the learning rate, at each of ``lrs``."""
    at = [per_seed(recs, value, lr=lr, **point) for lr in lrs]
    x = [results.select(recs, lr=lr, **point)[0].train_config.lr for lr in lrs]
    for k, s in enumerate(at[0]):
        ax.plot(x, [a.get(s, np.nan) for a in at], "o-", color=color,
                label=label if k == 0 else None, **style)


def top_stream(r) -> float:
    """The variance of the stream entering the top sub-layer at the end."""
    return traces.stream_profile(r.history)[1][-1]


def best_losses(recs, **point) -> dict:
    """Per seed: the held-out loss at the best learning rate (``sensitivity.summarize``)."""
    per = sensitivity.summarize(results.select(recs, **point))["per_seed"]
    return {s: v["best"] for s, v in per.items()}


# a recorded LM sweep's size as the chapters state it (:func:`tfx.book.notebook.glue_sizes`)
SWEEP_SIZES = ("runs", "minutes", "layers:dec", "d:width", "steps", "seeds", "rates", "lr-range")


def gpu_section(rs, rows: str, cols: str, key: str):
    """A chapter's GPU half from its ``full``-profile records ``rs``: glue ``key`` (in, or not
    yet in) and return the records' Markdown (:func:`tfx.book.tables.gpu_records`) or None."""
    if not rs:
        glue(key, "The GPU runs of this sweep are not in yet; the box at the end of the page "
                  "says how to run them.")
        return None
    from ..runs.experiment import Experiment

    planned = len(Experiment.load(rs[0].experiment).runs("full"))
    so_far = "" if len(rs) >= planned else f", {len(rs)} of its {planned} runs so far (the rest wait for a GPU)"
    glue(key, f"The same sweep at the GPU's size (the full profile){so_far}:")
    return md(gpu_records({rs[0].experiment: rs}, {rs[0].experiment: (rows, cols)}))



# ------------------------------------------------------------ chapter 14: a decoder-only LM


def glue_lm_task(task) -> None:
    """Glue the LM corpus's size (``lm-*``), its chance loss and the uniform guess ln V."""
    glue_all({"sentences": f"{task.size('train'):,}", "valid": f"{task.size('valid'):,}",
              "vocab": f"{task.tgt_vocab:,}", "chance": task.chance_loss,
              "uniform": float(np.log(task.tgt_vocab))}, "lm-")


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


def glue_lm_init(at_init: dict, fits: dict, depths, lm: str, enc: str) -> bool:
    """Glue chapter 14's init-time numbers (``lm1-*``) and the Σβ² table; True where both
    kinds of model follow Theorem 2's laws (``change.depth_laws``' ``holds``)."""
    lm_f, beta = fits[lm], at_init[lm]["sum_beta_sq"]
    rows = [[f"{label}, Σβ²_ii", *(f"{v:.1f}" for v in beta[s].mean(1))]
            for s, label in (("post", "Post-LN"), ("pre", "Pre-LN"))]
    glue("lm1-beta-table", md(md_table(["layers N", *depths], rows)))
    for prefix, f in (("lm1-", lm_f), ("lm1-enc-", fits[enc])):
        glue_all({"r2-post": f["r2_post_n"], "r2-pre": f["r2_pre_log"], "ratio": f["ratio"],
                  "r2-pre-n": f["r2_pre_n"]}, prefix)
    glue_all({"lm1-r2-post-log": lm_f["r2_post_log"], "lm1-depth-max": depths[-1]})
    if 8 in depths:  # exercise 1: Pre-LN's Σβ²_ii at N = 8 against H_17 − 1
        glue("ex13-measured", float(beta["pre"].mean(1)[list(depths).index(8)]))
        glue("ex13-predicted", sum(1 / (i + 1) for i in range(1, 17)))
    same = all(f["holds"] for f in fits.values())
    glue_all(dict(zip(("verdict", "takeaway"), init_verdicts(lm_f, fits[enc], same))), "lm1-init-")
    return same


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


def glue_lm_sweep(lrecs, lr_names, warmups) -> None:
    """Glue ``experiments/lm.toml``'s size and recipe (``lm-*``) and ``lm-final-tables``
    (every seed's end loss, one placement × rate table per warmup)."""
    glue_sizes("lm", lrecs, "layers:dec", "d:width", "steps", "batch", "runs", "seeds")
    glue_all({"warm": results.select(lrecs, warmup=warmups[-1])[0].train_config.warmup,
              "lrs": ", ".join(lr_names), "outcomes": outcome_counts(lrecs),
              "learned-level": outcome.learned_level(lrecs[0].history.chance_loss)}, "lm-")
    glue("lm-final-tables", md("\n\n".join(f"Warmup **{w}**:\n\n" + results.table(
        results.select(lrecs, warmup=w), rows="placement", cols="lr") for w in warmups)))


def lm_sweep_figure(P, lrecs, placements, warmups):
    """Held-out loss at the end against the learning rate, one panel per warmup."""
    fig, axes = figure(P, ncols=len(warmups), width=9.4, height=3.6, sharey=True,
                       task=lrecs[0].task)
    level = outcome.learned_level(lrecs[0].history.chance_loss)
    for ax, w in zip(np.atleast_1d(axes), warmups):
        lr_curves(ax, results.select(lrecs, warmup=w), placements, axis="placement",
                  title=f"warmup: {w}")
        ax.axhline(level, color="0.3", ls="--", lw=0.8, label="learned (outcome rule)")
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


def glue_lm1(lm1, same: bool, lm_fit: dict, lrecs, profile: str, warm_name: str) -> str:
    """Glue LM-1's evidence table, its halves (``parts-LM-1``: init, the LM's own depth-law
    fit; training, the registered comparisons), status, claims-page line and
    ``warmup-summary-14``; returns the status."""
    glue("lm1-evidence", md(effects_table(lm1)))
    init_verdict = part_verdict(bool(lm_fit["holds"]))
    init = ("init", "Σβ²_ii and the output change grow like N for Post-LN and like ln N for Pre-LN",
            init_verdict)
    lm1_status = glue_parts("LM-1", [init, *evidence.part_items((c, e, c.verdict(lrecs, e)) for c, e in lm1)])
    init_text = "follows Theorem 2's laws" if same else "does not follow every law of Theorem 2"
    warm, gap = lm1[0][1], lm1[-1][1]
    post_warm = results.select(lrecs, placement="Post-LN", warmup=warm_name)
    glue_all({
        "lm1-status": lm1_status, "lm1-init-status": init_verdict,
        "claim-LM-1": f"at init, the output change {init_text} (R² {lm_fit['r2_post_n']:.2f} "
                      f"against N for Post-LN; Pre-LN {lm_fit['r2_pre_log']:.2f} against ln N, "
                      f"{lm_fit['r2_pre_n']:.2f} against N); trained: "
                      f"{evidence.describe('LM-1', profile, load=evidence.reading(lrecs))}",
        "lm1-warm-does": "lowered" if warm.mean > 0 else "raised",
        "lm1-warm-share": abs(warm.mean) / abs(gap.mean),  # warmup's effect over the gap
        "lm1-contrast-verdict": lm1[1][1].verdict,  # warmup's help to Post-LN minus Pre-LN
        "warmup-summary-14": warmup_summary(lm1, lrecs[0].config.n_dec),
        "lm1-post-warm-learned": sum(outcome.learned(r) for r in post_warm),
        "lm1-post-warm-runs": len(post_warm)})
    for key, e in (("lm1-warm", warm), ("lm1-gap", gap)):
        glue_effect(key, e)
        glue_all({"-verdict": e.verdict, "-abs": abs(e.mean)}, key)
    return lm1_status


def lm_stream(P, lrecs, placements, warm: str, lr: str):
    """The variance of the stream entering each sub-layer, first probe (dotted) and end, every
    seed at ``lr`` with warmup ``warm``; glues ``lm-stream-*`` (medians, a per-seed table)."""
    fig, ax = figure(P, width=7.0, height=3.6, task=lrecs[0].task)
    growth, jumps = {}, {}
    for p in placements:
        for r in results.select(lrecs, placement=p, warmup=warm, lr=lr):
            _, first = traces.stream_profile(r.history, 0)
            names, last = traces.stream_profile(r.history)
            growth.setdefault(p, {})[r.seed] = last[-1] / last[0]
            jumps.setdefault(p, {})[r.seed] = max(
                (last[k + 1] / last[k], names[k]) for k in range(len(last) - 1))
            x = np.arange(1, len(last) + 1)
            ax.plot(x, last, "-o", color=ARCH_COLORS[p], ms=3, lw=1,
                    label=f"{p}, end" if r.seed == 0 else None)
            ax.plot(x, first, ":", color=ARCH_COLORS[p], lw=1,
                    label=f"{p}, step {r.history.probe_step[0]}" if r.seed == 0 else None)
    ax.set_yscale("log")
    ax.set(xlabel="sub-layer i (bottom → top)", ylabel="variance of the stream $x_{i-1}$",
           title=f"the stream entering each sub-layer, lr {lr}, warmup")
    ax.legend(fontsize=7)
    pre_jumps = jumps["Pre-LN"]
    rows = {f"{p}: top ÷ bottom": growth[p] for p in placements}
    rows["Pre-LN: largest growth across one sub-layer"] = {s: j for s, (j, _) in pre_jumps.items()}
    glue_all({"lr": lr, "post": median(growth["Post-LN"].values()),
              "pre": median(growth["Pre-LN"].values()),
              "jump": median(j for j, _ in pre_jumps.values()),
              "where": ", ".join(sorted({n for _, n in pre_jumps.values()})),
              "table": md(seed_table(rows, "variance ratio at the end", "{:.1f}"))}, "lm-stream-")
    return fig


# --------------------------------------------------------------- chapter 15: logits that grow


def logits_lr_figure(P, lrecs, fixes):
    fig, ax = figure(P, width=7.0, height=4.0, task=lrecs[0].task)
    lr_curves(ax, lrecs, fixes, axis="fix", colors=FIX_COLORS,
              title="final held-out loss against the learning rate, every seed")
    ax.legend(fontsize=7)
    return fig


def judge(claim: str, lrecs, profile: str) -> list:
    """A claim's registered comparisons (:mod:`tfx.book.evidence`) and effects; glues
    ``claim-<ID>``, ``status-<ID>``, ``<id>-status``, ``<id>-evidence``. A grid that lacks a
    registered rate (quick) gets the comparisons it recorded."""
    load = evidence.reading(lrecs)
    comps = evidence.BY_CLAIM[claim]
    here = [c for c in comps if results.select(load(c.experiment), **c.point)]
    key = claim.lower().replace("-", "")
    if len(here) == len(comps):
        evidence.glue_claim(claim, profile, load=load)
        status = evidence.status(claim, profile, load=load)
        pairs = evidence.evaluate(claim, profile, load=load)
    else:
        pairs = [(c, c.effect(load(c.experiment))) for c in here]
        judged = claim not in evidence.NOT_TESTABLE and pairs
        status = (status_of([e.verdict for _, e in pairs]) if judged
                  else "not testable at this scale")
        text = "; ".join(f"{c.label(load(c.experiment))}: {e.describe()}, {e.verdict}" for c, e in pairs)
        glue(f"claim-{claim}", text or "no registered rate recorded")
        if claim not in evidence.NOT_TESTABLE:  # the halves, as glue_claim gives them
            glue(f"parts-{claim}", evidence.parts_line(evidence.part_items(
                [(c, e, e.verdict) for c, e in pairs])) if pairs else "no registered rate recorded")
        glue_status(claim, status)
    glue(f"{key}-status", status)
    # each row headed by the half its records show ('behind at this budget', not 'failure')
    glue(f"{key}-evidence", md(effects_table([(c.label(load(c.experiment)), e) for c, e in pairs])))
    return pairs


def best_and_high_rate(lrecs, lr_names) -> tuple:
    """(the no-fix runs' best rate (``effects.best_rate``), the lowest rate above it at which
    no seed without a fix learned by the outcome rule, else the top rate)."""
    best_k = lr_names.index(effects.best_rate(lrecs, fix="no fix").variant)
    above = [lr for lr in lr_names[best_k + 1:] if not any(
        outcome.learned(r) for r in results.select(lrecs, fix="no fix", lr=lr))]
    return lr_names[best_k], (above[0] if above else lr_names[-1])


def logit_traces_figure(P, lrecs, best_lr: str, high_lr: str):
    """Largest attention logit (top) and lowest head entropy (bottom) over training, no fix
    (left) and QK-norm (right), at the best rate (solid) and ``high_lr`` (dashed)."""
    fig, axes = figure(P, ncols=2, nrows=2, width=9.4, height=6.4, sharex=True,
                       sharey="row", task=lrecs[0].task)
    for col, f in enumerate(("no fix", "QK-norm")):
        for lr, ls in ((best_lr, "-"), (high_lr, "--")):
            for r in results.select(lrecs, fix=f, lr=lr):
                for row, name in enumerate(("attn_logit_max", "attn_entropy_min")):
                    axes[row][col].plot(*traces.trace(r.history, name), ls,
                                        color=FIX_COLORS[f], lw=1, alpha=0.8,
                                        label=f"lr {lr}" if r.seed == 0 else None)
        axes[0][col].set(yscale="log", title=f"{f}: largest attention logit, any layer")
        axes[1][col].set(xlabel="step", title=f"{f}: lowest head entropy (nats)")
        axes[0][col].legend(fontsize=7)
    return fig


def glue_lg1_probes(lrecs, best_lr: str, high_lr: str, bound: float) -> None:
    """Glue LG-1's probe readings: medians in the prose, every seed in ``lg1-table``."""
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
        glue(f"lg1-{key}", median(vals[key].values()))
    qk = results.select(lrecs, fix="QK-norm", lr=high_lr)
    glue_all({"ratio": min(vals["none-high"][s] / vals["qk-high"][s] for s in vals["qk-high"]),
              "best": best_lr, "high": high_lr, "bound": bound,
              "qk-learned": f"{sum(map(outcome.learned, qk))} of {len(qk)}",
              "none-outcomes": outcome_counts(results.select(lrecs, fix="no fix", lr=high_lr)),
              "table": md(seed_table(rows, "probe", "{:.3g}"))}, "lg1-")


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
        for r in results.select(lrecs, fix=f, lr=high_lr):
            ax2.plot(*traces.trace(r.history, "log_z"), color=FIX_COLORS[f], lw=1,
                     label=f if r.seed == 0 else None)
    ax1.set(xscale="log", xlabel="learning rate", ylabel="mean log Z (nats)",
            title="at the end, every seed")
    ax2.set(xlabel="step", title=f"lr {high_lr}, every seed")
    ax1.legend(fontsize=7)
    return fig


def glue_zl1(lrecs, best_lr: str, high_lr: str) -> None:
    """Glue ZL-1's log Z at start and end, the share of its distance from 0 the z-loss
    removed (``traces.pull_to_zero``) and the z-loss's cost (``zl-*``)."""
    pulled = traces.pull_to_zero(results.select(lrecs, fix="z-loss"),
                                 results.select(lrecs, fix="no fix"))
    z, none = best_losses(lrecs, fix="z-loss"), best_losses(lrecs, fix="no fix")
    cost = {s: z[s] - none[s] for s in z if s in none}
    vals = {"start (first probe)": per_seed(lrecs, probe("log_z", 0), fix="no fix", lr=best_lr)}
    for lr in (best_lr, high_lr):
        for f in ("no fix", "z-loss"):
            vals[f"{f}, lr {lr}"] = per_seed(lrecs, probe("log_z"), fix=f, lr=lr)
    glue_all({"pull": 100 * median(pulled), "pull-n": len(pulled),
              "pull-range": f"{100 * min(pulled):.1f} to {100 * max(pulled):.1f} %",
              "cost": median(cost.values()),
              "cost-range": f"{min(cost.values()):+.3f} to {max(cost.values()):+.3f}",
              "start": median(vals["start (first probe)"].values()),
              "none": median(vals[f"no fix, lr {high_lr}"].values()),
              "z": median(vals[f"z-loss, lr {high_lr}"].values())}, "zl-")
    vals["z-loss − no fix, best loss (nats)"] = cost
    glue("zl-table", md(seed_table(vals, "mean log Z at the end (nats)", "{:+.3f}")))
    glue("zl-why", evidence.NOT_TESTABLE["ZL-1"])


def ec1(P, lrecs, lr_names, best_lr: str):
    """EC-1 at this scale: how the no-fix runs ended, and where the still-learning runs above
    the best rate part from the learned ones (``traces.separation_step``, no threshold) in
    entropy and loss. Glues ``ec-*``, ``claim-EC-1``, ``status-EC-1``; returns the figure."""
    nofix = results.select(lrecs, fix="no fix")
    verdict = {id(r): outcome.judge(r).verdict for r in nofix}
    failed = [r for r in nofix if verdict[id(r)] in outcome.FAILED]
    learned = [r for r in nofix if verdict[id(r)] == "learned"]
    slow_hi = [r for r in nofix if verdict[id(r)] == "still learning"
               and lr_names.index(r.point["lr"]) > lr_names.index(best_lr)]
    fig, (ax1, ax2) = figure(P, ncols=2, width=9.4, height=3.6, task=lrecs[0].task)
    marks = {"learned": "o", "still learning": "s", "did not learn": "v", "diverged": "x"}
    for r in nofix:
        v = verdict[id(r)]
        ent = traces.trace(r.history, "attn_entropy_min")
        ax1.plot(ent[1][-1], outcome.judge(r).loss, marks[v], color=FIX_COLORS["no fix"],
                 ms=5, alpha=0.8)
        ax2.plot(*ent, color=OUTCOME_COLORS[v], lw=0.6, alpha=0.5)
    ax1.set(xscale="symlog", xlabel="lowest head entropy at the end (nats)",
            ylabel="held-out loss at the end (nats)",
            title="no fix (○ learned, □ still learning, ▼ did not learn)")
    ax2.set(xlabel="step", ylabel="lowest head entropy (nats)", title="no fix: every run, by how it ended")
    shown = [v for v in OUTCOME_COLORS if v in verdict.values()]  # the outcomes present, in the registry's order
    ax2.legend(handles=[matplotlib.lines.Line2D([], [], color=OUTCOME_COLORS[v], label=v) for v in shown],
               fontsize=7)
    ent_every, eval_every = (s[1] - s[0] if len(s) > 1 else None for s in (
        traces.trace(nofix[0].history, "attn_entropy_min")[0], nofix[0].history.eval_step))
    ent_step = traces.separation_step(slow_hi, learned, "attn_entropy_min")
    loss_step = traces.separation_step(learned, slow_hi, "eval_loss")
    lr_of = [r.train_config.lr for r in slow_hi], [r.train_config.lr for r in learned]
    ratio = (f"{min(lr_of[0]) / max(lr_of[1]):.0f} to {max(lr_of[0]) / min(lr_of[1]):.0f}"
             if slow_hi and learned else "—")
    counts = outcome_counts(nofix)
    why = (f"no run without a fix failed (outcome rule: {' or '.join(outcome.FAILED)})"
           if not failed else f"the {len(failed)} failed runs are at other learning rates "
           f"than the {len(learned)} learned ones")
    glue_all({"outcomes": counts, "failed": len(failed), "slow": len(slow_hi),
              "learned": len(learned),
              "learned-lrs": ", ".join(sorted({r.point["lr"] for r in learned})) or "none",
              "ent-step": str(ent_step) if ent_step is not None else "no step",
              "loss-step": str(loss_step) if loss_step is not None else "no step",
              "rate-ratio": ratio, "ent-every": ent_every, "eval-every": eval_every,
              "why": why}, "ec-")
    measured = (f"no fix, {counts} ({len({r.seed for r in nofix})} seeds); runs still "
                f"learning above the best rate ({len(slow_hi)}) against those that learned "
                f"({len(learned)}), at {ratio}× their rates: lowest head entropy apart from "
                f"step {ent_step}, held-out loss (evaluated {eval_every} steps apart, "
                f"entropy {ent_every}) from step {loss_step}")
    glue("claim-EC-1", f"not testable at this scale: {why}; measured: {measured}")
    glue_status("EC-1", "not testable at this scale")
    return fig


def glue_ch14_exercises() -> None:
    """Chapter 15's exercise answers: QK-norm's bound at d_h = 64, what a cap of 50 does to
    a logit of 8, and the z-loss at log Z = 7 against a 5-nat cross-entropy."""
    import torch

    from ..nn.blocks import softcap
    from ..theory import logits

    bound = logits.qk_norm_logit_bound(64)
    glue_all({"bound": bound, "cap": bound - float(softcap(torch.tensor(bound), 50.0)),
              "zloss": 1e-4 * 7.0**2, "zloss-share": 100 * 1e-4 * 7.0**2 / 5.0}, "ex14-")


# ------------------------------------------------- chapter 16: where the norm goes (PL-1)

PLACEMENT_GLUE = {"pre": "pre", "peri-ln": "peri", "output-norm": "out", "post": "post",
                  "sub-ln": "subln", "ln-scaling": "scaled", "dyt": "dyt"}  # scheme: glue name
# The placements sweep's labels (experiments/placements.toml) and their schemes' keys.
PLACEMENT_SCHEMES = {"Pre-LN": "pre", "Peri-LN": "peri-ln", "output norm": "output-norm",
                     "Pre-LN, 1/√ℓ": "ln-scaling", "Sub-LN": "sub-ln", "Post-LN": "post"}


def placements_init(pl: dict, depths, seeds: int) -> dict:
    """From ``norms.placement_diagnostics`` results ``pl[(scheme, N, seed)]``: the stream's
    mean square per layer at the deepest N, its slope per layer (``fit.fit_linear``), 1/√ℓ's
    fit against H_ℓ; glues ``pl1_*``, ``pl1-init-table``; returns {stream, slope, across}."""
    from ..theory import fit

    schemes = sorted({k[0] for k in pl}, key=list(PLACEMENT_GLUE).index)
    deepest = depths[-1]
    layers = np.arange(1, deepest + 1)

    def across(name, key, n):
        return np.array([pl[name, n, s][key] for s in range(seeds)])

    stream = {name: across(name, "stream", deepest).mean(0) for name in schemes}
    slope = {name: fit.fit_linear(layers, v)[0] for name, v in stream.items()}
    rows = []
    for name in schemes:
        change = np.median(across(name, "rel_change", deepest))
        vals = (slope[name], float(stream[name][0]), float(stream[name][-1]),
                float(np.median(across(name, "grad_ratio", deepest))), float(change),
                change / np.median(across(name, "rel_change", depths[0])))
        glue_all(dict(zip(("slope", "first", "last", "grad", "change", "change_growth"), vals)),
                 "pl1_", f"_{PLACEMENT_GLUE[name]}")
        rows.append([LABELS.get(name, name), *(f.format(v) for f, v in zip(
            ("{:.2f}", "{:.2f}", "{:.1f}", "{:.2f}", "{:.1e}", "×{:.1f}"), vals))])
    head = ["placement", "growth per layer", "after layer 1", "at the top",
            "last ÷ first FFN gradient", "output change", "its growth with depth"]
    bound = {n: "bounds it" if slope[n] < 0.5 * slope["pre"] else "does not bound it"
             for n in ("peri-ln", "output-norm", "ln-scaling")}
    both = bound["peri-ln"] == bound["output-norm"] == "does not bound it"
    glue_all({"-init-table": md(md_table(head, rows)), "_depth": deepest,
              "_depth_min": depths[0], "_seeds": seeds,
              "_scaled_over_pre": float(stream["ln-scaling"][-1] / stream["pre"][-1]),
              "_scaled_r2_H": fit.fit_linear(np.cumsum(1 / layers), stream["ln-scaling"])[2],
              "_peri_verdict": bound["peri-ln"], "_out_verdict": bound["output-norm"],
              "_scaled_verdict": bound["ln-scaling"],
              "_outnorms_verdict": "do not bound it" if both else "bound it in part"}, "pl1")
    return {"stream": stream, "slope": slope, "across": across}


def placements_init_figure(P, init: dict, depths, seeds: int):
    """The stream per layer at the deepest N; against N, the last/first FFN gradient and the
    output change under a random 1 % perturbation."""
    fig, (a, b, c) = figure(P, ncols=3, width=9.4, height=3.8)
    layers = np.arange(1, depths[-1] + 1)
    for name, v in init["stream"].items():
        col = color(name)
        a.plot(layers, v, "o-", ms=3, color=col, label=LABELS.get(name, name))
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


DEPTH_GLUE = {"pre": "pre", "deepnorm": "deepnorm", "admin": "admin", "t-fixup": "tfixup",
              "ln-scaling": "scaled", "depth-mup": "mup"}  # scheme: glue name


def depth_scalings(mult: dict, depths) -> dict:
    """Log-log slopes of the last branch's multiplier m_L against N, measured (mean over
    seeds) and derived (``norms.depth_factor``); glues ``ds_*`` and ``ds-table``."""
    from ..theory import fit, norms

    ns = np.array(depths, dtype=float)
    measured = {n: fit.fit_loglog(ns, m.mean(1))[0] for n, m in mult.items() if n != "rezero"}
    derived = {n: fit.fit_loglog(ns, norms.depth_factor(n, ns))[0] for n in measured}
    for name, k in DEPTH_GLUE.items():
        glue_all({f"k_{k}": measured[name], f"kpred_{k}": derived[name]}, "ds_")
    rows = [[LABELS.get(name, name), f"{measured[name]:+.2f}", f"{derived[name]:+.2f}"]
            for name in DEPTH_GLUE]
    glue_all({"-table": md(md_table(["scheme", "measured slope", "derived slope"], rows)),
              "_rezero_max": float(mult["rezero"].max()), "_depth_min": depths[0],
              "_depth_max": depths[-1], "_seeds": next(iter(mult.values())).shape[1]}, "ds")
    return {"measured": measured, "derived": derived}


def depth_scalings_figure(P, mult: dict, depths, slopes: dict):
    from ..theory import norms

    ns = np.array(depths, dtype=float)
    fig, a = figure(P, width=7, height=4.2)
    dense = np.arange(ns[0], ns[-1] + 1)  # every depth: the factors use whole N
    for name in DEPTH_GLUE:
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


def glue_placements_trained(precs, names, lrs) -> None:
    """Glue the placements sweep's size and readings (``pt-*``): each scheme's best rate, top
    stream across the rates and, per seed, as a multiple of Pre-LN's (``pt-ratio-table``)."""
    glue_sizes("pt", precs, "layers:dec", "d:width", "steps", "batch", "seeds")
    top = {(n, lr): per_seed(precs, top_stream, placement=n, lr=lr) for n in names for lr in lrs}
    growths = {n: {s: top[n, lrs[-1]][s] / lo for s, lo in top[n, lrs[0]].items()
                   if s in top[n, lrs[-1]]} for n in names}  # per seed: top stream, hi ÷ lo rate
    bests = {n: best_losses(precs, placement=n) for n in names}
    # each scheme's best rate: the book's one definition (lowest mean end loss over the seeds)
    best = {n: effects.best_rate(precs, placement=n) for n in names}
    rows = {f"{n} ÷ Pre-LN, lr {lr}": {s: v / top["Pre-LN", lr][s] for s, v in top[n, lr].items()
                                      if s in top["Pre-LN", lr]} for n in names[1:] for lr in lrs}
    post_runs = results.select(precs, placement="Post-LN")
    post_top = [top_stream(r) for r in post_runs]
    glue_all({"lrs": ", ".join(lrs), "lr-lo": lrs[0], "lr-hi": lrs[-1],
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
              "pre-hi-outcomes": outcome_counts(
                  results.select(precs, placement="Pre-LN", lr=lrs[-1]))}, "pt-")
    for name, key in (("Peri-LN", "peri"), ("output norm", "out"), ("Pre-LN, 1/√ℓ", "scaled")):
        if name not in best:
            continue
        if key != "scaled":
            glue(f"pt-{key}-rate-ratio", best[name].lr / best["Pre-LN"].lr)
        glue_all({"growth": median(growths[name].values()), "best": median(bests[name].values()),
                  "hi-ratio": median(rows[f"{name} ÷ Pre-LN, lr {lrs[-1]}"].values()),
                  "lo-ratio": median(rows[f"{name} ÷ Pre-LN, lr {lrs[0]}"].values())}, f"pt-{key}-")
    if "Sub-LN" in best:
        glue_all({"growth": median(growths["Sub-LN"].values()),
                  "low": median(rows[f"Sub-LN ÷ Pre-LN, lr {lrs[0]}"].values())}, "pt-subln-")


def placements_trained_figure(P, precs, names, lrs, lr: str):
    """End loss and top stream against the rate; the stream per sub-layer at ``lr``."""
    colors = {label: color(scheme) for label, scheme in PLACEMENT_SCHEMES.items()}
    fig, (a, b, c) = figure(P, ncols=3, width=9.4, height=3.6, task=precs[0].task)
    lr_curves(a, precs, names, axis="placement", colors=colors,
              title="held-out loss at the end")
    a.legend(fontsize=6)
    for name in names:
        seed_lines(b, precs, lrs, top_stream, colors[name], name, dict(lw=1, ms=3), placement=name)
        for r in results.select(precs, placement=name, lr=lr):
            prof = traces.stream_profile(r.history)[1]
            c.plot(np.arange(1, len(prof) + 1), prof, "-", color=colors[name], lw=1)
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


def saturated(row: int):
    """A record's % of units saturated in its most saturated DyT at probe ``row``."""
    return lambda r: 100 * max(r.history.dyt_saturated[row])


def dyt_controls_note(nrecs) -> str:
    """DY-1's two controls at their own best rates (``effects.at_best_rate``): does dropping
    the √d scale rescue DyT, where does no norm end; a best rate at the grid's edge is named."""
    no_sqrt = effects.at_best_rate(nrecs, "norm", "DyT, no √d embedding scale", "DyT", "lower")
    dyt_vs_none = effects.at_best_rate(nrecs, "norm", "DyT", "no norm", "higher")
    none_vs_ln = effects.at_best_rate(nrecs, "norm", "no norm", "LayerNorm", "higher")
    scale = ("is what sinks the default α" if no_sqrt.verdict == "reproduces" else
             "is not shown to be what sinks the default α")
    edge = [g["norm"] for g in effects.unbracketed(nrecs)
            if g.get("norm") in ("DyT, no √d embedding scale", "no norm")]
    caveat = (f" ({' and '.join(edge)}: best rate at the grid's edge, so its best may lie "
              "beyond the grid)" if edge else "")
    ci = lambda e: f"interval {e.low:+.2f} to {e.high:+.2f}"  # noqa: E731
    worse = ("so at this scale the default DyT trains worse than no norm"
             if dyt_vs_none.verdict == "reproduces" else "not resolved against no norm")
    return (f"Without the √d embedding scale, DyT at the default α ends {no_sqrt.mean:+.2f} nats "
            f"against DyT with it ({ci(no_sqrt)}): the scale {scale}{caveat}. A model with no "
            f"norm at all ends {none_vs_ln.mean:+.2f} nats against LayerNorm ({ci(none_vs_ln)}), "
            f"and DyT at the default α ends {dyt_vs_none.mean:+.2f} nats above it "
            f"({ci(dyt_vs_none)}): {worse}.")


def norms_trained(P, nrecs, names, lrs, rn1, dy1, profile: str, load):
    """Glue chapter 17's training half (``nt-*``, ``dy1-*``, ``rn1-*``, claims-page lines):
    every norm's LR sensitivity and best loss, DyT's saturation, the α variants and the
    controls. ``load``: the registry's records. Returns (sweep figure, effects figure)."""
    glue_sizes("nt", nrecs, *SWEEP_SIZES)
    summ = {f: sensitivity.summarize(results.select(nrecs, norm=f)) for f in names}
    best = {f: [v["best"] for v in summ[f]["per_seed"].values()] for f in names}
    rows = [[f, median_range(summ[f]), learned_at(results.select(nrecs, norm=f)),
             fmt(best[f], "{:.3f}")] for f in names]
    head = ["norm", "LR sensitivity, median (range)", "rates learned at, per seed",
            "best held-out loss, per seed"]
    dyt_best, hi = effects.best_rate(nrecs, norm="DyT").variant, lrs[-1]
    sat = {"first probe, best rate": per_seed(nrecs, saturated(0), norm="DyT", lr=dyt_best),
           "end, best rate": per_seed(nrecs, saturated(-1), norm="DyT", lr=dyt_best),
           f"end, lr {hi}": per_seed(nrecs, saturated(-1), norm="DyT", lr=hi)}
    flat_and_high = (summ["DyT"]["median"] < summ["LayerNorm"]["median"]
                     and min(best["DyT"]) > max(best["LayerNorm"]))
    glue_all({"nt-table": md(md_table(head, rows)), "dy1-train-best": dyt_best,
              "dy1-train-hi": hi,
              "dy1-train-sat-first": median(sat["first probe, best rate"].values()),
              "dy1-train-sat": median(sat["end, best rate"].values()),
              "dy1-train-sat-hi": median(sat[f"end, lr {hi}"].values()),
              "dy1-sat-table": md(seed_table(sat, "% saturated, most saturated DyT", "{:.1f}")),
              "dy1-lrs-note": "Its smaller LR sensitivity is the flat curve of a recipe that "
              "ends above LayerNorm at every rate, not a stable one (chapter 12's caveat)."
              if flat_and_high else "Its LR sensitivity can be read as for the other two."})
    alpha_rows, alpha_lines = [], []
    for f in [f for f in names if f.startswith("DyT, α")]:
        b = effects.best_rate(nrecs, norm=f).variant
        s_end = per_seed(nrecs, saturated(-1), norm=f, lr=b)
        alpha_rows.append([f, b, f"{median(best[f]):.3f}", f"{summ[f]['median']:.2f}",
                           fmt(s_end.values(), "{:.1f}")])
        alpha_lines.append(f"{f}: best held-out loss {median(best[f]):.3f} against LayerNorm's "
                           f"{median(best['LayerNorm']):.3f} (medians over seeds); LR sensitivity "
                           f"{summ[f]['median']:.2f} against {summ['LayerNorm']['median']:.2f}; "
                           f"at its best rate {b}, " + fmt(s_end.values(), "{:.1f}")
                           + " % saturated at the end")
        glue_all({"sat": median(s_end.values()), "best": median(best[f])},
                 f"dy1-a{f.split('= ')[-1].replace('.', '')}-")
    controls = [evidence.Comparison(
        "DY-1", f"{v}, at its best rate, ends within 0.05 nats of LayerNorm", "norms",
        "norm", v, "LayerNorm", "equal", own_rate=True, margin=0.05)
        for v in ("DyT, no √d embedding scale", "no norm") if v in names]
    ctrl = [(c, c.effect(nrecs)) for c in controls]
    glue_all({
        "dy1-alpha-table": md(md_table(["variant", "best rate", "best held-out loss (median)",
                                        "LR sensitivity", "% saturated at the end, per seed"],
                                       alpha_rows)),
        "dy1-controls": md(effects_table(ctrl)) if ctrl else md(
            "Not yet recorded: `experiments/norms.toml` holds the controls *DyT, no √d "
            "embedding scale* and *no norm*, queued for a later session."),
        "dy1-controls-note": dyt_controls_note(nrecs) if len(ctrl) == 2 else "",
        "dy1-evidence": md(effects_table(dy1)),
        "rn1-train": evidence.describe("RN-1", profile, load=load),
        "claim-RN-1": evidence.describe("RN-1", profile, load=load),
        "claim-DY-1": evidence.describe("DY-1", profile, load=load),
        "dy1-train": f"{dy1[0][0].says}: {dy1[0][1].describe()}, {dy1[0][1].verdict}",
        "dy1-alpha": "; ".join([f"{c.says}: {e.describe()}, {e.verdict}" for c, e in dy1[1:]]
                               + alpha_lines)})
    glue_effect("rn1", rn1[0][1])
    glue_effect("dy1", dy1[0][1])
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
    pairs = [(c.a, e) for c, e in rn1 + dy1 + ctrl]
    fig2, ax = figure(P, width=9.4, height=0.6 + 0.5 * len(pairs), task=nrecs[0].task)
    effects_plot(ax, [(f"{x} − LayerNorm", e) for x, e in pairs],
                 title="each at its own best rate, paired by seed; grey band: ±0.05 nats",
                 xlabel="difference in best held-out loss (nats)")
    return fig, fig2
