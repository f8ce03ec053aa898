"""Initialisers: one function each, the formula and the paper in its docstring.

``initialize(model, scheme, batch)`` is the one place that decides which runs.
Names of the weights they touch: attention ``q_proj k_proj v_proj out_proj``,
FFN ``fc1 fc2``, embeddings ``src_embed.tok`` / ``tgt_embed.tok``.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .blocks import NORM_TYPES, Attention, FeedForward, Residual
from .config import INITS
from .constants import (admin_omega_profiling_free, deepnorm_constants, lipschitz_embedding_bound,
                        lipschitz_linear_bound, subln_gain, tfixup_scale_factors)
from .hooks import attached, loss_on, mode


# ----------------------------------------------------------------- helpers
def _stack_embeddings(model):
    """[(stack name, Stack, Embedding)] for the stacks the model has."""
    out = []
    if hasattr(model, "encoder"):
        out.append(("encoder", model.encoder, model.src_embed))
    if hasattr(model, "decoder"):
        out.append(("decoder", model.decoder, model.tgt_embed))
    return out


def value_output_ffn(stack, cross: bool = True):
    """The weights T-Fixup, DeepNorm and Sub-LN rescale: v_proj, out_proj, fc1, fc2 (not
    q_proj, k_proj); ``cross=False`` leaves out the decoder's cross-attention."""
    ws = []
    for name, m in stack.named_modules():
        if isinstance(m, Attention) and (cross or "cross_attn" not in name):
            ws += [m.v_proj.weight, m.out_proj.weight]
        elif isinstance(m, FeedForward):
            ws += [m.fc1.weight, m.fc2.weight]
    return ws


@torch.no_grad()
def _reset_norms_and_residuals(model):
    for m in model.modules():
        if isinstance(m, NORM_TYPES):  # γ = 1, β = 0; DyT's α its initial value
            m.reset_parameters()
        if isinstance(m, Residual):
            if m.placement == "admin":
                m.omega.fill_(1.0)
            if m.placement == "rezero":
                m.alpha.zero_()


# ----------------------------------------------------------------- initialisers
@torch.no_grad()
def xavier_linear_(lin: nn.Linear):
    """Xavier-uniform weight U(±sqrt(6/(fan_in+fan_out))) (Glorot & Bengio 2010), zero bias."""
    nn.init.xavier_uniform_(lin.weight)
    if lin.bias is not None:
        nn.init.zeros_(lin.bias)


@torch.no_grad()
def xavier(model):
    """The default (Vaswani et al. 2017; fairseq): every linear weight Xavier-uniform
    U(±sqrt(6/(fan_in+fan_out))) (Glorot & Bengio 2010), biases 0; token and learned
    position embeddings N(0, d^{-1/2}) (a standard deviation); norms γ=1, β=0
    (DyT's α its initial ``dyt_alpha``); Admin's ω = 1 and ReZero's α = 0."""
    d = model.cfg.d_model
    for m in model.modules():
        if isinstance(m, nn.Linear):
            xavier_linear_(m)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=d**-0.5)
    for _, _, emb in _stack_embeddings(model):
        if isinstance(emb.pos, nn.Parameter):
            nn.init.normal_(emb.pos, std=d**-0.5)
    if not model.cfg.tie_embeddings:
        nn.init.normal_(model.out_proj.weight, std=d**-0.5)
    _reset_norms_and_residuals(model)


@torch.no_grad()
def t_fixup(model, weights: bool = True, embeddings: bool = True):
    """T-Fixup (Huang et al. 2020), for models with no normalisation (placement 'none').

    Xavier everywhere, embeddings N(0, d^{-1/2}); then
      encoder: embeddings × (9 N_e)^{-1/4};  v_proj, out_proj, fc1, fc2 × 0.67 N_e^{-1/4}
      decoder: embeddings × (9 N_d)^{-1/4};  v_proj, out_proj, fc1, fc2 (self- and
               cross-attention) × (9 N_d)^{-1/4}
    q_proj and k_proj are left as they are. Meant to train with no warmup.

    ``weights=False`` or ``embeddings=False`` leaves that factor out (the initialisers
    't-fixup-embeddings' and 't-fixup-weights': an ablation, not the paper's scheme)."""
    xavier(model)
    stacks = _stack_embeddings(model)
    n = {name: len(stack.layers) for name, stack, _ in stacks}
    factors = tfixup_scale_factors(n.get("encoder", 0), n.get("decoder", 0))
    for name, stack, emb in stacks:
        if embeddings:
            emb.tok.weight.mul_(factors[name]["embedding"])
        if weights:
            for w in value_output_ffn(stack):
                w.mul_(factors[name]["weights"])


