"""Chapters 5–7's figures, tables and verdict words, beside the numbers that
:mod:`tfx.theory.gradients`, :mod:`~tfx.theory.dependency` and :mod:`~tfx.theory.change` compute.
Glue names are the ones ``tfx/book/claims.py`` and the chapters' prose read; do not rename them.
"""
from __future__ import annotations

import numpy as np

from ..theory import change, dependency, fit, gradients
from . import plot
from .notebook import glue, glue_all, glue_figure, interval, md, md_table

# profiling-free Admin, as in every chapter that draws it
FREE_COLOR = plot.color("admin-profiling-free")
SCHEME_NAMES = {"post": "Post-LN", "pre": "Pre-LN", "admin": "Admin (profiled)",
                "admin-profiling-free": "Admin (profiling-free)"}
SCHEME_STYLE = {"post": (plot.color("post"), "v"), "pre": (plot.color("pre"), "s"),
                "admin-profiling-free": (FREE_COLOR, "x"), "admin": (plot.color("admin"), "o")}
PROFILING = {"train": "training mode (the authors')", "eval": "eval mode (dropout off)"}
CHANGE_TITLE = "random δ = 1e-2 × std(W)"


def _holds(ok: bool) -> str:
    return "holds" if ok else "does **not** hold"


# ------------------------------------------------------------- chapter 5: not vanishing
def sublayer_grads_figure(P, grads: dict, depth: int, name="fig-05-sublayer-grads") -> str:
    """Bars of the relative gradient of every sub-layer output, Post-/Pre-LN × encoder/decoder."""
    fig, axes = plot.figure(P, ncols=2, nrows=2, width=10, height=6, sharey=True)
    for row, placement in enumerate(("post", "pre")):
        for col, stack in enumerate(("encoder", "decoder")):
            g, ax = grads[placement][stack], axes[row, col]
            ax.bar(np.arange(1, len(g["relative"]) + 1), g["relative"],
                   color=[plot.SUBLAYER_COLORS[k] for k in g["kinds"]])
            ax.set_yscale("log")
            ax.set(title=f"{placement}-LN {stack}", xlabel="sub-layer i (bottom → top)",
                   ylabel="relative ‖Δx_i‖")
    for kind, c in plot.SUBLAYER_COLORS.items():
        axes[0, 0].bar([0], [np.nan], color=c, label=kind)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=3)
    fig.suptitle(f"Relative gradient norm of every sub-layer output at init "
                 f"({depth}+{depth} layers)")
    return glue_figure(name, fig)


def cross_drop_figure(P, measured, predicted, name="fig-05-cross-drop") -> str:
    fig, ax = plot.figure(P, width=6.5)
    layers = np.arange(1, len(measured) + 1)
    ax.plot(layers, measured, "o-", color=plot.SUBLAYER_COLORS["cross-attn"],
            label="measured ‖Δx_self‖ / ‖Δx_cross‖")
    ax.plot(layers, predicted, "s--", color=plot.GREYS["reference"], mfc="none",
            label="predicted 1/√(1 + Var f_cross)")
    plot.level(ax, "guide", 1)
    ax.set(ylim=(0, 1.2), xlabel="decoder layer l", ylabel="gradient kept across the sub-layer")
    ax.legend(loc="lower right")
    return glue_figure(name, fig)


def glue_encoder_alone(meas: dict) -> tuple[dict, str]:
    """:func:`~tfx.theory.gradients.encoder_summary` of each setting in ``meas`` ({"alone": runs,
    "with a decoder": runs}), the prose's part glued; returns (summaries, table)."""
    out = {k: gradients.encoder_summary(runs) for k, runs in meas.items()}
    read = ("bottom", "attn_v", "attn_g", "common")
    glue_all({k: out["alone"][k] for k in (*read, "pred", "meas")}, "nv_alone_")
    glue_all({k: out["with a decoder"][k] for k in read}, "nv_encdec_")
    glue("nv_alone_seeds", len(meas["alone"]))
    rows = [[f"encoder {k}", f"{s['bottom']:.2f} ({s['bottom_lo']:.2f}–{s['bottom_hi']:.2f})",
             f"{s['pred']:.2f} / {s['meas']:.2f}", f"{s['attn_v']:.2f} / {s['attn_g']:.2f}",
             f"{s['ffn_v']:.2f} / {s['ffn_g']:.2f}", f"{s['common']:.2f}"]
            for k, s in out.items()]
    return out, md_table(["Post-LN", "bottom/top gradient (seed range)",
                          "√∏(1+g)/(1+v): predicted / measured", "attention v / g",
                          "FFN v / g", "common-mode share at the top"], rows)


