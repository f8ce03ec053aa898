"""How should the residual be scaled with depth? ReZero, DeepNorm, and the init-time
diagnostics that compare every fix by initialisation.

Two answers at the extremes of the book's chapter 10:

  rezero    x_i = x_{i-1} + α_i f_i(x_{i-1}), α_i = 0      Bachlechner et al. 2021
            → the network is the identity at initialisation (claim RZ-1)
  deepnorm  x_i = LN(α x_{i-1} + f_i(x_{i-1})), value/output/FFN weights × β
            → α, β set from the depth so the model update stays bounded (DN-1, the
              book's own id: DeepNorm is not in the claims table)   Wang et al. 2022

``init_diagnostics(scheme, depth, task, batch)`` measures, for one fresh
encoder–decoder, what chapters 5–7 measure for Post-LN, Pre-LN and Admin: the output
change under a small perturbation (AM-2), the per-sub-layer gradient profile (GV-1)
and the layer dependency β_{i,j} (AM-1). It returns plain numbers and arrays, and
``tfx.book.widgets.init_diagnostics_explorer`` shows them, so the explorer can precompute every state.
Measurements come from :mod:`tfx.theory.change`, :mod:`tfx.theory.gradients` and :mod:`tfx.theory.dependency`;
DeepNorm's α and β from :mod:`tfx.nn.constants`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import sympy as sp
import torch

from ..nn.config import SCHEMES
from ..nn.constants import deepnorm_constants
from ..nn.hooks import mode
from ..nn.model import build_scheme
from .change import output_change, perturbation_seed, stack_output
from .dependency import layer_dependency
from .gradients import sublayer_grad_norms

# The schemes compared are keys of tfx.nn.config.SCHEMES ("post" is the plain Post-LN Transformer
# with Xavier init; Lipschitz init is defined for Xu et al.'s v1 order, which is Post-LN; T-Fixup
# drops the LayerNorms), built by tfx.nn.model.build_scheme.


# ----------------------------------------------------------------- ReZero (RZ-1)
@torch.no_grad()
def identity_gap(model, batch) -> dict:
    """RZ-1: how far each stack is from the identity map, ``{stack: max |F(x_0) − x_0|}``
    on ``batch``, with x_0 the stack's input (its embedding) and F(x_0) its output.

    ReZero at initialisation: every α_i = 0, so x_i = x_{i-1} + 0·f_i(x_{i-1}) = x_{i-1}
    and the gap is exactly 0, whatever the weights (Bachlechner et al. 2021)."""
    b = batch.to(next(model.parameters()).device)
    out = {}
    with mode(model):
        if "encoder" in model.stacks():
            out["encoder"] = float((model.encode(b.src) - model.src_embed(b.src)).abs().max())
        if "decoder" in model.stacks():
            tgt_in = b.tgt[:, :-1]
            memory = model.encode(b.src) if "encoder" in model.stacks() else None
            y = model.decode(tgt_in, memory, b.src if memory is not None else None)
            out["decoder"] = float((y - model.tgt_embed(tgt_in)).abs().max())
    return out


# ----------------------------------------------------------------- DeepNorm (DN-1)
# α and β themselves (both conventions) are tfx.nn.constants.deepnorm_constants.
def deepnorm_update_sum(n_sublayers, alpha, beta):
    """The depth factor of DeepNorm's update bound with v = w = β (value and output
    weights, or FFN fc1 and fc2, both scaled by β):

        ‖ΔF‖ ≲ η ‖∂L/∂F‖ Σ_{i=1}^{L} (v_i² + w_i²)/α² = η ‖∂L/∂F‖ · L · 2β²/α².

    Post-LN (α = β = 1) gives 2L, growing with depth; DeepNorm's constants make it 1."""
    return n_sublayers * 2 * np.asarray(beta, dtype=float) ** 2 / np.asarray(alpha, dtype=float) ** 2