@torch.no_grad()
def lipschitz(model, embeddings: bool = True):
    """Lipschitz-constrained initialisation (Xu et al. 2020, §4).

    Embeddings U(−e, e) with e = sqrt(2 / (esize + vsize)); every linear layer
    U(−l, l) with l = sqrt(1 / isize) (isize its input width); biases 0. Keeps the
    standard deviation of each residual sum ≤ 1 so that, in the v1 (Post-LN) order,
    the LayerNorm does not shrink the carried residual (w/σ ≥ 1). The half-widths are
    ``tfx.nn.constants.lipschitz_init_bounds``'s.

    ``embeddings=False`` keeps Xavier's embeddings, N(0, d^{-1/2}) (the initialiser
    'lipschitz-linears': an ablation, not the paper's scheme). The linear rule alone is Xavier
    rescaled to the variance l²/3 = 1/(3·isize): a uniform draw of one variance is one draw."""
    xavier(model)  # norms, ω, α, positions
    for m in model.modules():
        if isinstance(m, nn.Linear):
            bound = lipschitz_linear_bound(m.in_features)
            nn.init.uniform_(m.weight, -bound, bound)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding) and embeddings:
            e = lipschitz_embedding_bound(m.embedding_dim, m.num_embeddings)
            nn.init.uniform_(m.weight, -e, e)


@torch.no_grad()
def deepnorm(model):
    """DeepNorm init (Wang et al. 2022): Xavier, but v_proj, out_proj, fc1, fc2 drawn
    with Xavier gain β (``tfx.nn.constants.deepnorm_constants``); q_proj, k_proj with gain 1.
    The α of x ← LN(α x + f(x)) is a constant of the architecture (blocks.Residual)."""
    xavier(model)
    c = deepnorm_constants(model.cfg.n_enc, model.cfg.n_dec)
    for name, stack, _ in _stack_embeddings(model):
        beta = c[name]["beta"]
        for w in value_output_ffn(stack):
            nn.init.xavier_uniform_(w, gain=beta)


@torch.no_grad()
def subln(model):
    """Sub-LN init (Magneto, Wang et al. 2022, wang2022magneto; torchscale's ``subln``), for
    placement 'sub-ln': Xavier, then v_proj, out_proj, fc1 and fc2 × γ
    (``tfx.nn.constants.subln_gain``): γ = sqrt(log 2N) in an encoder- or decoder-only model
    of N layers; in an encoder-decoder (N, M layers) the encoder's γ = sqrt(log(3M)·log(2N)/3),
    the decoder's sqrt(log 3M), its cross-attention left at Xavier (as torchscale)."""
    xavier(model)
    gain = subln_gain(model.cfg.n_enc, model.cfg.n_dec)
    for name, stack, _ in _stack_embeddings(model):
        for w in value_output_ffn(stack, cross=False):
            w.mul_(gain[name])


@torch.no_grad()
def rezero(model):
    """ReZero (Bachlechner et al. 2021): x + α·f(x) with α = 0, so the network is the
    identity map at initialisation; all other weights Xavier."""
    xavier(model)


ADMIN_PROFILING = ("train", "eval")  # dropout on (the authors' way) or off in the profiling pass


@torch.no_grad()
def admin(model, batch, profiling: str | None = None):
    """Admin (Liu et al. 2020, §4.3): x_i = LN(x_{i-1}·ω_i + f_i(x_{i-1})).

    Profiling: one forward pass (no update) records Var[f_i(x_{i-1})] for every
    residual sub-layer. Initialisation: ω_i = sqrt(Σ_{j<i} Var[f_j]) (plus the
    variance of the embedding), done in the same pass as the authors' code does:
    a running ``ratio`` starts at 1.0 for each stack; at sub-layer i set ω_i ← ratio,
    then ratio ← sqrt(Var[x_{i-1}·ω_i] + Var[f_i]), variances over the whole batch
    tensor. The encoder (2 sub-layers a layer) and the decoder (3) have their own
    ratio. Keep the batch small (the paper: ≤ 8192 tokens).

    ``profiling`` (default ``model.cfg.admin_profiling``, else ``"train"``):
      ``"train"``  as the authors' fairseq code does it: ω is set in the first
                   *training* forward pass, so dropout is active and the measured
                   variances include its 1/(1−p) inflation — larger ω with dropout > 0.
      ``"eval"``   with dropout off (tfx's earlier default): the variances of the
                   network as it predicts. Without dropout the two are identical.
    """
    if batch is None:
        raise ValueError("init='admin' needs batch=…: a batch for Admin's profiling forward pass")
    if profiling is None:
        profiling = getattr(model.cfg, "admin_profiling", "train")
    if profiling not in ADMIN_PROFILING:
        raise ValueError(f"profiling={profiling!r} is not allowed; choose one of: "
                         f"{', '.join(map(repr, ADMIN_PROFILING))}")
    xavier(model)

    def profile(state):  # one running ratio per stack
        def hook(res, x, fx):
            res.omega.fill_(state["ratio"])
            state["ratio"] = math.sqrt(float((x * res.omega).var()) + float(fx.var()))
        return hook

    hooks = []
    for _, stack, _ in _stack_embeddings(model):
        hook = profile({"ratio": 1.0})
        hooks += [(m, hook) for _, m in stack.residuals()]
    # dropout on (the authors' way) or off
    with attached(hooks, "branch"), mode(model, training=profiling == "train"):
        loss_on(model, batch)


