"""How much does each sub-layer's output depend on each residual branch? (AM-1, AD-1)

Liu et al. 2020's layer dependency β_{i,j}: the share of branch j (0: the embedding)
in the normalised output x_i of sub-layer i. Post-LN puts the mass on the newest
branch (β_{i,i} near 1), Pre-LN spreads it (β²_{i,i} = 1/i), and Admin's shortcut
scale ω buys Pre-LN's profile for a Post-LN network. :func:`layer_dependency`
measures β in any tfx model; :func:`admin_beta_diag_sq` is the 1/i it is compared
with; :func:`effective_depth` sums the diagonal (how many sub-layers' worth of full
influence a stack uses); :func:`admin_omegas` reads Admin's ω back. How β sets the output change is
:mod:`tfx.theory.change`.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..nn.hooks import loss_on, mode, record_branches, sublayer_labels
from ..nn.config import SUM_NORM


# ----------------------------------------------------------------- AD-1: predicted
def admin_beta_diag_sq(i, embedding: bool = True) -> float:
    """β²_{i,i} after Admin initialisation with equal variances (AD-1; Liu et al. §4.3).

    Admin uses ``x_i = LN(x_{i-1} ⊙ ω_i + f_i(x_{i-1}))`` with ω set so that the shortcut
    carries the variance of everything below: ω_i² Var[x_{i-1}] = Σ_{j<i} Var[f_j], the
    embedding x_0 counted as piece j = 0 (its own variance: ω_1 = 1, as the authors' running
    ratio starts at 1; for i ≥ 2, x_{i-1} is a LayerNorm output of unit variance). Then
    β²_{i,i} = Var f_i / Σ_{j≤i} Var f_j, and with i + 1 equal pieces that is **1/(i + 1)** in
    the book's numbering (``embedding=True``, the default). The paper writes 1/i because it
    numbers the embedding as branch 1 (``embedding=False``): the same law, shifted by one."""
    shift = 1.0 if embedding else 0.0
    return 1.0 / (np.asarray(i, dtype=float) + shift) if np.ndim(i) else 1.0 / (float(i) + shift)


# The AD-1 criteria, fixed in issue 28 before the book profile was re-run: Admin's measured
# β²_{i,i} follows the equal-variance law 1/(i + 1) when the log-log slope of β²_{i,i} against
# i + 1 is −1 within ±ADMIN_SLOPE_MARGIN and the geometric mean of (i + 1)·β²_{i,i} is within a
# factor ADMIN_LEVEL_FACTOR of 1. (Post-LN's β²_{i,i} is flat, slope ≈ 0; Pre-LN's has slope ≈ −1.)
ADMIN_SLOPE_MARGIN = 0.15
ADMIN_LEVEL_FACTOR = 1.25


def admin_law(beta_diag_sq) -> dict:
    """How far a measured β²_{i,i} (i = 1 … L) is from Admin's equal-variance law 1/(i + 1):
    ``{"slope", "level", "holds"}`` with ``slope`` the log-log slope against i + 1 (law: −1),
    ``level`` the geometric mean of (i + 1)·β²_{i,i} (law: 1), ``holds`` both within the
    margins above."""
    b2 = np.asarray(beta_diag_sq, dtype=float)
    i1 = np.arange(2, b2.size + 2, dtype=float)
    slope = float(np.polyfit(np.log(i1), np.log(b2), 1)[0])
    level = float(np.exp(np.mean(np.log(i1 * b2))))
    holds = abs(slope + 1) <= ADMIN_SLOPE_MARGIN and 1 / ADMIN_LEVEL_FACTOR <= level <= ADMIN_LEVEL_FACTOR
    return {"slope": slope, "level": level, "holds": bool(holds)}


def admin_law_by_depth(task, depths, batch, held_out, seeds: int = 5, first_seed: int = 0,
                       **model_kw) -> dict:
    """:func:`admin_law` of Admin's encoder at each depth: ``{N: law}``, with β²_{i,i} measured on
    ``held_out`` (mean over seeds ``first_seed`` … ``first_seed + seeds − 1``) after profiling on
    ``batch``. The law's margins were set after a pilot at one depth (chapter 7 says so), so
    the book re-judges them on fresh seeds at every depth it reports."""
    from ..nn.model import build_scheme

    out = {}
    for n in depths:
        b2 = []
        for seed in range(first_seed, first_seed + seeds):
            m = build_scheme("admin", task, n, 0, batch=batch, seed=seed, **model_kw)
            b2.append(np.diag(layer_dependency(m, held_out)["encoder"]["beta"])[1:] ** 2)
        out[n] = admin_law(np.mean(b2, axis=0))
    return out


# ----------------------------------------------------------------- AM-1: measured
@torch.no_grad()
def layer_dependency(model, batch) -> dict:
    """AM-1: the layer dependency β_{i,j} of Liu et al. 2020, §4.1, for every stack.

    Write the stream as a sum of unit-variance pieces, x_i ≈ Σ_{j≤i} c_{i,j} â_j, with
    â_0 = x_0/std(x_0) (the embedding) and â_j = a_j/std(a_j) (branch j). Then
    β_{i,j} = c_{i,j} / std(x_i). The coefficients follow the variances through one
    forward pass (``record_branches``): a Pre-LN sub-layer x_i = x_{i-1} + a_i keeps
    c_{i-1,j} and appends std(a_i); a Post-LN / Admin / DeepNorm sub-layer
    x_i = LN(g·x_{i-1} + a_i) multiplies the old coefficients by g·s and the new one
    by s, where s = std(x_i)/std(g·x_{i-1} + a_i) is what the LayerNorm did to the
    scale (g = 1, ω or α). Standard deviations are scalars over the whole batch tensor;
    the bookkeeping treats LN as a scalar rescaling, the paper's approximation.

    The bookkeeping alone cannot fail: it makes Σ_j β²_{i,j} = 1 whenever the pieces are
    uncorrelated, whatever LayerNorm does. What checks it is ``residual``: the tensors
    themselves, x̂_i = x_i/std(x_i) against the mix Σ_j β_{i,j} â_j of the recorded pieces,
    ‖x̂_i − Σ_j β_{i,j} â_j‖² / ‖x̂_i‖² per row i (0 when x̂_i *is* that mix, as in Pre-LN, where
    the stream is a plain sum; in Post-LN it measures how far the per-token centring and
    normalisation are from a scalar rescaling).

    Returns ``{stack: {"beta", "names", "kinds", "layer", "branch_var", "input_var",
    "residual"}}`` (Var a_i per sub-layer and Var x_0, scalars over the batch tensor); ``beta``
    is (L+1)×(L+1), row i = x_i, column j = branch j (0: the embedding), NaN above
    the diagonal. Pre-LN at init: β_{i,j} ≈ 1/sqrt(i+1); Post-LN: mass on j = i."""
    with mode(model), record_branches(model) as rec:
        loss_on(model, batch)
    out = {}
    for s, records in rec.items():
        mods = dict(model.stacks()[s].residuals())
        L = len(records)
        beta = np.full((L + 1, L + 1), np.nan)
        beta[0, 0] = 1.0
        c = [float(records[0]["x"].std())]
        pieces = [records[0]["x"] / records[0]["x"].std()]  # â_0, â_1, … (unit variance)
        residual = [0.0]
        var_f = []
        for i, r in enumerate(records, start=1):
            res, x, f = mods[r["name"]], r["x"], r["f"]
            vf = float(f.var())
            var_f.append(vf)
            p = res.placement
            if p not in SUM_NORM and p != "rezero":  # additive: x + f (f includes any branch norms)
                g, h, x_out = 1.0, 1.0, x + f
            elif p == "rezero":
                g, h = 1.0, float(res.alpha)
                x_out = x + h * f
            else:  # SUM_NORM (post, admin, deepnorm): LN(g·x + f)
                gx = x * res.omega if p == "admin" else (res.alpha * x if p == "deepnorm" else x)
                z = gx + f
                x_out = res.norm(z)
                ln_scale = float(x_out.std() / z.std())
                g, h = float(gx.std() / x.std()) * ln_scale, ln_scale
            c = [g * cj for cj in c] + [h * math.sqrt(vf)]
            beta[i, : i + 1] = np.array(c) / float(x_out.std())
            pieces.append(f / f.std())
            x_hat = x_out / x_out.std()
            mix = sum(float(b) * a for b, a in zip(beta[i, : i + 1], pieces))
            residual.append(float((x_hat - mix).double().pow(2).sum() / x_hat.double().pow(2).sum()))
        out[s] = {"beta": beta, **sublayer_labels([r["name"] for r in records]), "branch_var": np.array(var_f),
                  "input_var": float(records[0]["x"].var()), "residual": np.array(residual)}
    return out


def effective_depth(model, batch) -> dict:
    """Σ_{i≥1} β²_{i,i} per stack: ``{stack: float}``, from :func:`layer_dependency`.

    β²_{i,i} is sub-layer i's share of its own output, so the sum counts how many
    sub-layers' worth of full influence the stack uses; it is also the depth factor of
    Liu et al. 2020's Theorem 2 (the output change ≈ C·Σ β²_{i,i}). At initialisation
    Pre-LN's grows like Σ 1/(i+1) ≈ ln L; Post-LN's in proportion to L (each sub-layer's
    own branch keeps about half of its output). Liu et al. (§4.2, Fig. 8)
    argue that a light dependency (Pre-LN) limits what training can make of a deep
    stack, and that Admin starts light and ends heavier."""
    return {s: float(np.nansum(np.diag(d["beta"])[1:] ** 2)) for s, d in layer_dependency(model, batch).items()}


def admin_omegas(model) -> dict:
    """AD-1: Admin's ω per sub-layer, ``{stack: array}`` of each ω vector's mean (the
    vector is constant at initialisation); NaN for sub-layers without ω."""
    return {s: np.array([float(m.omega.detach().mean()) if hasattr(m, "omega") else np.nan
                          for _, m in model.stacks()[s].residuals()]) for s in model.stacks()}



# ----------------------------------------------------------------- AM-1 and AD-1, read off
def last_row_reading(deps: dict, residual: dict, L: int = 12) -> dict:
    """AM-1: the last row (sub-layer ``L``) of :func:`layer_dependency`'s β at init
    (``deps[placement, "init"]``): Pre-LN's spread over the branches (``pre_row_cv``,
    ``pre_row_mean`` against ``uniform`` = 1/√(L+1)), the mass on the two newest branches and on
    the embedding per placement, the decomposition residuals (``resid_*``), and the mean
    diagonal β_{i,i} of every ``deps`` entry (``diag_<placement>_<when>``)."""
    pre0, post0 = deps["pre", "init"], deps["post", "init"]
    row = pre0[L, 1:]
    return {
        "pre_row_cv": float(row.std() / row.mean()), "pre_row_mean": float(row.mean()),
        "uniform": float(1 / np.sqrt(L + 1)),
        "post_last_two": float(np.hypot(post0[L, L], post0[L, L - 1])),
        "pre_last_two": float(np.hypot(pre0[L, L], pre0[L, L - 1])),
        "post_emb": float(post0[L, 0]), "pre_emb": float(pre0[L, 0]),
        "resid_post": float(residual["post"].max()),
        "resid_post_top": float(residual["post"][L // 2:].max()),
        "resid_pre": float(residual["pre"].max()),
        **{f"diag_{pl}_{when}": float(np.mean(np.diag(m)[1:])) for (pl, when), m in deps.items()}}


def beta_diag_slopes(b2s: dict) -> dict:
    """AD-1: ``b2s`` is {scheme: β²_{i,i} per seed (rows)}. The seed means (``b2``), the log-log
    slope of each against i + 1 (``slope``), the range of Admin's per-seed :func:`admin_law`
    slopes (``slope_lo``, ``slope_hi``), and how much an attention sub-layer's β² (odd i)
    exceeds the FFN's after it (even i), as a ratio of geometric means (``attn_over_ffn``)."""
    from .fit import fit_loglog, geo_mean

    b2 = {s: np.mean(r, axis=0) for s, r in b2s.items()}
    i = np.arange(1, len(b2["admin"]) + 1)
    per_seed = np.array([admin_law(r)["slope"] for r in b2s["admin"]])
    return {"b2": b2, "slope": {s: fit_loglog(i + 1, b2[s])[0] for s in b2},
            "slope_lo": float(per_seed.min()), "slope_hi": float(per_seed.max()),
            "attn_over_ffn": geo_mean(b2["admin"][0::2][1:]) / geo_mean(b2["admin"][1::2][1:])}