def encoder_alone_figure(P, meas: dict, name="fig-05-encoder-alone") -> str:
    fig, (a, b) = plot.figure(P, ncols=2, width=10)
    for k, runs in meas.items():
        prof = np.array([r[0] for r in runs])
        c = plot.ENCODER_SETTING_COLORS[k]
        a.plot(np.arange(1, prof.shape[1] + 1), prof.mean(0), "o-", ms=3, color=c,
               label=f"Post-LN encoder {k}")
        for kind, mk in (("self-attn", "o"), ("ffn", "s")):
            b.plot(gradients.branch_gains(runs, "forward_gain", kind).ravel(),
                   gradients.branch_gains(runs, "backward_gain", kind).ravel(), mk, ms=3, color=c,
                   mfc="none" if kind == "ffn" else c, label=f"{kind}, encoder {k}")
    plot.level(a, "guide", 1)
    a.set(xlabel="encoder sub-layer i (bottom → top)", ylabel="‖Δx_i‖ / ‖Δx_top‖",
          title="gradient reaching each sub-layer")
    a.legend(fontsize=8)
    lim = [0, 1.05 * max(b.get_xlim()[1], b.get_ylim()[1])]
    b.plot(lim, lim, "--", color=plot.GREYS["reference"], lw=1, label="g = v: no loss")
    b.set(xlabel="forward gain v_i", ylabel="backward gain g_i", title="each sub-layer's two gains")
    b.legend(fontsize=7)
    return glue_figure(name, fig)


def glue_gv3(sizes: dict, early: dict, window) -> tuple[dict, str]:
    """GV-3's spreads (decades, ``fit.log_spread``) of gradients and updates per optimiser,
    between the checkpoints of ``window`` and over the first step (``early``), and the verdict
    words of :func:`~tfx.theory.gradients.equalises`, glued as ``nv_*``; returns
    ({(optimiser, "grad"|"update"): spread}, table)."""
    v, rows, spread = {}, [], {}
    for opt, s in sizes.items():
        sp = {k: fit.log_spread(s[k]) for k in ("grad", "update", "coord_grad", "coord_update")}
        sp["update_first"] = fit.log_spread(early[opt]["update"])
        eq = "equalises" if gradients.equalises(s) else "does not equalise"
        spread |= {(opt, k): sp[k] for k in ("grad", "update")}
        v[f"gv3_equalises_{opt}"] = md(eq)
        rows.append([opt.upper(), f"{sp['grad']:.1f}", f"{sp['update']:.2f}", f"{sp['update_first']:.2f}",
                     f"{sp['coord_grad']:.1f} / {sp['coord_update']:.1f}", eq])
    glue_all(v | {f"spread_{opt}_{k}": x for (opt, k), x in spread.items()} | {
        "spread_adam_update_first": fit.log_spread(early["adam"]["update"]), "gv3_a": window[0],
        "gv3_b": window[1], "gv3_n": len(sizes["adam"]["names"]),
        "gv3_loss_adam": float(np.mean(sizes["adam"]["loss"][-10:]))}, "nv_")
    return spread, md_table(["optimiser", "gradients", f"updates, steps {window[0]}→{window[1]}",
                             "updates, first step", "per coordinate: gradients / updates",
                             "by the criterion"], rows)


def update_balance_figure(P, sizes: dict, window, name="fig-05-update-balance") -> str:
    fig, axes = plot.figure(P, ncols=2, width=10, sharey=True)
    bins = np.logspace(-4, 0, 33)
    for ax, opt in zip(axes, sizes):
        s = sizes[opt]
        ax.hist(s["grad"] / s["grad"].max(), bins=bins, alpha=0.6, color=plot.GREYS["neutral"],
                label="gradient RMS / max")
        ax.hist(s["update"] / s["update"].max(), bins=bins, alpha=0.6, color=plot.color(opt),
                label=f"update RMS, steps {window[0]}→{window[1]} / max")
        ax.set_xscale("log")
        ax.set_title(f"{opt.upper()}: gradient spread {fit.log_spread(s['grad']):.1f}, "
                     f"update spread {fit.log_spread(s['update']):.2f} decades", fontsize=9)
        ax.set_xlabel("relative size per coordinate (log scale)")
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("weight matrices (attention and FFN)")
    return glue_figure(name, fig)


