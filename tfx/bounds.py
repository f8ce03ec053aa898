"""How large can an update or a residual be? The bounds behind the fixes by initialisation.

Two papers bound a size at initialisation instead of normalising it away:

* T-Fixup (Huang et al. 2020, TF-1, TF-2): for an attention block with value
  projection v, output ("mixing") projection w and value input m, keep
  ``‖v‖²‖w‖² + ‖w‖²‖m‖² + ‖v‖²‖m‖² = Θ(1/L)`` so that one update moves the output
  by a bounded amount without LayerNorm. :func:`tfixup_terms` evaluates the left
  side for every attention block of a model; :func:`derive_tfixup_scales` solves
  it for the scale factors.
* Lipschitz-constrained initialisation (Xu et al. 2020, LP-1 … LP-3): in the
  v1 (Post-LN) order the carried residual is multiplied by ``w/σ``, σ the
  standard deviation of ``in_model + in_res``; keep σ ≤ 1. :func:`v1_residual_scales`
  measures σ and w/σ per sub-layer, :func:`std_on_interval_monte_carlo` checks
  the bound σ < b − a of their §3 on sampled distributions, and
  :func:`lipschitz_constants` measures how Lipschitz each linear layer really is.

Norms in the T-Fixup functions are *gains*, in units where a Xavier-initialised
square matrix and a vector of unit-variance coordinates both have size 1:
``gain(W) = ‖W‖_F / sqrt(fan_in)`` (the factor by which W stretches a random
direction, on average) and ``rms(x) = ‖x‖ / sqrt(d)``. A uniform rescaling of W
rescales its gain, its spectral norm and its Frobenius norm alike, so the
depth-scaling of the left side does not depend on this choice.
"""
from __future__ import annotations

import math

import numpy as np
import sympy as sp
import torch
from torch import nn

from .blocks import Attention
from .probes import record_branches
from .theory import tfixup_condition

# ============================================================== TF-1, TF-2: T-Fixup


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
        handles = []
        for s, mods in blocks.items():
            for n, mod in mods:
                def pre(module, args, kwargs, key=(s, n)):
                    x = kwargs.get("memory")
                    x = args[0] if x is None else x
                    seen[key] = float(x.pow(2).mean().sqrt())
                handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
        was = model.training
        model.eval()
        try:
            model.loss(batch.to(next(model.parameters()).device))
        finally:
            for h in handles:
                h.remove()
            model.train(was)
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


#: The left side of TF-1, ``‖v‖²‖w‖² + ‖w‖²‖m‖² + ‖v‖²‖m‖²`` (one formula, in tfx.theory).
tfixup_lhs = tfixup_condition


def tfixup_lhs_sweep(task, depths, inits=("t-fixup", "xavier"), kind: str = "encoder-decoder",
                     m: str = "embedding", batch_size: int = 16, seed: int = 0, **model_kw) -> dict:
    """TF-1 across depth: for each init and depth N, the mean left side over the
    attention blocks of each stack of a no-LN model (placement 'none').

    Returns ``{init: {stack: {"N": array, "L": array, "lhs": array}}}``."""
    from .model import build_model

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
    was = model.training
    model.eval()
    try:
        with record_branches(model) as rec:
            model.loss(batch.to(next(model.parameters()).device))
    finally:
        model.train(was)
    out = {}
    for s, records in rec.items():
        mods = dict(model.stacks()[s].residuals())
        sig, ratio, spread = [], [], []
        for r in records:
            res = mods[r["name"]]
            eps = res.norm.eps if res.norm is not None else 0.0
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


# ============================================================== LP-2: σ on an interval, by Monte Carlo

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