def profiling_modes(omega_by: dict, no_dropout: dict, dropout: float) -> dict:
    """Admin's ω profiled in training mode against eval mode (``omega_by[mode][stack]``), with
    dropout ``dropout``: per stack the top ω of each mode, the largest train/eval ratio over
    sub-layers i ≥ 2 and where (``ratio_argmax_<stack>``, counting from 1); a single dropout's factor (1 − p)^(−1/2) (``single``); and whether eval mode gives the
    dropout-free ω (``same``)."""
    v = {"same": all(np.allclose(omega_by["eval"][s], no_dropout[s]) for s in no_dropout),
         "single": (1 - dropout) ** -0.5}
    for stack in ("encoder", "decoder"):
        tr, ev = omega_by["train"][stack], omega_by["eval"][stack]
        ratio = tr[1:] / ev[1:]
        v |= {f"top_train_{stack}": float(tr[-1]), f"top_eval_{stack}": float(ev[-1]),
              f"ratio_max_{stack}": float(np.max(ratio)),
              f"ratio_argmax_{stack}": int(np.argmax(ratio)) + 2}
    return v


def profiling_effect(b2_prof: dict, out_change: dict) -> dict:
    """What training-mode profiling changes at init, training mode / eval mode: the geometric
    mean ratio of β²_{i,i} over sub-layers i ≥ 2 (``share``), the ratio of the mean output
    change per perturbation kind (``change_<kind>``), whether every seed's change is smaller
    (``every_seed``), and the seeds."""
    from .fit import geo_mean

    return {"seeds": len(next(iter(out_change.values()))["train"]),
            "share": geo_mean(b2_prof["train"][1:] / b2_prof["eval"][1:]),
            **{f"change_{k}": float(v["train"].mean() / v["eval"].mean()) for k, v in out_change.items()},
            "every_seed": all((v["train"] < v["eval"]).all() for v in out_change.values())}


def effective_depth_means(ed_runs) -> dict:
    """``{(architecture, stack): (mean at init, mean trained)}`` over the seeds of ``ed_runs``
    (``{(architecture, seed): (before, after)}``, each ``{stack: Σ β²_ii}`` of
    :func:`effective_depth`)."""
    seeds = sorted({s for _, s in ed_runs})
    return {(a, st): tuple(float(np.mean([ed_runs[a, s][k][st] for s in seeds])) for k in (0, 1))
            for a in dict.fromkeys(a for a, _ in ed_runs) for st in ("encoder", "decoder")}