# GV-2's verdict, caption and failure mode, by the outcome of the hybrid (Post/Pre) and Pre/Pre
GV2_VERDICT = {
    "fails": "**fails without warmup**: with no vanishing gradient, it did not learn where Pre/Pre "
             "trains, so removing the vanishing did not remove the need for warmup",
    "trains": "**trains without warmup**: at this scale fixing the decoder's gradient was enough, "
              "so the run does not reproduce the paper's ordering",
    "neither": "**is inconclusive**: Pre/Pre did not train either in this budget"}
GV2_HEADLINE = {"fails": "removing the vanishing gradient is not what makes a model train",
                "trains": "the hybrid, with no vanishing gradient, trains",
                "neither": "neither the hybrid nor Pre/Pre trains in this budget"}


def glue_gv2(runs: dict, chance: float, task_name: str) -> tuple[dict, str]:
    """GV-2's illustration: each run's outcome (``History.status``) and final held-out loss, and
    the verdict, caption and failure mode read from those outcomes (one seed is chaotic: nothing
    is typed against one machine's run). Returns ({label: learned?}, a Markdown table)."""
    trained = {k: h.status == "learned" for k, h in runs.items()}
    v = {"chance": chance, "task": task_name}
    for label, h in runs.items():
        key = label.lower().replace("/", "_")
        v |= {f"{key}_loss": h.eval_loss[-1], f"{key}_status": md(f"`{h.status}`")}
    case = ("fails" if trained["Pre/Pre"] and not trained["Post/Pre"] else
            "trains" if trained["Post/Pre"] else "neither")
    failing = {k: h.status for k, h in runs.items() if k.startswith("Post/") and h.status != "learned"}
    v |= {"gv2_verdict": md(GV2_VERDICT[case]), "gv2_headline": GV2_HEADLINE[case], "fail_mode": md(
        "Here no Post-LN encoder's run failed." if not failing else
        "At our scale a failing run does not blow up: its loss stalls near chance, and the "
        "rule records it as `did not learn`." if set(failing.values()) == {"did not learn"}
        else "Here " + ", ".join(f"{k} {s}" for k, s in failing.items()) + ".")}
    glue_all(v, "nv_")
    rows = [[label, f"`{h.status}`", f"{h.eval_loss[-1]:.2f}"] for label, h in runs.items()]
    return trained, md_table(["encoder/decoder", "outcome", "held-out loss at the end"], rows)


# ------------------------------------------------------------- chapter 6: amplification
def dependency_figure(P, deps: dict, steps: int, name="fig-06-dependency") -> str:
    fig, axes = plot.figure(P, ncols=2, nrows=2, width=9, height=7.5)
    for r, placement in enumerate(("post", "pre")):
        for c, when in enumerate(("init", "trained")):
            plot.heatmap(axes[r, c], deps[placement, when], vmin=0, vmax=1,
                         title=f"{placement}-LN, "
                               f"{'at init' if when == 'init' else f'after {steps} steps'}",
                         xlabel="branch j (0: embedding)", ylabel="sub-layer output i")
    return glue_figure(name, fig)


