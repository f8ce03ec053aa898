"""What we measure: the probes behind every claim the book checks.

Each probe works on any tfx model (``tfx.model.Transformer``) and returns plain
numbers, numpy arrays or dicts, so a reader can point it at their own model.
The shared mechanism is ``record_branches``: it hooks every residual sub-layer
(``blocks.Residual.hook``) and keeps the residual stream x_{i-1} and the branch
output f_i(x_{i-1}) of one forward pass.
"""
from __future__ import annotations

import contextlib
import copy
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn



@contextlib.contextmanager
def record_branches(model, detach: bool = True):
    """Within the block, every forward pass appends one record per residual sub-layer
    to the yielded dict: ``{stack: [{'name', 'x', 'f'}, …]}`` in forward order, with
    x = x_{i-1} (the stream entering the sub-layer) and f = f_i(x_{i-1}) (its branch)."""
    records = {name: [] for name in model.stacks()}
    hooked = []
    for stack_name, stack in model.stacks().items():
        for name, m in stack.residuals():
            def hook(res, x, fx, stack_name=stack_name, name=name):
                records[stack_name].append({"name": name, "x": x.detach() if detach else x,
                                            "f": fx.detach() if detach else fx})
            m.hook = hook
            hooked.append(m)
    try:
        yield records
    finally:
        for m in hooked:
            m.hook = None


# ============================================================== LayerNorm and gradients at init (LN-1 … LN-5)
# (section owned by the LN chapters)
#
#   ln_jacobian_norm(x, ln=None, eps=1e-5, method="exact"|"power")   LN-1, measured
#   grad_norms(model, batch)                        {parameter name: ‖∂loss/∂θ‖_F}
#   layer_grad_norms(model, batch, stack, param)    one number per layer of a stack
#   last_ffn_grad_norm(model, batch, stack)         ‖∂loss/∂W^{2,N}‖_F (Theorem 1)
#   hidden_norms(model, inputs, stack)              E‖·‖² of the residual sums per layer (Lemma 2)
#   gaussian_inputs(batch, length, d, seed)         x_0 ~ N(0, I_d): the lemma's input
#   xiong_simplified(model, seed)                   W_Q = W_K = 0, Xavier-normal weights (Lemma 2)
#   profile_stats(values)                           monotonicity / flatness of a per-layer profile


def _ln_fn(ln, d, eps):
    """x -> LayerNorm(x): the module ``ln`` if given, else ``F.layer_norm`` without affine."""
    if ln is not None:
        return ln
    return lambda v: F.layer_norm(v, (d,), eps=eps)


def _jacobian_norm_one(f, x, method, iters, tol, seed):
    if method == "exact":
        J = torch.autograd.functional.jacobian(f, x, vectorize=True)
        return float(torch.linalg.matrix_norm(J.detach(), ord=2))
    # power iteration on JᵀJ: v ← Jᵀ(J v) with one jvp and one vjp per step, no d×d matrix
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(x.shape, generator=g, dtype=x.dtype).to(x.device)
    v = v / v.norm()
    sigma = 0.0
    for _ in range(iters):
        _, jv = torch.func.jvp(f, (x,), (v,))
        _, pull = torch.func.vjp(f, x)
        (w,) = pull(jv)
        jv, w = jv.detach(), w.detach()
        new = float(jv.norm())  # ‖J v‖ with ‖v‖ = 1: a lower bound that rises to σ_max
        nw = w.norm()
        if nw == 0:
            return new
        v = w / nw
        if abs(new - sigma) <= tol * max(new, 1e-300):
            return new
        sigma = new
    return sigma