def deepnorm_balance(alpha, beta):
    """2 α² β² = α²(v² + w²): 1 for every (α, β) pair of the DeepNet paper (to 2 digits
    for its encoder–decoder encoder, 0.993), 1.74 for torchscale's encoder pair."""
    return 2 * np.asarray(alpha, dtype=float) ** 2 * np.asarray(beta, dtype=float) ** 2


class DeepNormDerivation(NamedTuple):
    alpha: sp.Expr  # in terms of L, the number of residual sub-layers
    beta: sp.Expr
    encoder_only: tuple  # (α, β) with L = 2N
    decoder_of_encdec: tuple  # (α, β) with L = 3M
    checks: dict  # name -> bool


def derive_deepnorm() -> DeepNormDerivation:
    """Solve the two equations the DeepNet constants satisfy, for α, β > 0:

        L · 2β²/α² = 1   (the update bound does not grow with the L sub-layers)
        2 α² β²    = 1   (the balance every published pair satisfies)

    → α = L^{1/4}, β = (4L)^{−1/4}; L = 2N gives the encoder-only pair
    ((2N)^{1/4}, (8N)^{−1/4}), L = 3M the decoder pair of an encoder–decoder."""
    L, N, M, a, b = sp.symbols("L N M alpha beta", positive=True)
    sol = sp.solve([sp.Eq(L * 2 * b**2 / a**2, 1), sp.Eq(2 * a**2 * b**2, 1)], [a, b], dict=True)
    if len(sol) != 1:
        raise RuntimeError(f"expected one positive solution, got {sol}")
    alpha, beta = sp.simplify(sol[0][a]), sp.simplify(sol[0][b])
    enc = (sp.simplify(alpha.subs(L, 2 * N)), sp.simplify(beta.subs(L, 2 * N)))
    dec = (sp.simplify(alpha.subs(L, 3 * M)), sp.simplify(beta.subs(L, 3 * M)))
    checks = {
        "encoder-only α = (2N)^(1/4)": sp.simplify(enc[0] - (2 * N) ** sp.Rational(1, 4)) == 0,
        "encoder-only β = (8N)^(-1/4)": sp.simplify(enc[1] - (8 * N) ** sp.Rational(-1, 4)) == 0,
        "decoder α = (3M)^(1/4)": sp.simplify(dec[0] - (3 * M) ** sp.Rational(1, 4)) == 0,
        "decoder β = (12M)^(-1/4)": sp.simplify(dec[1] - (12 * M) ** sp.Rational(-1, 4)) == 0,
    }
    return DeepNormDerivation(alpha, beta, enc, dec, checks)


@torch.no_grad()
def use_deepnorm_convention_(model, convention: str):
    """Give a DeepNorm-initialised encoder–decoder (tfx builds the ``"paper"`` β) the
    encoder β of ``convention``, in place: the encoder's v_proj, out_proj, fc1 and fc2
    are multiplied by β_convention / β_paper, exactly the weights a Xavier draw with gain
    β_convention would have given from the same random numbers. Returns the model."""
    from ..nn.init import value_output_ffn

    cfg = model.cfg
    if cfg.enc_placement != "deepnorm" or cfg.init != "deepnorm":
        raise ValueError("use_deepnorm_convention_ needs a model built with placement='deepnorm', init='deepnorm'")
    new = deepnorm_constants(cfg.n_enc, cfg.n_dec, convention)
    old = deepnorm_constants(cfg.n_enc, cfg.n_dec, "paper")
    if "encoder" in old:
        ratio = new["encoder"]["beta"] / old["encoder"]["beta"]
        for w in value_output_ffn(model.encoder):
            w.mul_(ratio)
    return model