def glue_am2(N, sweeps: dict, seeds: dict) -> tuple[dict, str]:
    """AM-2's growth laws (:func:`tfx.theory.change.growth_fits` of ``sweeps`` against depth
    ``N``), glued as ``am_*``: exponents with intervals, the R² of each law's form, Post-/Pre-LN
    ratios, and the verdict words on each law. Returns (the fits, a table of the exponents)."""
    N = np.asarray(N, dtype=float)
    am2 = change.growth_fits(N, sweeps)
    fits, expo, expo_sb, kh = am2["fits"], am2["expo"], am2["expo_sb"], am2["k_harmonic"]
    v = {f"exp_adam_{pl}": fits["adam", pl, "power"][0] for pl in ("post", "pre")} | {
        "ratio_random": float(am2["ratio"]["random"][-1]), "ratio_adam": float(am2["ratio"]["adam"][-1]),
        "ratio_adam_first": float(am2["ratio"]["adam"][0])}
    v |= {f"r2_{kind}_{pl}_{form}": fits[kind, pl, form][2]
          for kind in sweeps for pl, form in (("post", "N"), ("pre", "logN"))}
    for name, e in [*((f"{kind}_{pl}", e) for (kind, pl), e in expo.items()),
                    *((f"sb_{pl}", e) for pl, e in expo_sb.items())]:
        v |= interval(f"k_{name}", e, ("_exponent", "_low", "_high"))
    law = am2["law"]
    met = [f"{pl}-LN" for pl, ok in am2["thm2"].items() if ok]
    missed = [f"{pl}-LN" for pl, ok in am2["thm2"].items() if not ok]
    glue_all(v | {f"law_{kind}_{pl}": md(_holds(ok)) for (kind, pl), ok in law.items()} | {
        "thm2_exp": md("is met for both" if not missed else f"is met for {met[0]} and **not** for "
                       f"{missed[0]}" if met else "is **not** met for either"),
        "depth_min": int(N[0]), "depth_max": int(N[-1]), "seeds_random": seeds["random"],
        "seeds_adam": seeds["adam"], "depths": ", ".join(str(int(n)) for n in N), "k_harmonic": kh}, "am_")
    rows = []
    for kind, what in (("random", "random δ"), ("adam", "one Adam step")):
        for pl, tname in (("post", "1 (O(N))"), ("pre", f"{kh:.2f} (O(log N))")):
            e = expo[kind, pl]
            rows.append([what, f"{pl}-LN", f"{e['exponent']:.2f}", f"{e['low']:.2f} to {e['high']:.2f}",
                         tname, _holds(law[kind, pl]).replace("**", "") if (kind, pl) in law else "—",
                         f"{fits[kind, pl, 'N'][2]:.2f} / {fits[kind, pl, 'logN'][2]:.2f}"])
    return am2, md_table(["perturbation", "model", "exponent", "95 % interval", "the law's",
                          "law", "R² against N / ln N"], rows)


def output_change_figure(P, N, sweeps: dict, fits: dict, lr: float,
                         name="fig-06-output-change") -> str:
    fig, axes = plot.figure(P, ncols=2, width=10)
    for ax, (kind, sw) in zip(axes, sweeps.items()):
        for pl, form in (("post", "N"), ("pre", "logN")):
            y = sw[pl]
            ax.errorbar(N, y.mean(1), yerr=y.std(1) if y.shape[1] > 1 else None, fmt="o",
                        color=plot.color(pl), capsize=2, label=f"{pl}-LN measured")
            k, c0, r2 = fits[kind, pl, form]
            plot.fit_line(ax, N, lambda x, k=k, c0=c0, log=form == "logN": k * (np.log(x) if log else x) + c0,
                          f"fit against {'ln N' if form == 'logN' else 'N'}: R² = {r2:.2f}", color=plot.color(pl))
        ax.set(xlabel="layers N", ylabel="‖F(W) − F(W*)‖² per token")
        ax.set_title(CHANGE_TITLE if kind == "random"
                     else f"one Adam step, lr {lr:g} (log scale)")
        if kind == "adam":
            ax.set_yscale("log")
        ax.legend(fontsize=8)
    return glue_figure(name, fig)


def glue_random_signs(N, aligned: dict, signs: dict) -> dict:
    """AM-2's control for assumption (A2): Adam's first step (``aligned``, an
    ``output_change_sweep``) against the same step sizes with random signs (``signs``): per
    architecture the depth exponent (Post-LN's with its interval) and the paired effect on it,
    aligned minus random (predicted higher), glued as ``am_signs_*``. Returns the effects."""
    from .evidence import depth_growth_effect

    k = {pl: fit.exponent_interval(N, signs[pl]) for pl in ("post", "pre")}
    out, v = {}, interval("signs_k_post", k["post"], ("", "_low", "_high"))
    v["signs_k_pre"] = k["pre"]["exponent"]
    for pl in ("post", "pre"):
        both = {"depths": aligned["depths"], "aligned": aligned[pl], "random signs": signs[pl]}
        e = out[pl] = depth_growth_effect(both, "aligned", "random signs", expect="higher")
        v[f"signs_effect_{pl}"] = f"{e.mean:+.2f} ({e.low:+.2f} to {e.high:+.2f})"
        v[f"signs_verdict_{pl}"] = e.verdict
    glue_all(v | {"signs_seeds": out["post"].n}, "am_")
    return out