def ln_jacobian_norm(x, ln=None, eps: float = 1e-5, method: str = "auto", iters: int = 100,
                     tol: float = 1e-10, seed: int = 0):
    """Spectral norm ‖∂LN(x)/∂x‖₂ of a LayerNorm at the input ``x``, measured (LN-1).

    ``ln``: an ``nn.LayerNorm`` (its γ, β and eps are used) or None for
    ``F.layer_norm`` with no affine part and variance epsilon ``eps``.
    ``method``: ``"exact"`` builds the d×d Jacobian with autograd and takes its
    largest singular value; ``"power"`` runs power iteration on JᵀJ with one
    forward-mode (jvp) and one reverse-mode (vjp) product per step, never forming
    J, so it works for large d; ``"auto"`` picks exact for d ≤ 512.
    ``x``: a vector (d,) → a float; a batch (..., d) → a numpy array of shape (...).
    Compare with the closed form ``tfx.theory.layernorm_jacobian_norm``.
    """
    x = torch.as_tensor(x)
    if not x.is_floating_point():
        x = x.float()
    d = x.shape[-1]
    if method == "auto":
        method = "exact" if d <= 512 else "power"
    if method not in ("exact", "power"):
        raise ValueError(f"method={method!r}: choose 'exact', 'power' or 'auto'")
    f = _ln_fn(ln, d, eps)
    flat = x.detach().reshape(-1, d)
    out = [_jacobian_norm_one(f, v.clone(), method, iters, tol, seed) for v in flat]
    return out[0] if x.dim() == 1 else np.asarray(out).reshape(x.shape[:-1])


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
    was = model.training
    model.eval()
    try:
        _loss_backward(model, batch)
        out = {n: float(p.grad.norm()) for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad(set_to_none=True)
    finally:
        model.train(was)
    return out


def _stack_name(model, stack):
    stacks = model.stacks()
    if stack is None:  # the stack that produces the outputs
        return "decoder" if "decoder" in stacks else "encoder"
    if stack not in stacks:
        raise ValueError(f"stack={stack!r}: this model has {', '.join(stacks)}")
    return stack


def layer_grad_norms(model, batch=None, stack: str | None = None, param: str = "ffn.f.fc2.weight",
                     grads: dict | None = None) -> np.ndarray:
    """‖∂loss/∂(layers.l.<param>)‖_F for l = 1 … N of one stack, as an array (LN-5).

    ``stack``: 'encoder' or 'decoder' (None: the one feeding the output projection).
    ``param``: the parameter inside each layer, default the FFN's second weight
    W^{2,l}. Pass ``grads`` (from :func:`grad_norms`) to reuse one backward pass."""
    name = _stack_name(model, stack)
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


def _sq(v):
    """Mean over tokens of the squared norm over the last dimension."""
    return float((v.double() ** 2).sum(-1).mean())


@torch.no_grad()
def hidden_norms(model, inputs, stack: str | None = None) -> dict:
    """Mean squared norms (over tokens) of the vectors Lemma 2 is about, per layer (LN-3).

    ``inputs``: a Batch (the model runs on it from its embeddings) or a tensor
    (B, n, d) fed straight into the stack as x_0 (e.g. :func:`gaussian_inputs`,
    the lemma's Gaussian input). Returns numpy arrays over layers l = 1 … N:

    * ``'input'``: ‖x_0‖², the vector entering the stack (a float);
    * ``'attn_sum'``: the attention sub-layer's residual sum x + f;
    * ``'ffn_sum'``: the FFN sub-layer's residual sum x + f. For Post-LN this is
      Xiong et al.'s x_l^{post,5}, the input of the LayerNorm that closes the layer
      (Lemma 2: 1.5 d); for Pre-LN it is the stream after l blocks, x^{pre} "after
      l blocks" (Lemma 2: between (1 + l/2) d and (1 + 3l/2) d);
    * ``'output'``: the layer's output x_l (d for Post-LN, = ffn_sum for Pre-LN).
    Only encoder-type layers (self-attention + FFN) are supported for tensors."""
    name = _stack_name(model, stack)
    st = model.stacks()[name]
    was = model.training
    model.eval()
    try:
        with record_branches(model) as rec:
            if isinstance(inputs, torch.Tensor):
                x = inputs.to(next(model.parameters()).device)
                for layer in st.layers:  # the stack without its final norm
                    x = layer(x)
            else:
                model.loss(inputs.to(next(model.parameters()).device))
    finally:
        model.train(was)
    recs = rec[name]
    per = len(recs) // len(st.layers)
    out = {"input": _sq(recs[0]["x"]), "attn_sum": [], "ffn_sum": [], "output": []}
    for l in range(len(st.layers)):
        layer_recs = recs[l * per:(l + 1) * per]
        attn, ffn = layer_recs[0], layer_recs[-1]
        s = ffn["x"] + ffn["f"]
        out["attn_sum"].append(_sq(attn["x"] + attn["f"]))
        out["ffn_sum"].append(_sq(s))
        res = st.layers[l].ffn
        out["output"].append(_sq(res.norm(s)) if res.placement == "post" else _sq(s))
    return {k: (v if k == "input" else np.array(v)) for k, v in out.items()}


def gaussian_inputs(batch: int, length: int, d: int, seed: int = 0, std: float = 1.0) -> torch.Tensor:
    """x_0 ~ N(0, std² I_d) for every token: (batch, length, d). E‖x_0‖² = std² d.

    The generator's seed is salted: ``torch.manual_seed(seed)`` followed by weight
    draws would otherwise produce these very numbers, and an input equal to the
    first layer's weights is not independent of them."""
    g = torch.Generator().manual_seed(1_000_003 * (seed + 1) + 17)
    return std * torch.randn(batch, length, d, generator=g)


@torch.no_grad()
def xiong_simplified(model, seed: int | None = 0):
    """Put ``model`` in the setting of Xiong et al.'s Lemma 2, in place; returns it.

    Every attention's W_Q and W_K (and their biases) are set to 0, so every query
    attends uniformly and attention returns the mean of the values (with several
    heads this is the same function as one head: each head averages its own slice);
    every other linear weight in the stacks is re-drawn Xavier-normal
    N(0, 2/(fan_in + fan_out)); biases 0; LayerNorm γ = 1, β = 0. For the lemma's
    d×d FFN build the model with ``d_ffn = d_model``. Embeddings and the output
    projection are left alone; feed :func:`gaussian_inputs` to the stack for the
    lemma's Gaussian input."""
    from .blocks import Attention

    if seed is not None:
        torch.manual_seed(seed)
    for st in model.stacks().values():
        for m in st.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
                nn.init.ones_(m.weight)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        for m in st.modules():
            if isinstance(m, Attention):
                for lin in (m.q_proj, m.k_proj):
                    lin.weight.zero_()
                    if lin.bias is not None:
                        lin.bias.zero_()
    return model


def _ranks(v):
    v = np.asarray(v, dtype=float)
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    r[order] = np.arange(len(v), dtype=float)
    for val in np.unique(v):  # average ranks of ties
        tie = v == val
        r[tie] = r[tie].mean()
    return r


def profile_stats(values) -> dict:
    """Shape of a per-layer profile (LN-5): ``spearman`` (rank correlation with the
    layer index: +1 rises all the way to the output, −1 falls, ≈0 flat),
    ``last_over_first`` (value at the top layer / value at the bottom layer),
    ``slope`` (log-log exponent against the layer index 1 … N) and ``cv``
    (standard deviation / mean: 0 is perfectly flat)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        raise ValueError("a profile needs at least two layers")
    idx = np.arange(1, v.size + 1, dtype=float)
    ri, rv = _ranks(idx), _ranks(v)
    sp_ = float(np.corrcoef(ri, rv)[0, 1]) if rv.std() > 0 else 0.0
    from .theory import fit_loglog

    slope = fit_loglog(idx, v)[0] if np.all(v > 0) else float("nan")
    return {"spearman": sp_, "last_over_first": float(v[-1] / v[0]), "slope": float(slope),
            "cv": float(v.std() / v.mean())}


def ffn_grad_profiles(task, placement: str, n_layers: int, seeds: int = 1, batch_size: int = 32,
                      param: str = "ffn.f.fc2.weight", first_seed: int = 0, **model_kw) -> np.ndarray:
    """Per-layer gradient norms at init of fresh encoder-only models on ``task`` (LN-4, LN-5).

    For each seed s a model ``build_model(n_enc=n_layers, n_dec=0, placement=…, seed=s,
    **model_kw)`` gets one backward pass on ``task.batch(s, batch_size)``. Returns an
    array (seeds, n_layers) of ‖∂loss/∂(layers.l.<param>)‖_F; column −1 is the last
    layer's W^{2,N} of Theorem 1."""
    from .model import build_model

    kw = dict(src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab, **model_kw)
    rows = []
    for s in range(first_seed, first_seed + seeds):
        m = build_model(n_enc=n_layers, n_dec=0, placement=placement, seed=s, **kw)
        rows.append(layer_grad_norms(m, task.batch(s, batch_size), "encoder", param))
    return np.array(rows)


# ============================================================== amplification and Admin (GV-1 … GV-3, AM-1, AM-2, AD-1, AD-2)
# (section owned by the amplification chapters)
# Liu et al. 2020, "Understanding the Difficulty of Training Transformers" (the book's ch. 05–07).
# Sub-layers are numbered i = 1 … L in forward order within a stack; x_0 is the stack's input
# (the embedding), x_i the output of sub-layer i, a_i = f_i(·) its residual branch.


def _residuals_of(model, stack: str) -> list:
    """[(name, Residual)] of one stack, in forward order (names relative to the stack)."""
    return model.stacks()[stack].residuals()


def sublayer_kind(name: str) -> str:
    """'self-attn', 'cross-attn' or 'ffn' from a sub-layer's name (``layers.3.cross_attn``)."""
    last = name.rsplit(".", 1)[-1]
    return {"self_attn": "self-attn", "cross_attn": "cross-attn", "ffn": "ffn"}.get(last, last)


def _describe(names: list) -> dict:
    return {"names": list(names), "kinds": [sublayer_kind(n) for n in names],
            "layer": np.array([int(n.split(".")[1]) + 1 if n.startswith("layers.") else 0 for n in names])}


def _run(model, batch):
    """One forward pass through every stack (the training objective, no update)."""
    return model.loss(batch.to(next(model.parameters()).device))


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
    handles = []
    for s in model.stacks():
        for name, m in _residuals_of(model, s):
            def keep(mod, inp, out, s=s, name=name):
                out.retain_grad()
                outs[s].append((name, out))
            handles.append(m.register_forward_hook(keep))
    was = model.training
    model.eval()
    try:
        model.zero_grad(set_to_none=True)
        _run(model, batch)["loss"].backward()
    finally:
        for h in handles:
            h.remove()
        model.train(was)
    res = {}
    for s, recs in outs.items():
        norms = np.array([float(t.grad.norm()) if t.grad is not None else 0.0 for _, t in recs])
        res[s] = {**_describe([n for n, _ in recs]), "norm": norms}
    model.zero_grad(set_to_none=True)
    top = max(float(r["norm"].max()) for r in res.values())
    for r in res.values():
        r["relative"] = r["norm"] / (top if relative_to == "model" else float(r["norm"].max()))
    return res


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

    Returns ``{stack: {"beta", "names", "kinds", "layer", "branch_var", "input_var"}}``
    (Var a_i per sub-layer and Var x_0, scalars over the batch tensor); ``beta``
    is (L+1)×(L+1), row i = x_i, column j = branch j (0: the embedding), NaN above
    the diagonal. Pre-LN at init: β_{i,j} ≈ 1/sqrt(i+1); Post-LN: mass on j = i."""
    was = model.training
    model.eval()
    try:
        with record_branches(model) as rec:
            _run(model, batch)
    finally:
        model.train(was)
    out = {}
    for s, records in rec.items():
        mods = dict(_residuals_of(model, s))
        L = len(records)
        beta = np.full((L + 1, L + 1), np.nan)
        beta[0, 0] = 1.0
        c = [float(records[0]["x"].std())]
        var_f = []
        for i, r in enumerate(records, start=1):
            res, x, f = mods[r["name"]], r["x"], r["f"]
            vf = float(f.var())
            var_f.append(vf)
            p = res.placement
            if p in ("pre", "none"):
                g, h, x_out = 1.0, 1.0, x + f
            elif p == "rezero":
                g, h = 1.0, float(res.alpha)
                x_out = x + h * f
            else:  # post, admin, deepnorm: LN(g·x + f)
                gx = x * res.omega if p == "admin" else (res.alpha * x if p == "deepnorm" else x)
                z = gx + f
                x_out = res.norm(z)
                ln_scale = float(x_out.std() / z.std())
                g, h = float(gx.std() / x.std()) * ln_scale, ln_scale
            c = [g * cj for cj in c] + [h * math.sqrt(vf)]
            beta[i, : i + 1] = np.array(c) / float(x_out.std())
        out[s] = {"beta": beta, **_describe([r["name"] for r in records]), "branch_var": np.array(var_f),
                  "input_var": float(records[0]["x"].var())}
    return out


def admin_omegas(model) -> dict:
    """AD-1: Admin's ω per sub-layer, ``{stack: array}`` of each ω vector's mean (the
    vector is constant at initialisation); NaN for sub-layers without ω."""
    return {s: np.array([float(m.omega.detach().mean()) if hasattr(m, "omega") else np.nan
                          for _, m in _residuals_of(model, s)]) for s in model.stacks()}


# ------------------------------------------------------------------ output change (AM-2)
def stack_output(model, batch, stack: str | None = None):
    """F(x_0, W): the hidden output of ``stack`` (default: the encoder when there is
    one, as in Liu et al.'s Fig. 4), before the output projection."""
    stack = stack or ("encoder" if model.cfg.n_enc else "decoder")
    if stack not in model.stacks():
        raise ValueError(f"stack={stack!r}: this model has {list(model.stacks())}")
    batch = batch.to(next(model.parameters()).device)
    if stack == "encoder":
        return model.encode(batch.src)
    if model.cfg.kind == "decoder":
        return model.decode(batch.tgt[:, :-1])
    return model.decode(batch.tgt[:, :-1], model.encode(batch.src), batch.src)


def _selected(model, which: str) -> list:
    if which == "layers":  # what Theorem 2 calls W: the stacks' parameters, the input x_0 held fixed
        return [(n, p) for n, p in model.named_parameters() if n.startswith(("encoder.", "decoder."))]
    if which == "all":
        return list(model.named_parameters())
    raise ValueError(f"which={which!r}: choose 'layers' (the stacks' parameters) or 'all'")


@torch.no_grad()
def perturb_random(model, scale: float = 1e-2, which: str = "layers", seed: int = 0):
    """A copy of ``model`` with W* = W + δ, δ = scale · std(W) · N(0, 1) for every
    weight *matrix* W (vectors such as biases, LayerNorm γ and Admin's ω are left
    alone; their spread is zero at init). ``which='layers'`` perturbs the stacks only."""
    new = copy.deepcopy(model)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    for _, p in _selected(new, which):
        if p.ndim >= 2:
            noise = torch.randn(p.shape, generator=gen).to(p.device, p.dtype)
            p.add_(scale * p.std() * noise)
    return new


def adam_step(model, batch, lr: float = 1e-5, betas=(0.9, 0.98), eps: float = 1e-8, which: str = "layers"):
    """A copy of ``model`` after one Adam step on the training loss of ``batch``
    (W* = W + Adam(∇W)). The first Adam step moves each selected parameter by
    ≈ lr · sign(gradient), whatever the gradient's size."""
    new = copy.deepcopy(model)
    params = [p for _, p in _selected(new, which)]
    opt = torch.optim.Adam(params, lr=lr, betas=tuple(betas), eps=eps)
    was = new.training
    new.eval()
    new.zero_grad(set_to_none=True)
    _run(new, batch)["loss"].backward()
    opt.step()
    new.zero_grad(set_to_none=True)
    new.train(was)
    return new


@torch.no_grad()
def output_change(model, batch, perturbation: str = "random", scale: float = 1e-2, lr: float = 1e-5,
                  which: str = "layers", stack: str | None = None, seed: int = 0) -> float:
    """AM-2: ‖F(x_0, W) − F(x_0, W*)‖², summed over the d features and averaged over
    the tokens of ``batch`` (Liu et al. 2020, Fig. 4). W* comes from ``perturb_random``
    (``perturbation='random'``, δ = scale · each matrix's std) or ``adam_step``
    (``perturbation='adam'``, learning rate ``lr``). The model is not changed."""
    was = model.training
    model.eval()
    try:
        if perturbation == "random":
            other = perturb_random(model, scale, which, seed)
        elif perturbation == "adam":
            with torch.enable_grad():
                other = adam_step(model, batch, lr=lr, which=which)
        else:
            raise ValueError(f"perturbation={perturbation!r}: choose 'random' or 'adam'")
        other.eval()
        a, b = stack_output(model, batch, stack), stack_output(other, batch, stack)
    finally:
        model.train(was)
    return float((a - b).pow(2).sum(-1).mean())


SCHEMES = {  # name -> (placement, init) for the depth sweeps
    "post": ("post", "xavier"), "pre": ("pre", "xavier"), "admin": ("admin", "admin"),
    "admin-profiling-free": ("admin", "admin-profiling-free"),
}


def build_scheme(scheme: str, task, n_layers: int, batch=None, seed: int = 0, n_dec: int = 0, **model_kw):
    """An encoder-only (``n_dec=0``) or encoder–decoder model of ``scheme`` in
    ``SCHEMES`` (post, pre, admin, admin-profiling-free), sized by ``model_kw``
    (e.g. ``P.model_kwargs()``); ``batch`` feeds Admin's profiling pass."""
    from .config import ModelConfig
    from .model import build_model

    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r}: choose one of {', '.join(SCHEMES)}")
    placement, init = SCHEMES[scheme]
    cfg = ModelConfig.for_task(task, n_enc=n_layers, n_dec=n_dec, placement=placement, init=init, **model_kw)
    return build_model(cfg, batch=batch if init == "admin" else None, seed=seed)


def output_change_sweep(task, depths, schemes=("post", "pre", "admin"), seeds: int = 1, batch_size: int = 32,
                        perturbation: str = "random", scale: float = 1e-2, lr: float = 1e-5,
                        **model_kw) -> dict:
    """AM-2 against depth: ``output_change`` of encoder-only models with N ∈ ``depths``
    layers, for each scheme, averaged over ``seeds`` (each seed: a fresh init, a fresh
    δ). One batch of ``task`` is the input x_0 and Admin's profiling batch.

    Alongside, ``res["sum_beta_sq"][scheme]`` holds Σ_i β²_{i,i} of the same models
    (``layer_dependency``): Theorem 2 says the output change is C times it.

    Returns ``{"depths": array, scheme: array (len(depths), seeds), "sum_beta_sq": {scheme: array}}``."""
    batch = task.batch(0, batch_size)
    res = {"depths": np.asarray(depths), "sum_beta_sq": {}}
    for sch in schemes:
        vals = np.zeros((len(depths), seeds))
        sb = np.zeros((len(depths), seeds))
        for a, n in enumerate(depths):
            for s in range(seeds):
                m = build_scheme(sch, task, n, batch=batch, seed=s, **model_kw)
                vals[a, s] = output_change(m, batch, perturbation, scale=scale, lr=lr, seed=1000 + s)
                sb[a, s] = float(np.nansum(np.diag(layer_dependency(m, batch)["encoder"]["beta"])[1:] ** 2))
        res[sch] = vals
        res["sum_beta_sq"][sch] = sb
    return res


# ------------------------------------------------------------------ unbalanced gradients (GV-3)
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
    from .config import TrainConfig
    from .train import make_optimizer

    m = copy.deepcopy(model)
    m.train()
    dev = next(m.parameters()).device
    chosen = [(n, p) for n, p in m.named_parameters() if select(n, p)]
    if not chosen:
        raise ValueError("select() chose no parameter")
    start = [p.detach().clone() for _, p in chosen]
    opt = make_optimizer(m.parameters(), TrainConfig(optimizer=optimizer, lr=lr, momentum=momentum))
    gsum = np.zeros(len(chosen))
    losses = []
    for step in range(steps):
        loss = m.loss(task.batch(step, batch_size).to(dev))["loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gsum += [float(p.grad.norm()) if p.grad is not None else 0.0 for _, p in chosen]
        opt.step()
        losses.append(float(loss.detach()))
    grad = gsum / steps
    upd = np.array([float((p.detach() - s).norm()) for (_, p), s in zip(chosen, start)])
    return {"names": [n for n, _ in chosen], "grad": grad, "update": upd,
            "relative_grad": grad / grad.max(), "relative_update": upd / upd.max(), "loss": losses}


def log_spread(values, q: float = 0.1) -> float:
    """How many decades separate the (1−q) and q quantiles of positive ``values``:
    log10(quantile(1−q) / quantile(q)). 0 means all equal."""
    v = np.asarray(values, dtype=float)
    v = v[v > 0]
    return float(np.log10(np.quantile(v, 1 - q) / np.quantile(v, q)))


@torch.no_grad()
def max_output_difference(model_a, model_b, batch) -> float:
    """AD-2: the largest |logit difference| of two models on ``batch`` (eval mode)."""
    outs = []
    for m in (model_a, model_b):
        was = m.training
        m.eval()
        b = batch.to(next(m.parameters()).device)
        if m.cfg.kind == "encoder":
            outs.append(m(src=b.src))
        elif m.cfg.kind == "decoder":
            outs.append(m(tgt_in=b.tgt[:, :-1]))
        else:
            outs.append(m(src=b.src, tgt_in=b.tgt[:, :-1]))
        m.train(was)
    return float((outs[0] - outs[1]).abs().max())