# ----------------------------------------------------------------- init-time diagnostics
@dataclass
class InitDiagnostics:
    """What one fresh model looks like at initialisation (one seed).

    ``out_change`` / ``out_change_adam``: ‖F(W) − F(W*)‖² per token of the encoder's
    output under a random δ (1e-2 × each matrix's std) / one Adam step (``tfx.theory.change.output_change``);
    ``rel_*``: the same divided by E‖F‖² (so that schemes without a final LayerNorm,
    whose ‖F‖² is not d, compare fairly); ``beta``: the encoder's β_{i,j}
    (``tfx.theory.dependency.layer_dependency``, row i = x_i, column 0 = the embedding);
    ``grad``: relative ‖∂L/∂x_i‖ per sub-layer, ``{stack: array}`` bottom first, divided by
    the largest in the model (``tfx.theory.gradients.sublayer_grad_norms``); ``kinds``: sub-layer kinds
    per stack; ``identity_gap``: max |F(x_0) − x_0| per stack (0: the identity map)."""

    scheme: str
    depth: int
    seed: int
    out_change: float
    out_change_adam: float
    out_norm_sq: float
    beta: np.ndarray = field(repr=False)
    grad: dict = field(repr=False)
    kinds: dict = field(repr=False)
    identity_gap: dict = field(default_factory=dict)

    @property
    def rel_out_change(self) -> float:
        return self.out_change / self.out_norm_sq

    @property
    def rel_out_change_adam(self) -> float:
        return self.out_change_adam / self.out_norm_sq

    @property
    def sum_beta_diag_sq(self) -> float:
        """Σ_i β²_{i,i} over the encoder's sub-layers: Theorem 2's factor (AM-2)."""
        return float(np.nansum(np.diag(self.beta)[1:] ** 2))

    @property
    def grad_spread(self) -> dict:
        """{stack: bottom / top of the relative gradient profile} (1: flat; ≪ 1: vanishing)."""
        return {s: float(g[0] / g[-1]) if g[-1] > 0 else float("nan") for s, g in self.grad.items()}


def init_diagnostics(scheme: str, depth: int, task, batch, seed: int = 0, n_dec: int | None = None,
                     scale: float = 1e-2, lr: float = 1e-5, **model_kw) -> InitDiagnostics:
    """The init-time diagnostics of one fresh ``scheme`` encoder–decoder with ``depth``
    encoder and ``n_dec`` (default ``depth``) decoder layers, on ``batch`` (which is also
    Admin's profiling batch): output change (random δ of ``scale`` × std, and one Adam
    step at ``lr``), the encoder's β_{i,j}, the per-sub-layer gradient profile and the
    distance from the identity map. ``scheme``: a key of :data:`tfx.nn.config.SCHEMES`. Sizes
    from ``model_kw`` (e.g. ``P.model_kwargs()``)."""
    m = build_scheme(scheme, task, depth, depth if n_dec is None else n_dec, batch=batch, seed=seed, **model_kw)
    with torch.no_grad():
        m.eval()
        out_norm_sq = float(stack_output(m, batch).pow(2).sum(-1).mean())
    g = sublayer_grad_norms(m, batch)
    return InitDiagnostics(
        scheme=scheme, depth=depth, seed=seed,
        out_change=output_change(m, batch, "random", scale=scale, seed=perturbation_seed(seed)),
        out_change_adam=output_change(m, batch, "adam", lr=lr),
        out_norm_sq=out_norm_sq,
        beta=layer_dependency(m, batch)["encoder"]["beta"],
        grad={s: r["relative"] for s, r in g.items()},
        kinds={s: r["kinds"] for s, r in g.items()},
        identity_gap=identity_gap(m, batch),
    )


def init_diagnostics_grid(schemes, depths, task, batch, seeds: int = 1, **kw) -> dict:
    """``{(scheme, depth): [InitDiagnostics for seed 0 … seeds−1]}`` for every scheme and
    depth: the data behind the chapter's figures and every state of its explorer."""
    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown:
        raise ValueError(f"schemes {unknown} are not schemes; choose from: {', '.join(SCHEMES)}")
    return {(s, n): [init_diagnostics(s, n, task, batch, seed=k, **kw) for k in range(seeds)]
            for s in schemes for n in depths}


def grid_mean(grid: dict, scheme: str, attr: str) -> tuple:
    """(depths, mean of ``attr`` over seeds) for one scheme of an ``init_diagnostics_grid``."""
    depths = sorted(n for s, n in grid if s == scheme)
    return np.array(depths), np.array([np.mean([getattr(d, attr) for d in grid[scheme, n]]) for n in depths])


