"""How large are the gradients at initialisation, layer by layer, and the updates they make?

Predicted: Xiong et al. 2020's Theorem 1 (LN-4): the gradient of the last FFN weight
does not depend on the depth L in Post-LN and shrinks like L^(-1/2) in Pre-LN,
because the final LayerNorm divides by a hidden norm that grows with depth
(:mod:`tfx.theory.hidden`, :mod:`tfx.theory.jacobian`). Measured: per-parameter gradient norms and
their per-layer profiles (LN-4, LN-5); the gradient reaching every sub-layer's output
(GV-1, Liu et al. 2020, Fig. 3); and the sizes of the gradients against the updates
Adam and SGD make from them (GV-3, Fig. 5).
"""
from __future__ import annotations

import copy

import numpy as np
import torch

from ..nn.hooks import attached, loss_on, mode, stack_name, sublayer_labels


# ----------------------------------------------------------------- LN-4: Theorem 1, predicted
def _placement(placement: str) -> str:
    p = placement.lower().replace("_", "-")
    for suffix in ("-ln", "ln"):
        if p.endswith(suffix) and p != suffix:
            p = p[: -len(suffix)]
            break
    if p not in ("post", "pre", "admin"):
        raise ValueError(f"unknown placement {placement!r}; use 'post', 'pre' or 'admin'")
    return p


def expected_exponent(placement: str) -> float:
    """Predicted exponent k in ``||dL/dW^{2,L}||_F ~ L^k`` (LN-4).

    ``"post"`` -> 0.0 and ``"pre"`` -> -0.5. This is what a log-log fit of
    measured gradient norms against depth (:func:`tfx.theory.fit.fit_loglog`) is compared to.
    """
    p = _placement(placement)
    if p == "post":
        return 0.0
    if p == "pre":
        return -0.5
    raise ValueError("Theorem 1 of Xiong et al. covers 'post' and 'pre' only")


def last_ffn_grad_scaling(placement: str, L) -> float | np.ndarray:
    """Relative size of ``||dL~/dW^{2,L}||_F`` as a function of depth L (LN-4).

    Xiong et al. Theorem 1 (with high probability, under the Lemma 2 setting
    and a concentration assumption on the hidden norms)::

        Post-LN:  ||dL~/dW^{2,L}||_F <= O(d sqrt(ln d))          -> L^0
        Pre-LN:   ||dL~/dW^{2,L}||_F <= O(d sqrt(ln d / L))      -> L^(-1/2)

    Only the L-dependence is returned (``L ** expected_exponent``); the common
    ``d sqrt(ln d)`` factor and constants are dropped. Mechanism: the gradient
    reaching W^{2,L} has passed through one LayerNorm whose Jacobian norm is
    ``sqrt(d)/||input||`` (LN-1). In Post-LN that input is x_L^{post,5} with
    ``E||.||^2 = 1.5 d`` whatever L is (LN-3); in Pre-LN it is the final
    LN's input, whose squared norm grows like L d (LN-3), so the gradient is
    scaled by ``1/sqrt(L)``. The ``d sqrt(ln d)`` comes from high-probability
    bounds on the Gaussian quantities involved and does not depend on L. The
    paper's measurement (Fig. 3c) puts the Post-LN value near 1.6 for 6 to
    14 layers.
    """
    return np.asarray(L, dtype=float) ** expected_exponent(placement) if np.ndim(L) \
        else float(L) ** expected_exponent(placement)


# ----------------------------------------------------------------- LN-4, LN-5: measured per parameter
def _loss_backward(model, batches):
    """Zero the grads, then backward the mean loss over ``batches`` (one Batch or a list)."""
    batches = batches if isinstance(batches, (list, tuple)) else [batches]
    dev = next(model.parameters()).device
    model.zero_grad(set_to_none=True)
    for b in batches:
        (model.loss(b.to(dev))["loss"] / len(batches)).backward()


