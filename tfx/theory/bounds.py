"""How large can an update or a residual be? The bounds behind the fixes by initialisation.

Two papers bound a size at initialisation instead of normalising it away:

* T-Fixup (Huang et al. 2020, TF-1, TF-2): for an attention block with value
  projection v, output ("mixing") projection w and value input m, keep
  ``‖v‖²‖w‖² + ‖w‖²‖m‖² + ‖v‖²‖m‖² = Θ(1/L)`` so that one update moves the output
  by a bounded amount without LayerNorm. :func:`tfixup_lhs` is the left side,
  :func:`tfixup_terms` evaluates it for every attention block of a model, and
  :func:`derive_tfixup_scales` solves it for the scale factors (which
  ``tfx.nn.constants.tfixup_scale_factors`` holds).
* Lipschitz-constrained initialisation (Xu et al. 2020, LP-1 … LP-3): in the
  v1 (Post-LN) order the carried residual is multiplied by ``w/σ``, σ the
  standard deviation of ``in_model + in_res``; keep σ ≤ 1. :func:`derive_v1_residual_scale`
  derives the factor and :func:`v1_residual_scales` measures σ and w/σ per sub-layer;
  :func:`std_bound_on_interval` is the bound σ < b − a of their §3 (and the tight
  (b − a)/2, proved by :func:`derive_std_bound_on_interval`),
  :func:`std_on_interval_monte_carlo` checks both on sampled distributions, and
  :func:`lipschitz_constants` measures how Lipschitz each linear layer really is
  (the init's half-widths: ``tfx.nn.constants.lipschitz_init_bounds``).

Norms in the T-Fixup functions are *gains*, in units where a Xavier-initialised
square matrix and a vector of unit-variance coordinates both have size 1:
``gain(W) = ‖W‖_F / sqrt(fan_in)`` (the factor by which W stretches a random
direction, on average) and ``rms(x) = ‖x‖ / sqrt(d)``. A uniform rescaling of W
rescales its gain, its spectral norm and its Frobenius norm alike, so the
depth-scaling of the left side does not depend on this choice.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import sympy as sp
import torch
from torch import nn

from ..nn.blocks import Attention
from ..nn.hooks import attached, loss_on, mode, record_branches


# ============================================================== TF-1, TF-2: T-Fixup


def tfixup_lhs(v_norm, w_norm, m_norm):
    """Left side of the T-Fixup condition for an attention block (TF-1)::

        ||v||^2 ||w||^2 + ||w||^2 ||m||^2 + ||v||^2 ||m||^2   (target: Theta(1/L))

    v: value projection, w: output (mixing) projection, m: the value input
    (embeddings). Huang et al. show that keeping this at Theta(1/L) for an
    L-layer stack bounds the output change of one SGD step without LayerNorm;
    the T-Fixup scalings (``tfx.nn.constants.tfixup_scale_factors``) are chosen to meet it
    (:func:`derive_tfixup_scales`).
    Norms may be floats, arrays or tensors.
    """
    v2, w2, m2 = v_norm**2, w_norm**2, m_norm**2
    return v2 * w2 + w2 * m2 + v2 * m2


def matrix_gain(weight: torch.Tensor) -> float:
    """RMS gain ``‖W‖_F / sqrt(fan_in)`` of a weight (out, in): E‖Wx‖²/‖x‖² for a random
    direction x is its square. 1 for a Xavier-initialised square matrix."""
    return float(weight.detach().norm() / math.sqrt(weight.shape[1]))


def sublayers_per_layer(model, stack: str) -> int:
    """Residual sub-layers per layer of ``stack``: 2 in an encoder (or a decoder-only
    LM), 3 in the decoder of an encoder–decoder (self-, cross-attention, FFN)."""
    return 3 if stack == "decoder" and model.cfg.kind == "encoder-decoder" else 2


@torch.no_grad()
def tfixup_terms(model, batch=None, m: str = "embedding") -> dict:
    """TF-1: the three terms of T-Fixup's condition for every attention block.

    For each block, v = gain(v_proj), w = gain(out_proj) and m the size of the value
    input, with ``m``:

    * ``"embedding"``: rms of the scaled token embeddings s·E of the block's stack
      (the slides' "value input" at initialisation; positions left out). No batch needed.
    * ``"input"``: rms of what the block's values are actually computed from in a
      forward pass on ``batch`` (the residual stream, with positions and whatever
      the stream has grown to; the encoder's output for cross-attention).

    Returns ``{stack: {"names", "v", "w", "m", "lhs", "L"}}`` with arrays over the
    attention blocks in forward order, ``lhs = v²w² + w²m² + v²m²`` and L the number
    of residual sub-layers of the stack (the L of Θ(1/L))."""
    if m not in ("embedding", "input"):
        raise ValueError(f"m={m!r}: choose 'embedding' (the scaled token embeddings) or 'input' (measured)")
    if m == "input" and batch is None:
        raise ValueError("m='input' measures the value inputs in a forward pass: give batch=…")
    embeds = {"encoder": getattr(model, "src_embed", None), "decoder": getattr(model, "tgt_embed", None)}
    blocks = {s: [(n, mod) for n, mod in stack.named_modules() if isinstance(mod, Attention)]
              for s, stack in model.stacks().items()}
    seen = {}
    if m == "input":
        def keep(key):
            def pre(module, args, kwargs):
                x = kwargs.get("memory")
                x = args[0] if x is None else x
                seen[key] = float(x.pow(2).mean().sqrt())
            return pre

        hooks = [(mod, keep((s, n))) for s, mods in blocks.items() for n, mod in mods]
        with attached(hooks, "forward_pre"), mode(model):
            loss_on(model, batch)
    out = {}
    for s, mods in blocks.items():
        emb = embeds[s]
        emb_rms = float((emb.scale * emb.tok.weight).pow(2).mean().sqrt())
        v = np.array([matrix_gain(mod.v_proj.weight) for _, mod in mods])
        w = np.array([matrix_gain(mod.out_proj.weight) for _, mod in mods])
        mm = np.array([seen[(s, n)] if m == "input" else emb_rms for n, _ in mods])
        out[s] = {"names": [n.rsplit(".f", 1)[0] for n, _ in mods], "v": v, "w": w, "m": mm,
                  "lhs": tfixup_lhs(v, w, mm), "L": len(model.stacks()[s].layers) * sublayers_per_layer(model, s)}
    return out


def tfixup_lhs_sweep(task, depths, inits=("t-fixup", "xavier"), kind: str = "encoder-decoder",
                     m: str = "embedding", batch_size: int = 16, seed: int = 0, **model_kw) -> dict:
    """TF-1 across depth: for each init and depth N, the mean left side over the
    attention blocks of each stack of a no-LN model (placement 'none').

    Returns ``{init: {stack: {"N": array, "L": array, "lhs": array}}}``."""
    from ..nn.model import build_model

    if kind not in ("encoder-decoder", "encoder"):
        raise ValueError(f"kind={kind!r}: choose 'encoder-decoder' or 'encoder'")
    batch = task.batch(0, batch_size) if m == "input" else None
    out = {}
    for init in inits:
        rows: dict = {}
        for n in depths:
            model = build_model(n_enc=n, n_dec=n if kind == "encoder-decoder" else 0, placement="none", init=init,
                                src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab, seed=seed, **model_kw)
            for s, t in tfixup_terms(model, batch, m).items():
                r = rows.setdefault(s, {"N": [], "L": [], "lhs": []})
                r["N"].append(n)
                r["L"].append(t["L"])
                r["lhs"].append(float(t["lhs"].mean()))
        out[init] = {s: {k: np.array(v, dtype=float) for k, v in r.items()} for s, r in rows.items()}
    return out


def derive_tfixup_scales() -> dict:
    """sympy: T-Fixup's factors from TF-1 read with constant 1 and L = residual sub-layers.

    The book's reading of the slides' theorem (the slides state the condition and the
    rules, not this step): make each attention block's left side exactly 1/L.

    * Decoder, L = 3 N_d, one common scale a for v, w and m: ``3 a⁴ = 1/(3 N_d)``, so
      ``a = (9 N_d)^(-1/4)`` — the decoder rule.
    * Encoder, L = 2 N_e, embeddings given at m = (9 N_e)^(-1/4) (the slides' rule) and
      v = w = c N_e^(-1/4): ``c⁴/N_e + 2 c² /(3 N_e) = 1/(2 N_e)``, so
      ``c² = (−2/3 + sqrt(4/9 + 2))/2`` and c ≈ 0.6696 — the slides' 0.67.

    Returns ``{"decoder_scale", "encoder_c", "encoder_c_float", "checks"}``."""
    N, a, c = sp.symbols("N a c", positive=True)
    dec = sp.solve(sp.Eq(3 * a**4, 1 / (3 * N)), a)
    dec_scale = sp.simplify(dec[0])
    m2 = 1 / sp.sqrt(9 * N)                     # m² with m = (9N)^(-1/4)
    v2 = c**2 / sp.sqrt(N)                      # v² = w² with v = c N^(-1/4)
    enc = [s for s in sp.solve(sp.Eq(sp.expand(v2 * v2 + 2 * v2 * m2), 1 / (2 * N)), c) if s.is_positive]
    enc_c = sp.radsimp(enc[0])
    checks = {
        "decoder_is_9N": sp.simplify(dec_scale - (9 * N) ** sp.Rational(-1, 4)) == 0,
        "encoder_c_rounds_to_0.67": round(float(enc_c), 2) == 0.67,
        "encoder_lhs_is_1_over_2N": sp.simplify(tfixup_lhs(enc_c * N ** sp.Rational(-1, 4),
                                                           enc_c * N ** sp.Rational(-1, 4),
                                                           (9 * N) ** sp.Rational(-1, 4)) - 1 / (2 * N)) == 0,
    }
    return {"decoder_scale": dec_scale, "encoder_c": enc_c, "encoder_c_float": float(enc_c), "checks": checks}


# ============================================================== LP-1, LP-3: the v1 residual and its σ


class V1ResidualDerivation(NamedTuple):
    out_v1: sp.Expr               # LN(in_res + in_model), per coordinate
    out_v2: sp.Expr               # in_res + in_model
    residual_coefficient: sp.Expr  # d out_v1 / d in_res  = w / sigma
    identity_difference: sp.Expr   # out_v1 - [(w/sigma) out_v2 - (w/sigma) mu + b] = 0


def derive_v1_residual_scale() -> V1ResidualDerivation:
    """sympy: in computation order v1 the carried residual is scaled by w/sigma (LP-1).

    Xu et al. Table 2. Per coordinate, with mu and sigma the mean and std of
    ``in_model + in_res`` and (w, b) the LayerNorm affine parameters:

    * v1 (the paper's order: LN after the sum, and the LN output is what the
      next sub-layer receives as its residual): ``out_v1 = w (in_model + in_res - mu)/sigma + b``;
    * v2 (official code: the sum itself is carried on): ``out_v2 = in_res + in_model``.

    Expanding, ``out_v1 = (w/sigma) out_v2 - (w/sigma) mu + b``: the residual
    carried to the next layer enters with coefficient ``w/sigma``. At init
    w = 1, so whenever ``sigma > 1`` each v1 layer shrinks what it carries, and
    over k layers the factor compounds to ``prod w/sigma``. The Lipschitz
    initialisation (LP-2, LP-3) keeps ``sigma <= 1`` so this factor is >= 1.
    """
    in_res, in_model, mu, b, w = sp.symbols("in_res in_model mu b w", real=True)
    sigma = sp.Symbol("sigma", positive=True)
    out_v1 = w * (in_model + in_res - mu) / sigma + b
    out_v2 = in_res + in_model
    coeff = sp.diff(out_v1, in_res)
    ident = sp.simplify(out_v1 - ((w / sigma) * out_v2 - (w / sigma) * mu + b))
    return V1ResidualDerivation(out_v1, out_v2, sp.simplify(coeff), ident)


@torch.no_grad()
def v1_residual_scales(model, batch) -> dict:
    """LP-1, LP-3: σ = std(in_model + in_res) and the factor w/σ per residual sub-layer.

    In Xu et al.'s v1 order (``placement='post'``) sub-layer i computes
    LN(in_res + in_model) with in_res = x_{i-1} and in_model = f_i(x_{i-1}); the
    LayerNorm divides by ``σ = sqrt(Var + eps)`` over the d features of each token,
    so the carried residual enters the next sub-layer times w/σ (w the LayerNorm
    gain, 1 at init; Table 2). σ and w/σ are averaged over the tokens of ``batch``;
    ``carried`` is the running product of w/σ: how much of x_0 the stack still
    carries after each sub-layer. For other placements σ is still measured (the std
    of the sum a sub-layer forms), but w/σ applies to v1 only and is NaN. ``range`` is
    the mean over tokens of max − min of the sum's d coordinates: the b − a of LP-2.

    Returns ``{stack: {"names", "sigma", "w_over_sigma", "carried", "range"}}``."""
    with mode(model), record_branches(model) as rec:
        loss_on(model, batch)
    out = {}
    for s, records in rec.items():
        mods = dict(model.stacks()[s].residuals())
        sig, ratio, spread = [], [], []
        for r in records:
            res = mods[r["name"]]
            eps = getattr(res.norm, "eps", 0.0)  # no norm on the sum, or DyT: no ε
            z = r["x"] + r["f"]
            sigma_tok = (z.var(-1, unbiased=False) + eps).sqrt()
            sig.append(float(sigma_tok.mean()))
            spread.append(float((z.amax(-1) - z.amin(-1)).mean()))
            if res.placement == "post":
                ratio.append(float((res.norm.weight.mean() / sigma_tok).mean()))
            else:
                ratio.append(float("nan"))
        ratio = np.array(ratio)
        out[s] = {"names": [r["name"] for r in records], "sigma": np.array(sig), "w_over_sigma": ratio,
                  "carried": np.cumprod(ratio), "range": np.array(spread)}
    return out


def lipschitz_constants(model) -> dict:
    """LP-3: the spectral norm (largest singular value, the Lipschitz constant of x ↦ Wx)
    of every linear layer inside the stacks, ``{kind: array}`` with kind one of
    q_proj, k_proj, v_proj, out_proj, fc1, fc2."""
    out: dict = {}
    for stack in model.stacks().values():
        for name, mod in stack.named_modules():
            if isinstance(mod, nn.Linear):
                kind = name.rsplit(".", 1)[-1]
                out.setdefault(kind, []).append(float(torch.linalg.matrix_norm(mod.weight.detach(), ord=2)))
    return {k: np.array(v) for k, v in out.items()}


# ============================================================== LP-2: σ on an interval

def std_bound_on_interval(a: float, b: float, tight: bool = False) -> float:
    """Upper bound on the standard deviation of any distribution on [a, b] (LP-2).

    * ``tight=False`` (Xu et al. eqs. 2-6): ``sigma < b - a``. Their argument:
      ``|x - E x| <= b - a`` pointwise, so the variance is below ``(b - a)^2``.
      Hence ``b - a <= 1`` gives ``sigma <= 1``, which is all they need.
    * ``tight=True`` (Popoviciu's inequality): ``sigma <= (b - a)/2``, attained
      by mass 1/2 at each end point. The paper's bound is loose by a factor 2
      but points the same way; see :func:`derive_std_bound_on_interval`.
    """
    if b < a:
        raise ValueError("need a <= b")
    return (b - a) / 2 if tight else (b - a)


class StdBoundDerivation(NamedTuple):
    bhatia_davis: sp.Expr     # Var <= (b - m)(m - a) given the mean m
    worst_mean: sp.Expr       # argmax_m: (a + b)/2
    tight_var: sp.Expr        # (b - a)^2 / 4
    tight_std: sp.Expr        # (b - a)/2
    paper_std: sp.Expr        # b - a
    two_point_var: sp.Expr    # variance of p*delta_b + (1-p)*delta_a at p = 1/2
    checks: dict


def derive_std_bound_on_interval() -> StdBoundDerivation:
    """sympy proof of the variance bound on an interval (LP-2).

    For X in [a, b] with mean m and second moment q: ``(X - a)(b - X) >= 0``
    pointwise, so its expectation ``-q + (a + b) m - a b`` is >= 0. With
    ``Var = q - m^2`` this rearranges to ``Var <= (b - m)(m - a)``
    (Bhatia-Davis). The right side is largest at ``m = (a + b)/2``, giving
    ``Var <= (b - a)^2/4`` (Popoviciu), i.e. ``sigma <= (b - a)/2``. The
    two-point distribution with mass 1/2 at a and at b attains it, so the
    bound is tight, while Xu et al.'s ``sigma < b - a`` is a factor 2 loose.
    """
    a, b, m, q, p = sp.symbols("a b m q p", real=True)
    var = q - m**2
    e_product = sp.expand(-q + (a + b) * m - a * b)          # E[(X-a)(b-X)]
    # E[(X-a)(b-X)] >= 0  <=>  var <= (b-m)(m-a):  the two sides differ by exactly e_product
    bd = (b - m) * (m - a)
    checks = {"bhatia_davis_identity": sp.simplify(bd - var - e_product) == 0}
    worst = sp.solve(sp.diff(bd, m), m)[0]
    tight_var = sp.factor(bd.subs(m, worst))
    two_pt_mean = p * b + (1 - p) * a
    two_pt_var = sp.factor(p * b**2 + (1 - p) * a**2 - two_pt_mean**2)   # p(1-p)(b-a)^2
    two_pt_half = sp.factor(two_pt_var.subs(p, sp.Rational(1, 2)))
    checks["worst_mean_is_midpoint"] = sp.simplify(worst - (a + b) / 2) == 0
    checks["popoviciu"] = sp.simplify(tight_var - (b - a)**2 / 4) == 0
    checks["attained"] = sp.simplify(two_pt_half - tight_var) == 0
    return StdBoundDerivation(bhatia_davis=bd, worst_mean=worst, tight_var=tight_var,
                              tight_std=(b - a) / 2, paper_std=b - a,
                              two_point_var=two_pt_half, checks=checks)


#: Distributions on [a, b] for the LP-2 check: name -> sampler(rng, n) on [0, 1].
DISTRIBUTIONS = {
    "uniform": lambda rng, n: rng.uniform(0.0, 1.0, n),
    "truncated normal": lambda rng, n: _truncated_normal(rng, n, mean=0.5, std=0.3),
    "beta(0.5, 0.5)": lambda rng, n: rng.beta(0.5, 0.5, n),
    "beta(2, 5)": lambda rng, n: rng.beta(2.0, 5.0, n),
    "two-point, p = 1/2": lambda rng, n: (rng.uniform(size=n) < 0.5).astype(float),
    "two-point, p = 0.1": lambda rng, n: (rng.uniform(size=n) < 0.1).astype(float),
}


def _truncated_normal(rng, n, mean, std):
    """N(mean, std²) conditioned on [0, 1], by rejection."""
    out = np.empty(0)
    while out.size < n:
        x = rng.normal(mean, std, 2 * n)
        out = np.concatenate([out, x[(x >= 0) & (x <= 1)]])
    return out[:n]


def sample_on_interval(name: str, a: float, b: float, n: int, seed: int = 0) -> np.ndarray:
    """n draws of distribution ``name`` (a key of DISTRIBUTIONS) placed on [a, b]."""
    if name not in DISTRIBUTIONS:
        raise ValueError(f"distribution={name!r}: choose one of {', '.join(map(repr, DISTRIBUTIONS))}")
    if not b > a:
        raise ValueError(f"need a < b, got a={a}, b={b}")
    return a + (b - a) * DISTRIBUTIONS[name](np.random.default_rng(seed), n)


def std_on_interval_monte_carlo(a: float = 0.0, b: float = 1.0, n: int = 100_000, seed: int = 0,
                                names=None) -> dict:
    """LP-2: the sample standard deviation of each distribution on [a, b], and its ratio
    to the paper's bound b − a (Xu et al. eq. 6) and to the tight bound (b − a)/2
    (Popoviciu). The std is the population one (ddof 0) of the n draws: the draws
    form a distribution on [a, b] themselves, so neither bound can be broken by
    sampling noise, only by a wrong bound.

    Returns ``{name: {"std", "over_paper", "over_tight"}}``."""
    out = {}
    for k, name in enumerate(names or DISTRIBUTIONS):
        x = sample_on_interval(name, a, b, n, seed + k)
        sd = float(x.std())
        out[name] = {"std": sd, "over_paper": sd / (b - a), "over_tight": sd / ((b - a) / 2)}
    return out


def random_discrete_stds(n_dists: int = 2000, support: int = 5, a: float = 0.0, b: float = 1.0,
                         seed: int = 0) -> np.ndarray:
    """LP-2, how tight: the exact std of ``n_dists`` random discrete distributions on
    [a, b] (``support`` points uniform on [a, b], Dirichlet(1/support) weights, so some
    put almost all their mass on two points). Returns the stds divided by b − a."""
    rng = np.random.default_rng(seed)
    pts = rng.uniform(a, b, (n_dists, support))
    pts[:, 0], pts[:, 1] = a, b  # every distribution may use the end points
    wts = rng.dirichlet(np.full(support, 1.0 / support), n_dists)
    mean = (wts * pts).sum(1)
    var = (wts * pts**2).sum(1) - mean**2
    return np.sqrt(np.clip(var, 0, None)) / (b - a)


def tfixup_lhs_summary(lhs: dict, fits: dict, depths) -> dict:
    """TF-1 across depth in numbers, from :func:`tfixup_lhs_sweep` for m = "embedding" and
    "input" (``lhs[m]``) and their log-log fits (``fits[m, init, stack]``): per stack the
    range of L × left side under T-Fixup (``Llhs_min_<stack>``, ``Llhs_max_<stack>``), Xavier's
    mean left side (``xavier_lhs_<stack>``), the slopes against L of T-Fixup, Xavier and
    T-Fixup with the measured input (``slope_``, ``xavier_slope_``, ``input_slope_<stack>``);
    and the depths' range (``depth_min``, ``depth_max``)."""
    out = {}
    for stack in ("encoder", "decoder"):
        tf = lhs["embedding"]["t-fixup"][stack]
        out[f"Llhs_min_{stack}"] = float((tf["L"] * tf["lhs"]).min())
        out[f"Llhs_max_{stack}"] = float((tf["L"] * tf["lhs"]).max())
        out[f"xavier_lhs_{stack}"] = float(lhs["embedding"]["xavier"][stack]["lhs"].mean())
        for key, m, init in (("", "embedding", "t-fixup"), ("xavier_", "embedding", "xavier"),
                             ("input_", "input", "t-fixup")):
            out[f"{key}slope_{stack}"] = fits[m, init, stack][0]
    return out | {"depth_min": int(depths[0]), "depth_max": int(depths[-1])}


def v1_scale_summary(scales: dict) -> dict:
    """LP-1 and LP-3 in numbers, from :func:`v1_residual_scales` of v1 models by init
    (``{init: {stack: ...}}``, with "xavier" and "lipschitz"): per init and stack σ's mean
    and largest value, the mean w/σ, the share of the embedding carried to the top, the
    mean range b − a and the count of σ ≤ 1 (``<what>_<init>_<stack>``); the sub-layers per
    stack (``n_sub_<stack>``); and the encoder's carried share, Lipschitz over Xavier
    (``carried_ratio``)."""
    out = {}
    for init, sc in scales.items():
        for stack, r in sc.items():
            s = r["sigma"]
            for k, v in (("sigma_mean", s.mean()), ("sigma_max", s.max()),
                         ("ratio_mean", r["w_over_sigma"].mean()), ("carried", r["carried"][-1]),
                         ("range", r["range"].mean())):
                out[f"{k}_{init}_{stack}"] = float(v)
            out[f"n_le1_{init}_{stack}"] = int((s <= 1).sum())
            out[f"n_sub_{stack}"] = len(s)
    carried = {i: scales[i]["encoder"]["carried"][-1] for i in ("lipschitz", "xavier")}
    return out | {"carried_ratio": float(carried["lipschitz"] / carried["xavier"])}


def v1_layers_to_fade(sigma: float = 1.2, share: float = 0.01) -> tuple:
    """How many v1 sub-layers, each scaling the carried residual by 1/σ (γ = 1), bring the
    embedding's share below ``share``: (ln(1/share)/ln σ, the first whole k past it,
    encoder layers of two sub-layers that takes)."""
    if sigma <= 1 or not 0 < share < 1:
        raise ValueError(f"sigma={sigma} must be > 1 and share={share} in (0, 1)")
    k = math.log(1 / share) / math.log(sigma)
    kmin = math.floor(k) + 1
    return k, kmin, math.ceil(kmin / 2)