__all__ = ["identity_gap",
           "deepnorm_update_sum", "deepnorm_balance",
           "derive_deepnorm", "use_deepnorm_convention_", "InitDiagnostics", "init_diagnostics",
           "init_diagnostics_grid", "grid_mean"]


def stream_drift(model, batch, stack: str = "encoder"):
    """‖x_i − x_0‖ / ‖x_0‖ for the stream leaving each sub-layer of ``stack`` (the last one: the
    stack's output), averaged over tokens: how far the stream is from its input."""
    from ..nn import hooks

    with torch.no_grad():
        with hooks.record_branches(model) as rec:
            model.eval()
            model.loss(batch)
        r = rec[stack]
        x0 = r[0]["x"]
        outs = [r[k + 1]["x"] for k in range(len(r) - 1)] + [model.encoder(model.src_embed(batch.src))]
        return np.array([float(((o - x0).norm(dim=-1) / x0.norm(dim=-1)).mean()) for o in outs])


def deepnorm_conventions(pairs) -> list[dict]:
    """DeepNorm's α, κ (the code's ``beta``) and balance 2α²κ² under the paper's and
    torchscale's conventions (:func:`tfx.nn.constants.deepnorm_constants`), one row per stack
    of each ``(N, M)`` of ``pairs``: N, M, stack, alpha, kappa_paper, kappa_torchscale,
    balance_paper, balance_torchscale."""
    from ..nn.constants import DEEPNORM_CONVENTIONS

    rows = []
    for N, M in pairs:
        c = {conv: deepnorm_constants(N, M, conv) for conv in DEEPNORM_CONVENTIONS}
        for stack in c["paper"]:
            a, kp, kt = c["paper"][stack]["alpha"], c["paper"][stack]["beta"], c["torchscale"][stack]["beta"]
            rows.append({"N": N, "M": M, "stack": stack, "alpha": a, "kappa_paper": kp,
                         "kappa_torchscale": kt, "balance_paper": float(deepnorm_balance(a, kp)),
                         "balance_torchscale": float(deepnorm_balance(a, kt))})
    return rows


def diagnostics_summary(grid: dict, schemes, depths) -> dict:
    """An :func:`init_diagnostics_grid` at its largest depth in numbers: per scheme (``-`` as
    ``_``) Σβ²_ii and the decoder's gradient spread (``<scheme>_sb``, ``_dec``); Post-LN's and
    Pre-LN's Adam change over DeepNorm's (``post_over_dn``, ``pre_over_dn``); DeepNorm's and
    Post-LN's random-δ change at the largest depth over the smallest (``dn_random_growth``,
    ``post_random_growth``) and whether it ``falls`` or ``grows`` (``dn_trend``,
    ``post_trend``); ``depth``, ``depth_min``. ``schemes`` must hold post, pre and deepnorm."""
    missing = [s for s in ("post", "pre", "deepnorm") if s not in schemes]
    if missing:
        raise ValueError(f"schemes: the ratios need {', '.join(missing)} (given: {', '.join(schemes)})")
    top = {s: grid[s, depths[-1]][0] for s in schemes}
    out = {f"{s.replace('-', '_')}_{k}": v for s, d in top.items()
           for k, v in (("sb", d.sum_beta_diag_sq), ("dec", d.grad_spread["decoder"]))}
    out |= {"depth": depths[-1], "depth_min": depths[0]}
    for s in ("post", "pre"):
        out[f"{s}_over_dn"] = top[s].rel_out_change_adam / top["deepnorm"].rel_out_change_adam
    for s, key in (("deepnorm", "dn"), ("post", "post")):
        _, y = grid_mean(grid, s, "rel_out_change")
        out[f"{key}_random_growth"] = float(y[-1] / y[0])
        out[f"{key}_trend"] = "falls" if y[-1] < y[0] else "grows"
    return out


__all__ += ["stream_drift", "deepnorm_conventions", "diagnostics_summary"]