def theorem2_figure(P, th: dict, depths, name="fig-06-theorem2") -> str:
    fig, ax = plot.figure(P, width=6)
    for pl, (x, y) in th["points"].items():
        ax.plot(x, y, "o", color=plot.color(pl),
                label=f"{pl}-LN, N = {', '.join(map(str, depths))}")
    xs = np.concatenate([p[0] for p in th["points"].values()])
    plot.fit_line(ax, xs, lambda x: th["slope"] * x + th["intercept"],
                  f"one line for both: R² = {th['r2']:.2f}", color=plot.GREYS["reference"])
    ax.set(xlabel="Σ_i β²_ii (measured)", ylabel="‖ΔF‖² per token, random δ")
    ax.legend(fontsize=8)
    return glue_figure(name, fig)


# ------------------------------------------------------------- chapter 7: Admin
def omega_figure(P, omegas: dict, free: dict, name="fig-07-omega") -> str:
    fig, axes = plot.figure(P, ncols=2, width=10, sharey=True)
    for ax, (stack, om) in zip(axes, omegas.items()):
        ax.bar(np.arange(1, len(om) + 1), om, color=plot.color("admin"), label="profiled ω_i")
        ax.axhline(free[stack], ls="--", color=plot.GREYS["reference"], lw=1,
                   label=f"profiling-free ω = {free[stack]:.2f}")
        ax.set(title=f"{stack}: {len(om)} sub-layers", xlabel="sub-layer i")
        ax.legend(loc="upper left")
    axes[0].set_ylabel("ω_i (mean over the d coordinates)")
    return glue_figure(name, fig)


def glue_admin_law(b2s: dict, law: dict, sigma_err, depth: int) -> dict:
    """AD-1's β²_ii reading (:func:`tfx.theory.dependency.beta_diag_slopes`), glued as ``ad_*``:
    each scheme's slope, Admin's per-seed range, the level and verdict of the law, the
    derivation check (%). Returns the slopes and seed means."""
    r = dependency.beta_diag_slopes(b2s)
    glue_all({f"slope_{s.replace('-', '_')}": k for s, k in r["slope"].items()} | {
        "depth": depth, "seeds": len(b2s["admin"]), "gm": law["level"], "slope_lo": r["slope_lo"],
        "slope_hi": r["slope_hi"], "law": md(_holds(law["holds"])),
        "refined_err": 100 * float(np.max(sigma_err)), "attn_over_ffn": r["attn_over_ffn"]}, "ad_")
    return r


def glue_admin_law_by_depth(laws: dict, seeds: range) -> dict:
    """AD-1's law re-judged on fresh ``seeds`` at every depth (``{N: law}`` of
    :func:`tfx.theory.dependency.admin_law_by_depth`), glued with its table; returns ``{N: holds}``."""
    rows = [(n, f"{law['slope']:.2f}", f"{law['level']:.2f}",
             "holds" if law["holds"] else "does not hold") for n, law in laws.items()]
    held = sum(law["holds"] for law in laws.values())
    glue_all({"ad-law-by-depth": md(md_table(
        ["layers", "slope against i + 1 (law: −1 ± 0.15)", "level (law: 1, within ×1.25)",
         "the law"], rows)), "ad_law_held": f"{held} of {len(laws)}",
        "ad_fresh_seeds": f"{seeds.start}–{seeds.stop - 1}", "ad_fresh_n": len(seeds)})
    return {n: law["holds"] for n, law in laws.items()}