def grad_norms(model, batch) -> dict:
    """{parameter name: Frobenius norm of ∂loss/∂θ} after one backward pass.

    ``batch``: a Batch, or a list of Batches whose losses are averaged (the norm of
    the *expected* gradient over those batches, as in Xiong et al.'s Fig. 3).
    Dropout is switched off for the pass (eval mode); the model's mode is restored."""
    with mode(model):
        _loss_backward(model, batch)
        out = {n: float(p.grad.norm()) for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad(set_to_none=True)
    return out


def layer_grad_norms(model, batch=None, stack: str | None = None, param: str = "ffn.f.fc2.weight",
                     grads: dict | None = None) -> np.ndarray:
    """‖∂loss/∂(layers.l.<param>)‖_F for l = 1 … N of one stack, as an array (LN-5).

    ``stack``: 'encoder' or 'decoder' (None: the one feeding the output projection).
    ``param``: the parameter inside each layer, default the FFN's second weight
    W^{2,l}. Pass ``grads`` (from :func:`grad_norms`) to reuse one backward pass."""
    name = stack_name(model, stack)
    grads = grad_norms(model, batch) if grads is None else grads
    n = len(model.stacks()[name].layers)
    keys = [f"{name}.layers.{l}.{param}" for l in range(n)]
    missing = [k for k in keys if k not in grads]
    if missing:
        raise KeyError(f"no gradient for {missing[0]!r} (parameter names look like "
                       f"'{name}.layers.0.ffn.f.fc2.weight')")
    return np.array([grads[k] for k in keys])


def last_ffn_grad_norm(model, batch=None, stack: str | None = None, grads: dict | None = None) -> float:
    """‖∂loss/∂W^{2,N}‖_F: the last layer's FFN output weight (Xiong et al. Theorem 1, LN-4)."""
    return float(layer_grad_norms(model, batch, stack, "ffn.f.fc2.weight", grads)[-1])


def ffn_grad_profiles(task, placement: str, n_layers: int, seeds: int = 1, batch_size: int = 32,
                      param: str = "ffn.f.fc2.weight", first_seed: int = 0, **model_kw) -> np.ndarray:
    """Per-layer gradient norms at init of fresh encoder-only models on ``task`` (LN-4, LN-5).

    For each seed s a model ``build_model(n_enc=n_layers, n_dec=0, placement=…, seed=s,
    **model_kw)`` gets one backward pass on ``task.batch(s, batch_size)``. Returns an
    array (seeds, n_layers) of ‖∂loss/∂(layers.l.<param>)‖_F; column −1 is the last
    layer's W^{2,N} of Theorem 1."""
    from ..nn.model import build_model

    kw = dict(src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab, **model_kw)
    rows = []
    for s in range(first_seed, first_seed + seeds):
        m = build_model(n_enc=n_layers, n_dec=0, placement=placement, seed=s, **kw)
        rows.append(layer_grad_norms(m, task.batch(s, batch_size), "encoder", param))
    return np.array(rows)


# The LN-5 criterion, fixed in issue 28 before the book profile was re-run: a per-layer profile
# "rises" when the 95 % interval over seeds of its log-log slope against the layer index lies above
# 0, "falls" when it lies below 0, and is "about flat" when it lies within ±FLAT_MARGIN (over 12
# layers, a factor 12^0.1 ≈ 1.28 at most from the bottom to the top).
FLAT_MARGIN = 0.1


def profile_shape(interval: dict) -> str:
    """'rises', 'falls', 'about flat' or 'undecided', from :func:`tfx.theory.fit.exponent_interval`
    of a per-layer profile against the layer index (LN-5; the criterion above)."""
    lo, hi = interval["low"], interval["high"]
    if -FLAT_MARGIN <= lo and hi <= FLAT_MARGIN:
        return "about flat"
    if lo > 0:
        return "rises"
    if hi < 0:
        return "falls"
    return "undecided"


# ----------------------------------------------------------------- GV-1: at every sub-layer's output
def sublayer_grad_norms(model, batch, relative_to: str = "model") -> dict:
    """GV-1: ‖∂𝓛/∂x_i‖₂ for the output x_i of every residual sub-layer, at the model's
    current weights (Liu et al. 2020, Fig. 3: "relative gradient norm").

    𝓛 is the training loss on ``batch``. ``relative`` divides each norm by the largest
    one in the whole model (``relative_to="model"``, the paper's "same network") or in
    its own stack (``"stack"``). Runs in eval mode (no dropout); parameter gradients
    are cleared afterwards.

    Returns ``{stack: {"names", "kinds", "layer", "norm", "relative"}}``, arrays in
    forward order (bottom sub-layer first)."""
    if relative_to not in ("model", "stack"):
        raise ValueError(f"relative_to={relative_to!r}: choose 'model' or 'stack'")
    outs = {s: [] for s in model.stacks()}

    def keep(s, name):
        def hook(module, args, kwargs, out):
            out.retain_grad()
            outs[s].append((name, out))
        return hook

    hooks = [(m, keep(s, name)) for s, stack in model.stacks().items() for name, m in stack.residuals()]
    with attached(hooks, "forward"), mode(model):
        model.zero_grad(set_to_none=True)
        loss_on(model, batch)["loss"].backward()
    res = {}
    for s, recs in outs.items():
        norms = np.array([float(t.grad.norm()) if t.grad is not None else 0.0 for _, t in recs])
        res[s] = {**sublayer_labels([n for n, _ in recs]), "norm": norms}
    model.zero_grad(set_to_none=True)
    top = max(float(r["norm"].max()) for r in res.values())
    for r in res.values():
        r["relative"] = r["norm"] / (top if relative_to == "model" else float(r["norm"].max()))
    return res


def sublayer_gains(model, batch) -> dict:
    """GV-1, the mechanism: what each residual sub-layer does to the gradient on the way down.

    For a Post-LN sub-layer x_i = LN(z_i), z_i = x_{i-1} + f_i(x_{i-1}), the gradient reaching
    its input is Δx_{i-1} = Δz_i + J_{f_i}ᵀΔz_i (shortcut plus branch), and the LayerNorm divides
    it by about √Var z_i on the way back (Liu et al. 2020, Theorem 1 and its proof). With the two
    paths uncorrelated,

        ‖Δx_{i-1}‖² / ‖Δx_i‖²  ≈  (1 + g_i) / (1 + v_i),

    v_i = Var f_i / Var x_{i-1} the branch's forward gain and g_i = ‖J_{f_i}ᵀΔz_i‖² / ‖Δz_i‖²
    its backward gain *for the gradient that actually arrives*. Theorem 1's "no vanishing in the
    encoder" is g_i ≥ v_i. Both gains are measured here in one forward and one backward pass of
    the training loss (eval mode), with ∂𝓛/∂f_i = Δz_i and J_{f_i}ᵀΔz_i = Δx_{i-1} − Δz_i (the
    shortcut is the identity: Post-LN and Pre-LN; not Admin's ω or DeepNorm's α).

    ``common_mode``: the share of ‖Δz_i‖² in its mean over the sequence positions (1: the same
    gradient at every position, as when the gradient arrives through an attention that averages;
    ≈ 1/T for a gradient that differs from position to position). An attention branch passes a
    common-mode gradient back almost whole and averages a position-specific one away, so its g_i
    depends on where the gradient comes from.

    Returns ``{stack: {"names", "kinds", "layer", "forward_gain", "backward_gain",
    "common_mode", "measured", "predicted"}}``: ``measured`` / ``predicted`` are the ratio
    above for sub-layers 1 … L−1 (Δx_i is the input gradient of sub-layer i+1), bottom first."""
    from ..nn.hooks import record_branches

    with mode(model), record_branches(model, detach=False) as rec:
        model.zero_grad(set_to_none=True)
        out = loss_on(model, batch)
        for recs in rec.values():
            for r in recs:
                r["x"].retain_grad()
                r["f"].retain_grad()
        out["loss"].backward()
    res = {}
    for s, recs in rec.items():
        dx = [r["x"].grad for r in recs]
        dz = [r["f"].grad for r in recs]
        if any(t is None for t in dx + dz):
            raise ValueError(f"stack {s!r}: a sub-layer got no gradient (is its output used by the loss?)")
        sq = lambda t: float(t.double().pow(2).sum())  # noqa: E731
        v = np.array([float(r["f"].detach().var() / r["x"].detach().var()) for r in recs])
        g = np.array([sq(a - b) / sq(b) for a, b in zip(dx, dz)])
        cm = np.array([sq(b.mean(dim=-2, keepdim=True)) * b.shape[-2] / sq(b) for b in dz])
        measured = np.array([sq(dx[i]) / sq(dx[i + 1]) for i in range(len(recs) - 1)])
        res[s] = {**sublayer_labels([r["name"] for r in recs]), "forward_gain": v, "backward_gain": g,
                  "common_mode": cm, "measured": measured, "predicted": (1 + g[:-1]) / (1 + v[:-1])}
    model.zero_grad(set_to_none=True)
    return res


# ----------------------------------------------------------------- GV-3: gradients against updates
def attention_weights(name: str, p) -> bool:
    """The default selection of ``grad_update_sizes``: the q/k/v/out projection matrices."""
    return p.ndim == 2 and any(k in name for k in ("q_proj.weight", "k_proj.weight", "v_proj.weight",
                                                    "out_proj.weight")) and not name.startswith("out_proj")


def grad_update_sizes(model, task, optimizer: str = "adam", lr: float = 1e-3, steps: int = 20,
                      batch_size: int = 32, select=attention_weights, momentum: float = 0.9) -> dict:
    """GV-3: per-parameter gradient and update sizes (Liu et al. 2020, Fig. 5).

    Trains a copy of ``model`` for ``steps`` steps with ``optimizer`` ('adam' or 'sgd',
    no warmup) and returns, for every parameter with ``select(name, p)`` true,
    ``grad``: ‖∇W‖_F averaged over the steps, and ``update``: ‖W_steps − W_0‖F.
    ``relative_grad`` / ``relative_update`` divide by the largest. Adam rescales each
    coordinate by its own gradient scale, so its updates come out of similar size even
    when the gradients span decades; SGD's updates inherit the gradients' spread.

    Returns ``{"names", "grad", "update", "relative_grad", "relative_update", "loss"}``."""
    from ..nn.config import TrainConfig
    from ..nn.optim import make_optimizer, take_step

    m, dev, chosen = _training_copy(model, select)
    start = [p.detach().clone() for _, p in chosen]
    opt = make_optimizer(m.parameters(), TrainConfig(optimizer=optimizer, lr=lr, momentum=momentum))
    gsum = np.zeros(len(chosen))
    losses = []
    for step in range(steps):
        loss = m.loss(task.batch(step, batch_size).to(dev))["loss"]

        def add_grad_norms():  # ‖∇W‖_F of this step, before the update
            nonlocal gsum
            gsum = gsum + [float(p.grad.norm()) if p.grad is not None else 0.0 for _, p in chosen]

        take_step(opt, loss, before_update=add_grad_norms)
        losses.append(float(loss.detach()))
    grad = gsum / steps
    upd = np.array([float((p.detach() - s).norm()) for (_, p), s in zip(chosen, start)])
    return {"names": [n for n, _ in chosen], "grad": grad, "update": upd,
            "relative_grad": grad / grad.max(), "relative_update": upd / upd.max(), "loss": losses}



def weight_matrices(name: str, p) -> bool:
    """Every attention projection and FFN matrix (square d×d and non-square d×4d, 4d×d)."""
    return p.ndim == 2 and (attention_weights(name, p) or ".fc1.weight" in name or ".fc2.weight" in name)


def _training_copy(model, select):
    """A copy of ``model`` in training mode, its device, and the ``(name, parameter)`` pairs
    ``select(name, parameter)`` chooses (at least one)."""
    m = copy.deepcopy(model)
    m.train()
    chosen = [(n, p) for n, p in m.named_parameters() if select(n, p)]
    if not chosen:
        raise ValueError("select() chose no parameter")
    return m, next(m.parameters()).device, chosen


def update_balance(model, task, optimizer: str = "adam", lr: float = 1e-4, window: tuple = (100, 200),
                   batch_size: int = 32, select=weight_matrices, momentum: float = 0.9,
                   warmup: int = 0) -> dict:
    """GV-3 where it can fail: gradients against updates between two checkpoints far apart.

    Liu et al. 2020 (Fig. 5) compare ‖W_{i+1} − W_i‖ between checkpoints one *epoch* apart. In
    the first few steps the comparison decides nothing: Adam's first step moves every coordinate
    by lr·sign(g), so every matrix of one shape moves by the same norm whatever its gradient, and
    SGD's steps are lr·g, as spread as the gradients by linearity. Over a window (a, b] of many
    steps neither holds: a coordinate whose gradient keeps its sign moves about lr·(b − a) under
    Adam, one whose gradient is noise about lr·√(b − a), so Adam's update sizes can differ by up to
    ½·log10(b − a) decades; SGD's sum of changing gradients can cancel or add.

    Trains a copy of ``model`` for ``b`` steps (``warmup`` steps of linear warmup), keeps W_a and
    W_b, and returns per selected matrix the **root mean square per coordinate** (so a d×4d
    matrix and a d×d one compare coordinate for coordinate, not by their size):
    ``grad`` = RMS of ∇W averaged over the steps of the window, ``update`` = RMS of W_b − W_a;
    and, pooled over every coordinate of those matrices, ``coord_grad`` = |mean ∇W| over the
    window and ``coord_update`` = |W_b − W_a| (1-D arrays, for a per-coordinate spread).

    Returns ``{"names", "shapes", "grad", "update", "coord_grad", "coord_update", "loss"}``."""
    from ..nn.config import TrainConfig
    from ..nn.optim import make_optimizer, take_step

    a, b = (int(window[0]), int(window[1]))
    if not 0 <= a < b:
        raise ValueError(f"window={window!r}: need 0 <= a < b (steps)")
    m, dev, chosen = _training_copy(model, select)
    opt = make_optimizer(m.parameters(), TrainConfig(optimizer=optimizer, lr=lr, momentum=momentum))
    start, gsq, gsum, losses = None, np.zeros(len(chosen)), [torch.zeros_like(p) for _, p in chosen], []
    for step in range(b):
        if step == a:
            start = [p.detach().clone() for _, p in chosen]
        loss = m.loss(task.batch(step, batch_size).to(dev))["loss"]
        in_window = step >= a

        def read_grads():
            nonlocal gsq
            if in_window:
                gsq = gsq + [float(p.grad.pow(2).mean().sqrt()) if p.grad is not None else 0.0 for _, p in chosen]
                for acc, (_, p) in zip(gsum, chosen):
                    if p.grad is not None:
                        acc += p.grad.detach()

        step_lr = lr * min(1.0, (step + 1) / warmup) if warmup else None
        take_step(opt, loss, lr=step_lr, before_update=read_grads)
        losses.append(float(loss.detach()))
    n = b - a
    upd = [p.detach() - s0 for (_, p), s0 in zip(chosen, start)]
    return {"names": [nm for nm, _ in chosen], "shapes": [tuple(p.shape) for _, p in chosen],
            "grad": gsq / n, "update": np.array([float(u.pow(2).mean().sqrt()) for u in upd]),
            "coord_grad": torch.cat([(g / n).abs().flatten() for g in gsum]).cpu().numpy(),
            "coord_update": torch.cat([u.abs().flatten() for u in upd]).cpu().numpy(), "loss": losses}


# The GV-3 criterion, fixed in issue 28: an optimiser *equalises* the update sizes when, between
# checkpoints far apart, the spread of its per-matrix update RMS (tfx.theory.fit.log_spread, in
# decades) is at most EQUALISE_FRACTION of the spread of the gradients' RMS.
EQUALISE_FRACTION = 0.5


def equalises(balance: dict) -> bool:
    """GV-3: does the :func:`update_balance` of one optimiser even out the update sizes?"""
    from .fit import log_spread

    return log_spread(balance["update"]) <= EQUALISE_FRACTION * log_spread(balance["grad"])


# ----------------------------------------------------------------- GV-1 and GV-3, read off
def mean_profiles(runs: list) -> dict:
    """The seed mean of :func:`sublayer_grad_norms` results: ``{stack: {"relative", "norm", "kinds"}}``."""
    return {stack: {k: np.mean([r[stack][k] for r in runs], axis=0)
                    for k in ("relative", "norm")} | {"kinds": runs[0][stack]["kinds"]}
            for stack in ("encoder", "decoder")}


def bottom_top_ratios(grads: dict) -> dict:
    """GV-1: the bottom/top ratio of the relative gradient per placement and stack
    (``grads``: {placement: :func:`mean_profiles`}) as ``post_enc`` … ``pre_dec``, and the ratio
    predicted for twice the depth (``ex_twice``: the Post-LN decoder's squared)."""
    rel = {(pl, st[:3]): grads[pl][st]["relative"] for pl in ("post", "pre") for st in ("encoder", "decoder")}
    v = {f"{pl}_{st}": float(r[0] / r[-1]) for (pl, st), r in rel.items()}
    return v | {"ex_twice": v["post_dec"] ** 2}


def cross_drop(measured, predicted, other) -> dict:
    """GV-1's gradient kept across each encoder-attention sub-layer (``measured``) against
    1/√(1 + Var f_cross) (``predicted``), and across the other sub-layers (``other``):
    ``cross_drop``, ``other_drop`` (geometric means), ``cross_err`` (mean |measured/predicted − 1|,
    %) and ``cross_total`` (the product over the decoder)."""
    from .fit import geo_mean

    measured, predicted = np.asarray(measured), np.asarray(predicted)
    return {"cross_drop": geo_mean(measured), "other_drop": geo_mean(other),
            "cross_err": 100 * float(np.mean(np.abs(measured / predicted - 1))),
            "cross_total": float(np.prod(measured))}


def branch_gains(runs: list, key: str, kind: str) -> np.ndarray:
    """Every seed's ``key`` gain (:func:`sublayer_gains`) of the ``kind`` sub-layers, as one
    array; ``runs`` are (profile, gains) per seed."""
    sel = np.array(runs[0][1]["kinds"]) == kind
    return np.array([r[1][key][sel] for r in runs])


def encoder_summary(runs: list) -> dict:
    """One setting of the Post-LN encoder; ``runs`` are (profile of ‖Δx_i‖/‖Δx_top‖,
    :func:`sublayer_gains` of the encoder) per seed. Bottom/top ratio (mean, seed range), the
    forward/backward gains (``v``/``g``) of the attention and FFN branches,
    the common-mode share at the top, and the bottom/top ratio predicted as √∏(1+g)/(1+v) over
    sub-layers 1 … L−1 (``pred``) beside its measurement (``meas``)."""
    prof = np.array([r[0] for r in runs])
    gains = {f"{br}_{vg}": float(branch_gains(runs, key, kind).mean())
             for br, kind in (("attn", "self-attn"), ("ffn", "ffn"))
             for vg, key in (("v", "forward_gain"), ("g", "backward_gain"))}
    prod = {k: float(np.mean([np.sqrt(np.prod(r[1][key])) for r in runs]))
            for k, key in (("pred", "predicted"), ("meas", "measured"))}
    return {"bottom": float(prof[:, 0].mean()), "bottom_lo": float(prof[:, 0].min()),
            "bottom_hi": float(prof[:, 0].max()), **gains,
            "common": float(np.mean([r[1]["common_mode"][-1] for r in runs])), **prod}


def smallest_gradients(balance: dict, k: int = 3) -> list:
    """The names of the ``k`` weight matrices with the smallest gradient RMS in an
    :func:`update_balance`."""
    return [balance["names"][i] for i in np.argsort(np.asarray(balance["grad"]))[:k]]


def last_ffn_grads(task, placement: str, depths, seeds: int = 1, first_seed: int = 0,
                   **kw) -> np.ndarray:
    """The last FFN weight's gradient norm at each of ``depths``: :func:`ffn_grad_profiles`'s
    last column, an array (depths, seeds)."""
    return np.array([ffn_grad_profiles(task, placement, n, seeds=seeds, first_seed=first_seed,
                                       **kw)[:, -1] for n in depths])


def finite_depth_exponent(depths, embed: float, growth: float) -> float:
    """The log-log slope, over ``depths``, of the final LayerNorm's gain (e + g·N)^(−1/2): the
    exponent Theorem 1's argument predicts for Pre-LN at these finite depths, where the
    embedding's share e keeps it above the asymptotic −1/2."""
    from .fit import fit_loglog

    depths = list(depths)
    return float(fit_loglog(depths, [(embed + growth * n) ** -0.5 for n in depths])[0])


def ffn_weight_grad_parts(model, batch, stack: str = "encoder") -> dict:
    """LN-5 taken apart: one backward pass (eval mode) of a Post-LN model; per layer of
    ``stack``, bottom first, ``w2`` = ‖∂L/∂W^{2,l}‖_F with ∂L/∂W^{2,l} = Σ_t Δz_t h_tᵀ, its
    factors ``dz`` = ‖ΔZ‖ (the gradient at the residual sum the layer's last LayerNorm
    reads) and ``h`` = ‖H‖ (the FFN's hidden activations), ``align`` = w2 / (dz · h) in
    [0, 1], and ``stream`` (:func:`sublayer_grad_norms`'s 'norm' for ``stack``)."""
    layers = model.stacks()[stack].layers
    zs, hs = [], []

    def keep_z(module, args, kwargs):
        args[0].retain_grad()
        zs.append(args[0])

    def keep_h(module, args, kwargs):
        hs.append(args[0].detach())

    attach = [(layer.ffn.norm, keep_z) for layer in layers]
    attach += [(layer.ffn.f.fc2, keep_h) for layer in layers]
    with attached(attach, "forward_pre"), mode(model):
        model.zero_grad(set_to_none=True)
        loss_on(model, batch)["loss"].backward()
    w2 = np.array([float(layer.ffn.f.fc2.weight.grad.norm()) for layer in layers])
    dz = np.array([float(z.grad.norm()) for z in zs])
    h = np.array([float(x.norm()) for x in hs])
    model.zero_grad(set_to_none=True)
    stream = sublayer_grad_norms(model, batch)[stack]["norm"]
    return {"w2": w2, "dz": dz, "h": h, "align": w2 / (dz * h), "stream": stream}


def encoder_under_decoder(task, depth: int, seeds: int, batch_size: int, **model_kw) -> dict:
    """LN-5's Post-LN encoder under a decoder of as many layers: :func:`ffn_weight_grad_parts`
    of the encoder, for seed s a model of seed s on ``task.batch(s, batch_size)`` (as
    :func:`ffn_grad_profiles`). Each a mean over seeds of one seed's ratio: ``stream``
    (bottom/top sub-layer gradient), ``w2`` (top/bottom layer's W² gradient) with ``w2_rises``
    (in how many seeds it is > 1), ``dz`` and ``h`` (top/bottom), ``align_bottom`` and
    ``align_top``; with ``depth`` and ``seeds``."""
    from ..nn.model import build_model

    parts = []
    for s in range(seeds):
        m = build_model(n_enc=depth, n_dec=depth, placement="post", seed=s,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab, **model_kw)
        parts.append(ffn_weight_grad_parts(m, task.batch(s, batch_size)))
    top = {k: np.array([p[k][-1] / p[k][0] for p in parts]) for k in ("w2", "dz", "h")}
    return {"depth": depth, "seeds": seeds, **{k: float(r.mean()) for k, r in top.items()},
            "stream": float(np.mean([p["stream"][0] / p["stream"][-1] for p in parts])),
            "w2_rises": int((top["w2"] > 1).sum()),
            "align_bottom": float(np.mean([p["align"][0] for p in parts])),
            "align_top": float(np.mean([p["align"][-1] for p in parts]))}


def last_layer_summary(depths, last: dict, expo: dict, embed: float, growth: float) -> dict:
    """LN-4 read off: ``last`` is {placement: the last FFN weight's mean gradient norm per
    depth}, ``expo`` its per-seed exponent interval (``fit.exponent_interval``). ``embed`` (e)
    and ``growth`` (g) are the real model's embedding share and Pre-LN growth per block, so
    the final LayerNorm reads E‖x_N‖² ≈ (e + g·N)·d: ``k_offset`` is
    :func:`finite_depth_exponent`, ``ex_pred`` the gain ratio √((e + 6g)/(e + 24g)) against the
    fitted ``ex_fit`` = 4^k. ``<placement>_verdict``: is Theorem 1's exponent 'inside' its
    interval or 'outside'?"""
    depths = list(depths)
    paper = [i for i, n in enumerate(depths) if 6 <= n <= 14] or list(range(len(depths)))
    k_offset = finite_depth_exponent(depths, embed, growth)
    out = {"post_paper_range": float(last["post"][paper].mean()),
           "post_min": float(last["post"].min()), "post_max": float(last["post"].max()),
           "pre_first": float(last["pre"][0]), "pre_last": float(last["pre"][-1]),
           "ex_pred": float(np.sqrt((embed + 6 * growth) / (embed + 24 * growth))),
           "ex_fit": float(4 ** expo["pre"]["exponent"]), "k_offset": k_offset,
           "offset_share": 100 * (k_offset + 0.5) / (expo["pre"]["exponent"] + 0.5)}
    for pl, e in expo.items():
        out |= {f"k_{pl}": e["exponent"], f"k_{pl}_lo": e["low"], f"k_{pl}_hi": e["high"],
                f"{pl}_verdict": "inside" if e["low"] <= expected_exponent(pl) <= e["high"]
                else "outside"}
    return out


def gradient_exercises(task, depths, deep: int, batch_size: int, seeds: int = 3,
                       **model_kwargs) -> dict:
    """Chapter 4's exercises, measured. Ex. 2: the Pre-LN exponent of LN-4 without the √d
    embedding scale, over ``depths`` and ``seeds`` seeds (``ln4_ex2_k``, ``_lo``, ``_hi``,
    ``_seeds``). Ex. 3: E‖x^{post,5}‖²/d of ``deep``-layer Post-LN models with FFN width r·d
    beside Lemma 2's (``ln3_ex3_r<r>``, ``ln3_ex3_r<r>_pred``)."""
    from .fit import exponent_interval
    from .hidden import post_ln_sum_norm, post_ln_width_norms

    e = exponent_interval(depths, last_ffn_grads(task, "pre", depths, seeds, batch_size=batch_size,
                                                 embed_scale=False, **model_kwargs))
    out = {"ln4_ex2_k": e["exponent"], "ln4_ex2_lo": e["low"], "ln4_ex2_hi": e["high"],
           "ln4_ex2_seeds": seeds}
    for r, v in post_ln_width_norms(task, (1, 2, 8), deep, batch_size, **model_kwargs).items():
        out |= {f"ln3_ex3_r{r}": v, f"ln3_ex3_r{r}_pred": post_ln_sum_norm(r)}
    return out