@torch.no_grad()
def admin_profiling_free(model):
    """Admin without profiling: every ω = sqrt((n+1)/ln(n+1) − 1), n = residual
    sub-layers in its stack (2 per encoder layer, 3 per decoder layer)."""
    xavier(model)
    for _, stack, _ in _stack_embeddings(model):
        subs = stack.residuals()
        for _, m in subs:
            m.omega.fill_(admin_omega_profiling_free(len(subs)))


# name -> initialiser(model, batch): the functions behind tfx.nn.config.INITS, the one registry of
# initialiser names (and the placements each is defined for); the two have the same keys.
INITIALISERS = {
    "xavier": lambda model, batch: xavier(model),
    "t-fixup": lambda model, batch: t_fixup(model),
    "t-fixup-weights": lambda model, batch: t_fixup(model, embeddings=False),
    "t-fixup-embeddings": lambda model, batch: t_fixup(model, weights=False),
    "lipschitz": lambda model, batch: lipschitz(model),
    "lipschitz-linears": lambda model, batch: lipschitz(model, embeddings=False),
    "admin": admin,
    "admin-profiling-free": lambda model, batch: admin_profiling_free(model),
    "deepnorm": lambda model, batch: deepnorm(model),
    "rezero": lambda model, batch: rezero(model),
    "subln": lambda model, batch: subln(model),
}


if INITIALISERS.keys() != INITS.keys():  # a name added to one and not the other fails at import
    raise ImportError(f"tfx.nn.init.INITIALISERS {sorted(INITIALISERS)} and tfx.nn.config.INITS "
                      f"{sorted(INITS)} must name the same initialisers")


def initialize(model, init: str, batch=None):
    """Initialise ``model`` in place with ``init`` (a key of tfx.nn.config.INITS); returns it."""
    if init not in INITS:
        raise ValueError(f"init={init!r} is not an initialiser; choose one of: {', '.join(INITS)}")
    INITIALISERS[init](model, batch)
    return model


# ----------------------------------------------------------------- Admin → Post-LN
@torch.no_grad()
def reparameterize_admin(model):
    """Fold Admin's ω into the weights: a plain Post-LN model computing the same function.

    LN(x·ω + f(x)) with x = γ⊙n + b the output of the previous norm (or the
    embedding s·E[t] + P for the first sub-layer): scale that producer by ω
    (γ, b ← γω, bω; or E, P ← Eω, Pω), so it emits x·ω, and undo it where f reads
    x: W ← W diag(1/ω) for the q/k/v projections of self-attention, the query
    projection of cross-attention, and fc1. Tied embeddings are untied (the output
    projection keeps E). Returns a new model, on ``model``'s device and in its dtype;
    ``model`` (and the random state) are not changed."""
    cfg = model.cfg
    new_cfg = cfg.replace(
        placement="post",
        enc_placement="post" if cfg.enc_placement == "admin" else cfg.enc_placement,
        dec_placement="post" if cfg.dec_placement == "admin" else cfg.dec_placement,
        init="xavier", tie_embeddings=False,
    )
    with torch.device("meta"):  # no memory, no random draws: every tensor comes from ``model``
        new = type(model)(new_cfg)  # the model's own class: init needs no import of tfx.nn.model
    # copies that keep each tensor's dtype and device (assign=True); tied weights become two copies
    state = {k: v.detach().clone() for k, v in model.state_dict().items() if not k.endswith(".omega")}
    new.load_state_dict(state, assign=True)
    for (_, stack, _), (_, new_stack, new_emb) in zip(_stack_embeddings(model), _stack_embeddings(new)):
        if stack.placement != "admin":
            continue
        new_res = new_stack.residuals()
        for k, ((_, old), (name, res)) in enumerate(zip(stack.residuals(), new_res)):
            w = old.omega.detach()
            if k == 0:
                new_emb.tok.weight.mul_(w)
                new_emb.pos.mul_(w)
            else:
                prev = new_res[k - 1][1].norm
                prev.weight.mul_(w)
                if getattr(prev, "bias", None) is not None:
                    prev.bias.mul_(w)
            f = res.f
            readers = [f.fc1] if isinstance(f, FeedForward) else (
                [f.q_proj] if name.endswith("cross_attn") else [f.q_proj, f.k_proj, f.v_proj])  # k, v read the encoder
            for lin in readers:
                lin.weight.div_(w)  # broadcasts over columns: W diag(1/ω)
    return new