def admin_beta_figure(P, b2: dict, name="fig-07-beta") -> str:
    fig, ax = plot.figure(P, width=7)
    i = np.arange(1, len(b2["admin"]) + 1)
    for s, (c, mk) in SCHEME_STYLE.items():
        ax.loglog(i, b2[s], mk, ms=4, color=c, label=SCHEME_NAMES[s])
    ax.loglog(i, dependency.admin_beta_diag_sq(i), "-", color=plot.GREYS["reference"], lw=1,
              label="1/(i+1): the law, equal variances")
    ax.set(xlabel="sub-layer i", ylabel="β²_ii (held-out batch)")
    ax.legend(fontsize=8)
    return glue_figure(name, fig)


def glue_admin_change(N, sweeps: dict, expo: dict) -> str:
    """AD-1's output change (:func:`tfx.theory.change.admin_change_reading`) and each scheme's
    depth exponent (``expo``: ``fit.exponent_interval`` of the random-δ sweep; Admin's with its
    95 % interval), glued as ``ad_*``. Returns a Markdown table of the exponents."""
    N = np.asarray(N, dtype=float)
    v = {"depth_max": int(N[-1]), "exp_post": expo["post"]["exponent"],
         "exp_pre": expo["pre"]["exponent"]} | interval("exp_admin", expo["admin"])
    rows = []
    for s, e in expo.items():
        last = {k: sweeps[k][s].mean(1)[-1] / sweeps[k]["pre"].mean(1)[-1] for k in sweeps}
        rows.append([SCHEME_NAMES[s], f"{e['exponent']:.2f}", f"{e['low']:.2f} to {e['high']:.2f}",
                     f"{last['random']:.2f}", f"{last['adam']:.2f}"])
    glue_all(v | change.admin_change_reading(sweeps), "ad_")
    return md_table(["scheme", "exponent (random δ)", "95 % interval",
                     f"÷ Pre-LN at N = {int(N[-1])}, random δ", "÷ Pre-LN, one Adam step"], rows)


def admin_change_figure(P, N, sweeps: dict, schemes, lr: float, name="fig-07-output-change"):
    fig, axes = plot.figure(P, ncols=2, width=10)
    for ax, (kind, sw) in zip(axes, sweeps.items()):
        for s in schemes:
            c, mk = SCHEME_STYLE[s]
            ax.plot(N, sw[s].mean(1), mk + "-", color=c, ms=5, label=SCHEME_NAMES[s])
        ax.set_yscale("log")
        ax.set(xlabel="layers N", ylabel="‖F(W) − F(W*)‖² per token")
        ax.set_title(CHANGE_TITLE if kind == "random" else f"one Adam step, lr {lr:g}")
        ax.legend(fontsize=8)
    return glue_figure(name, fig)


def glue_profiling(omega_by: dict, no_dropout: dict, dropout: dict) -> dict:
    """Training- against eval-mode profiling of Admin with ``dropout``
    (:func:`tfx.theory.dependency.profiling_modes`), glued as ``ad_prof_*`` with the verdict words."""
    v = dependency.profiling_modes(omega_by, no_dropout, dropout["dropout"])
    glue_all({k: x for k, x in v.items() if k != "same"} | {
        "p": dropout["dropout"], "p_inner": dropout["attn_dropout"],
        "vs_single": md("more than" if v["ratio_max_encoder"] > v["single"] else "no more than"),
        "eval": md("the same" if v["same"] else "**not** the same")}, "ad_prof_")
    return v


def profiling_figure(P, omega_by: dict, no_dropout: dict, name="fig-07-profiling") -> str:
    from matplotlib.ticker import MaxNLocator

    fig, axes = plot.figure(P, ncols=2, width=10, sharey=True)
    for ax, stack in zip(axes, ("encoder", "decoder")):
        i = np.arange(1, len(no_dropout[stack]) + 1)
        ax.plot(i, omega_by["train"][stack], "o-", color=plot.color("admin"), ms=4,
                label=PROFILING["train"])
        ax.plot(i, omega_by["eval"][stack], "s--", color=plot.GREYS["reference"], ms=4,
                label=PROFILING["eval"])
        ax.plot(i, no_dropout[stack], "x", color=FREE_COLOR, ms=7,
                label="no dropout (either mode)")
        ax.set(title=f"{stack}: {len(i)} sub-layers", xlabel="sub-layer i")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("ω_i (mean over the d coordinates)")
    return glue_figure(name, fig)


def glue_profiling_effect(b2_prof: dict, out_change: dict) -> dict:
    """What training-mode profiling changes at init (:func:`tfx.theory.dependency.profiling_effect`),
    glued as ``ad_prof_*`` with the verdict words on the output change."""
    v = dependency.profiling_effect(b2_prof, out_change)
    ratio = [v["change_random"], v["change_adam"]]
    word = "smaller" if max(ratio) < 1 else "larger" if min(ratio) > 1 else "not uniformly smaller"
    glue_all({k: v[k] for k in ("seeds", "share", "change_random", "change_adam")} | {
        "change_verdict": md(word + (", for every seed" if v["every_seed"] else ""))}, "ad_prof_")
    return v


def profiling_effect_figure(P, b2_prof: dict, out_change: dict, lr: float,
                            name="fig-07-profiling-effect") -> str:
    fig, axes = plot.figure(P, ncols=2, width=10)
    i = np.arange(1, len(b2_prof["train"]) + 1)
    for mode, mk, c in (("train", "o-", plot.color("admin")),
                        ("eval", "s--", plot.GREYS["reference"])):
        axes[0].semilogy(i, b2_prof[mode], mk, color=c, ms=4, label=PROFILING[mode])
    axes[0].semilogy(i, dependency.admin_beta_diag_sq(i), "-", color=FREE_COLOR, lw=1,
                     label="1/(i+1)")
    axes[0].set(xlabel="encoder sub-layer i", ylabel="β²_ii (eval mode)")
    axes[0].legend(fontsize=8)
    x = np.arange(2)
    for k, mode in enumerate(PROFILING):
        means = [out_change[kind][mode].mean() for kind in ("random", "adam")]
        axes[1].bar(x + (k - 0.5) * 0.38, means, 0.38,
                    color=plot.color("admin") if mode == "train" else plot.GREYS["guide"],
                    label=PROFILING[mode])
        for j, kind in enumerate(("random", "adam")):
            vals = out_change[kind][mode]
            axes[1].plot(np.full(len(vals), j + (k - 0.5) * 0.38), vals, "k.", ms=4)
    axes[1].set_xticks(x, [CHANGE_TITLE, f"one Adam step, lr {lr:g}"])
    axes[1].set_ylabel("‖F(W) − F(W*)‖² per token (encoder)")
    axes[1].legend(fontsize=8)
    return glue_figure(name, fig)


# AD-3's comparisons chapter 7 reads, by glue key: (part, experiment, a, b)
AD3_READ = {"post_pre": ("failure", "lr-sensitivity", "Post-LN", "Pre-LN"),
            "post_admin": ("failure", "lr-sensitivity", "Post-LN", "Admin"),
            "admin_pre": ("quality", "lr-sensitivity", "Admin", "Pre-LN"),
            "admin_pre_mt": ("quality", "translation", "Admin", "Pre-LN")}


def glue_admin_in_training(profile: str = "book") -> dict:
    """AD-3's comparisons of chapter 12's records (:mod:`tfx.book.evidence`, deep, with warmup,
    each architecture at its own best rate, end loss) named in :data:`AD3_READ`, glued as
    ``ad_train_*`` with the claims page's verdicts, the share of Post-LN's gap Admin closes and
    the depth. Returns ``{key: (Effect, verdict)}``."""
    from . import evidence
    from .tables import effect_text

    got, v = {}, {}
    for key, read in AD3_READ.items():
        hits = [c for c in evidence.BY_CLAIM["AD-3"] if (c.part, c.experiment, c.a, c.b) == read
                and c.own_rate and not c.contrast and c.measure == "end loss"]
        if len(hits) != 1:
            raise LookupError(f"AD-3 registers {len(hits)} comparisons {read}")
        recs = evidence.records(read[1], profile)
        e = hits[0].effect(recs)
        got[key] = (e, hits[0].verdict(recs, e))
        v |= {key: effect_text(e), f"{key}_verdict": got[key][1]}
        if key == "post_pre":  # the depth of the runs compared
            cfg = hits[0].runs(recs)[0].config
    glue_all(v | {"closed": got["post_admin"][0].mean / got["post_pre"][0].mean,
                  "depth": f"{cfg.n_enc}+{cfg.n_dec}"}, "ad_train_")
    return got
