"""Configuration dataclasses, validated on construction.

Every field is checked when a config is made (and again by ``replace``): a bad
value raises ``ValueError`` naming the field, the value and what is allowed, so
a typo in a notebook fails on the line that made it — never a ``TypeError`` from
a comparison deep inside, never silently accepted. Accepted values are stored
as plain Python values (a NumPy integer as ``int``, a ``torch.device`` or a path
as ``str``), so a config always round-trips through JSON.

Each class lists its fields' rules in one table (``_MODEL_RULES``,
``_TRAIN_RULES``: field → rule); checks that relate several fields follow it.
A new field needs one line in its class's table.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import os
import reprlib
from dataclasses import dataclass

import torch

# Where the residual connection and the normalisation sit (blocks.Residual, its docstring's table).
PLACEMENTS = ("post", "pre", "admin", "rezero", "deepnorm", "none", "peri-ln", "output-norm", "sub-ln")
PRE_NORM = ("pre", "peri-ln", "sub-ln")  # a norm on the branch's input, N(x_{i-1})
OUT_NORM = ("peri-ln", "output-norm")  # a norm on the branch's output, N_out(f_i(…))
SUM_NORM = ("post", "admin", "deepnorm")  # a norm on the residual sum
INNER_NORM = ("sub-ln",)  # a norm inside the branch (before out_proj and fc2)
FINAL_NORM = ("pre", "peri-ln", "output-norm", "sub-ln")  # the stack ends with a norm
# LayerNorm (Ba et al. 2016), RMSNorm (zhang2019rmsnorm), Dynamic Tanh (zhu2025dyt)
NORMS = ("layernorm", "rmsnorm", "dyt")
ACTIVATIONS = ("relu", "gelu")
POSITIONS = ("sinusoidal", "learned")
# Which initialiser (tfx.nn.init), and the placement each one is defined for (None: any).
INITS = {
    "xavier": None,
    "t-fixup": ("none",),
    # T-Fixup's two factors one at a time (an ablation: which of them lets a no-LN model train)
    "t-fixup-weights": ("none",),
    "t-fixup-embeddings": ("none",),
    "lipschitz": None,
    # Xu et al.'s rule for the linear layers only, Xavier's embeddings (an ablation of LP-3)
    "lipschitz-linears": None,
    "admin": ("admin",),
    "admin-profiling-free": ("admin",),
    "deepnorm": ("deepnorm",),
    "rezero": ("rezero",),
    "subln": ("sub-ln",),
}
# Named schemes: the ModelConfig options of each fix the book compares (every other field at its
# default: init 'xavier', norm 'layernorm'). The one registry of scheme names: the theory builds
# them (tfx.nn.model.build_scheme), the book labels them (tfx.book.plot.LABELS).
SCHEMES = {
    "post": {"placement": "post"},  # Post-LN (Vaswani et al. 2017)
    "pre": {"placement": "pre"},  # Pre-LN
    "admin": {"placement": "admin", "init": "admin"},  # profiled ω (liu2020admin)
    "admin-profiling-free": {"placement": "admin", "init": "admin-profiling-free"},  # admin-torch's ω
    "t-fixup": {"placement": "none", "init": "t-fixup"},  # no norm (huang2020tfixup)
    "t-fixup-weights": {"placement": "none", "init": "t-fixup-weights"},  # ablations of T-Fixup
    "t-fixup-embeddings": {"placement": "none", "init": "t-fixup-embeddings"},
    "lipschitz": {"placement": "post", "init": "lipschitz"},  # Xu et al.'s v1 order is Post-LN
    "lipschitz-linears": {"placement": "post", "init": "lipschitz-linears"},  # an ablation of it
    "rezero": {"placement": "rezero", "init": "rezero"},
    "deepnorm": {"placement": "deepnorm", "init": "deepnorm"},
    "peri-ln": {"placement": "peri-ln"},  # kim2025periln
    "output-norm": {"placement": "output-norm"},  # OLMo 2's reordered norm (olmo2025)
    "sub-ln": {"placement": "sub-ln", "init": "subln"},  # wang2022magneto
    "ln-scaling": {"placement": "pre", "ln_scaling": True},  # Pre-LN, norm of layer ℓ × 1/√ℓ (sun2025curse)
    "dyt": {"placement": "pre", "norm": "dyt"},  # Pre-LN with Dynamic Tanh for every norm (zhu2025dyt)
    "depth-mup": {"placement": "pre", "depth_mup": True},  # every branch × 1/√L (yang2023depthmup)
}
# The precisions a run's forward pass may use, by name: the one spelling of a precision in tfx
# (TrainConfig.amp_dtype, History.amp_dtype). Its torch dtype: torch_dtype(name); torch's own
# name of it ('bfloat16', what a Record's amp_dtype holds) is derived from that, never typed.
AMP_DTYPES = ("bf16", "fp16", "fp32")
# adam-atan2: everett2024scaling; muon (jordan2024muon, liu2025muon): the 'hidden' kind only
OPTIMIZERS = ("adam", "adamw", "sgd", "radam", "adam-atan2", "muon")
# How weights and their learning rates scale with the width d (tfx.nn.mup): the standard
# parameterisation, or μP for Adam (Tensor Programs V, yang2022tp5) relative to a base width.
PARAMETERIZATIONS = ("standard", "mup")
# What a parameter is, as tfx.nn.mup.parameter_kind decides it: a 2-D weight of a hidden nn.Linear,
# an embedding table, a vector (bias, norm gain, ω, α) or the readout (the model's out_proj).
# μP gives each kind its rate; TrainConfig.optimizer_by_kind may give each its optimiser.
PARAMETER_KINDS = ("hidden", "embedding", "vector", "readout")
SCHEDULES = ("constant", "inverse-sqrt", "linear-decay", "cosine", "wsd-linear", "wsd-sqrt")
# What the one step does about a spike of the gradient norm or the loss (tfx.nn.optim.SpikeGuard)
SPIKE_GUARDS = ("none", "clip-percentile", "clip-zscore", "skip-zscore", "rollback")
# What a spike-zoo run does to itself at TrainConfig.inject_step (tfx.runs.train; SZ-1, SZ-3)
INJECTIONS = ("none", "repeated-ngram", "lr-bump", "fresh-moments", "data-reset")
WEIGHT_DECAY_MODES = ("coupled", "independent")
DEVICE_TYPES = ("cpu", "cuda", "mps")
SEED_LIMIT = 2**64  # torch.manual_seed takes seeds in [0, 2**64)
# The stride between the random streams of consecutive seeds (a task's batches, a corpus's epochs,
# the theory's Gaussian inputs; tfx.nn.optim's DATA_STREAM): a prime, not a power of two, since
# torch's CPU generator keeps only the low 32 bits of a seed (2**32 would give every seed one stream).
SEED_STRIDE = 1_000_003

_TORCH_DTYPES = dict(zip(AMP_DTYPES, (torch.bfloat16, torch.float16, torch.float32)))


def torch_dtype(amp_dtype: str) -> torch.dtype:
    """The torch dtype of a precision named in :data:`AMP_DTYPES` ('bf16' → torch.bfloat16)."""
    return _TORCH_DTYPES[_check_choice("amp_dtype", amp_dtype, AMP_DTYPES)]


def autocast_dtype(amp_dtype: str) -> torch.dtype | None:
    """The dtype ``torch.autocast`` runs ``amp_dtype`` in; None for 'fp32' (no autocast)."""
    return None if amp_dtype == "fp32" else torch_dtype(amp_dtype)


# ----------------------------------------------------------------------------- rules
# A check takes (name, value, ...), raises ValueError or returns the value to store.

_short = reprlib.Repr()
_short.maxstring, _short.maxlong, _short.maxother = 60, 40, 60


def _fail(name, value, allowed):
    raise ValueError(f"{name}={_short.repr(value)} must be {allowed}")


def _interval(low, high, low_open, high_open) -> str:
    if high is None:
        return f"> {low}" if low_open else f"≥ {low}"
    return f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"


def _check_number(name, value, low=None, high=None, low_open=False, high_open=False) -> float:
    """A finite real number (not a bool) in the interval; returned as a float."""
    allowed = "a finite number" + ("" if low is None else " " + _interval(low, high, low_open, high_open))
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(name, value, allowed)
    try:
        x = float(value)
    except OverflowError:  # an integer too large for a float
        _fail(name, value, allowed)
    if not math.isfinite(x):
        _fail(name, value, allowed)
    if low is not None and (x < low or (low_open and x == low)):
        _fail(name, value, allowed)
    if high is not None and (x > high or (high_open and x == high)):
        _fail(name, value, allowed)
    return x


def _check_int(name, value, low, what="", high=None) -> int:
    """An integer (not a bool, not a float) with low ≤ value (< high); returned as an int."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low or (
            high is not None and value >= high):
        if high is None:
            bound = f"≥ {low}"
        else:  # '2**64', not '18446744073709551616'
            top = f"2**{high.bit_length() - 1}" if high > 2**16 and not high & (high - 1) else high
            bound = f"in [{low}, {top})"
        _fail(name, value, f"an integer {bound}{what}")
    return int(value)


def _check_positive(name, value) -> float:
    return _check_number(name, value, low=0, low_open=True)


def _check_prob(name, value) -> float:
    return _check_number(name, value, low=0, high=1, high_open=True)


def _check_bool(name, value) -> bool:
    if not isinstance(value, bool):
        _fail(name, value, "True or False")
    return value


def _check_choice(name, value, allowed) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}={_short.repr(value)} is not allowed; choose one of: {', '.join(map(repr, allowed))}")
    return str(value)


def _check_pair(name, value, check, allowed) -> tuple:
    """Two values (a tuple or list), each passing ``check``; returned as a tuple."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2:
        _fail(name, value, allowed)
    try:
        return tuple(check(name, v) for v in value)
    except ValueError:
        _fail(name, value, allowed)


def _check_device(name, value) -> str:
    """A device torch.device understands, of a type we train on; not required to be present."""
    allowed = f"a device such as 'cpu', 'cuda', 'cuda:0' or 'mps' (types {', '.join(DEVICE_TYPES)})"
    if not isinstance(value, (str, torch.device)):
        _fail(name, value, allowed)
    try:
        device = torch.device(value)
    except (RuntimeError, TypeError, ValueError):
        _fail(name, value, allowed)
    # torch reads the index into 8 bits ('cuda:130' becomes cuda:-126): a string must read back as itself
    if device.type not in DEVICE_TYPES or (isinstance(value, str) and str(device) != value):
        _fail(name, value, allowed)
    return str(device)


def _check_path(name, value) -> str:
    path = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(path, str) or not path:
        _fail(name, value, "a file path (a non-empty str or pathlib.Path)")
    return path


def _check_optimizer_by_kind(name, value) -> dict:
    """A non-empty dict {parameter kind: optimiser name}, kinds from :data:`PARAMETER_KINDS` and
    optimisers from :data:`OPTIMIZERS`; returned as a plain dict of str."""
    allowed = (f"a non-empty dict {{kind: optimizer}} with kinds from {', '.join(map(repr, PARAMETER_KINDS))} "
               f"and optimizers from {', '.join(map(repr, OPTIMIZERS))}, e.g. {{'hidden': 'sgd'}}")
    if not isinstance(value, dict) or not value:
        _fail(name, value, allowed)
    if not all(isinstance(k, str) and k in PARAMETER_KINDS and isinstance(v, str) and v in OPTIMIZERS
               for k, v in value.items()):
        _fail(name, value, allowed)
    return {str(k): str(v) for k, v in value.items()}


def _rule(check, *args, optional=False, **kwargs):
    """A table entry: ``check(name, value, *args, **kwargs)``; ``optional``: None is allowed too."""
    def rule(name, value):
        if not optional:
            return check(name, value, *args, **kwargs)
        if value is None:
            return None
        try:
            return check(name, value, *args, **kwargs)
        except ValueError as e:
            raise ValueError(f"{e}, or None") from None
    return rule


def _validate(config, rules):
    """Check each field named in ``rules`` and store the value its rule returns."""
    for name, rule in rules.items():
        setattr(config, name, rule(name, getattr(config, name)))


class _Replaceable:
    def replace(self, **changes):
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# field → rule, in the order of ModelConfig's fields
_MODEL_RULES = {
    "src_vocab": _rule(_check_int, 1),
    "tgt_vocab": _rule(_check_int, 1),
    "d_model": _rule(_check_int, 1),
    "n_heads": _rule(_check_int, 1),
    "d_ffn": _rule(_check_int, 1),
    "n_enc": _rule(_check_int, 0),
    "n_dec": _rule(_check_int, 0),
    "placement": _rule(_check_choice, PLACEMENTS),
    "enc_placement": _rule(_check_choice, PLACEMENTS, optional=True),
    "dec_placement": _rule(_check_choice, PLACEMENTS, optional=True),
    "init": _rule(_check_choice, tuple(INITS)),
    "norm": _rule(_check_choice, NORMS),
    "norm_eps": _rule(_check_positive),
    "activation": _rule(_check_choice, ACTIVATIONS),
    "attn_dropout": _rule(_check_prob),
    "act_dropout": _rule(_check_prob),
    "dropout": _rule(_check_prob),
    "embed_scale": _rule(_check_bool),
    "tie_embeddings": _rule(_check_bool),
    "positions": _rule(_check_choice, POSITIONS),
    "max_len": _rule(_check_int, 1),
    "admin_profiling": _rule(_check_choice, ("train", "eval")),  # tfx.nn.init.ADMIN_PROFILING
    "dyt_alpha": _rule(_check_positive),
    "ln_scaling": _rule(_check_bool),
    "depth_mup": _rule(_check_bool),
    "qk_norm": _rule(_check_bool),
    "attn_softcap": _rule(_check_positive, optional=True),
    "logit_softcap": _rule(_check_positive, optional=True),
    "parameterization": _rule(_check_choice, PARAMETERIZATIONS),
    "base_width": _rule(_check_int, 1, optional=True),
}


@dataclass
class ModelConfig(_Replaceable):
    """Sizes and the choices the book is about.

    ``placement`` sets both stacks; ``enc_placement`` / ``dec_placement`` override
    it per stack (e.g. Liu et al.'s Post-LN encoder with a Pre-LN decoder).
    ``n_dec=0`` gives an encoder-only model, ``n_enc=0`` a decoder-only LM.

    After 2020 (papers by their ``book/references.bib`` key):

    * ``placement="peri-ln"``   x + N_out(f(N_in(x))), a final norm (kim2025periln);
      ``"output-norm"``         x + N(f(x)), OLMo 2's reordered norm, a final norm (olmo2025);
      ``"sub-ln"``              Pre-LN plus a norm inside each branch, before out_proj and
                                fc2 (Sub-LN / Magneto, wang2022magneto), with ``init="subln"``.
    * ``norm="dyt"``            Dynamic Tanh γ ⊙ tanh(α x) + β, α a learned scalar starting
                                at ``dyt_alpha`` (zhu2025dyt); ``"rmsnorm"``: zhang2019rmsnorm.
    * ``ln_scaling``            the pre-branch norm of layer ℓ times 1/√ℓ (sun2025curse).
    * ``depth_mup``             every residual branch times 1/√L, L the residual sub-layers of its
                                stack (depth-μP's branch multiplier, yang2023depthmup).
    * ``qk_norm``               a norm on each head's queries and keys (dehghani2023vit22b,
                                wortsman2023proxies).
    * ``attn_softcap`` / ``logit_softcap``   c · tanh(x / c) on the attention logits / the
                                output logits (gemma2024).
    * ``parameterization="mup"`` μP for Adam relative to ``base_width`` (Tensor Programs V,
                                yang2022tp5; the rules in :mod:`tfx.nn.mup`): hidden matrices'
                                Adam rate × base/d, output logits × base/d, attention logits
                                × 1/d_h (scaled to match 1/√d_h at the base width). At
                                d_model = base_width it is the standard model, to the bit.
                                ``base_width``: the d_model of a model you could build (a
                                positive integer divisible by n_heads), required with "mup" and
                                refused with "standard"; scale d_ffn with d_model.
    """

    src_vocab: int = 36
    tgt_vocab: int = 36
    d_model: int = 64
    n_heads: int = 4
    d_ffn: int = 256
    n_enc: int = 2
    n_dec: int = 2
    placement: str = "post"
    enc_placement: str | None = None
    dec_placement: str | None = None
    init: str = "xavier"
    norm: str = "layernorm"
    norm_eps: float = 1e-5
    activation: str = "relu"
    attn_dropout: float = 0.0
    act_dropout: float = 0.0
    dropout: float = 0.0  # on each residual branch and on the embeddings
    embed_scale: bool = True  # multiply token embeddings by sqrt(d_model) (Vaswani et al.)
    tie_embeddings: bool = False  # decoder input embedding shared with the output projection
    positions: str = "sinusoidal"
    max_len: int = 256
    admin_profiling: str = "train"  # init='admin': profile with dropout on ('train', the authors' way) or off ('eval')
    dyt_alpha: float = 0.5  # norm='dyt': the initial α of γ ⊙ tanh(α x) + β (zhu2025dyt)
    ln_scaling: bool = False  # the pre-branch norm of layer ℓ times 1/√ℓ (sun2025curse)
    depth_mup: bool = False  # every residual branch × 1/√L, L its stack's sub-layers (yang2023depthmup)
    qk_norm: bool = False  # a norm (cfg.norm, over d_h) on queries and keys (dehghani2023vit22b)
    attn_softcap: float | None = None  # c · tanh(s / c) on the attention logits s (gemma2024)
    logit_softcap: float | None = None  # c · tanh(z / c) on the output logits z (gemma2024)
    parameterization: str = "standard"  # or 'mup' (yang2022tp5; tfx.nn.mup)
    base_width: int | None = None  # 'mup': the width whose learning rate transfers

    def __post_init__(self):
        _validate(self, _MODEL_RULES)
        if self.n_enc == 0 and self.n_dec == 0:
            raise ValueError("n_enc=0 and n_dec=0: at least one stack needs a layer (n_enc ≥ 1 or n_dec ≥ 1)")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by n_heads={self.n_heads} "
                f"(each head gets d_model/n_heads dimensions)"
            )
        if self.enc_placement is None:
            self.enc_placement = self.placement
        if self.dec_placement is None:
            self.dec_placement = self.placement
        needs = INITS[self.init]
        if needs is not None:
            for stack, p in self._stack_placements():
                if p not in needs:
                    raise ValueError(
                        f"init={self.init!r} needs {stack}_placement in {needs}, got {stack}_placement={p!r}"
                    )
        if self.ln_scaling:
            for stack, p in self._stack_placements():
                if p not in PRE_NORM:
                    raise ValueError(
                        f"ln_scaling=True scales the norm on a branch's input, which {stack}_placement={p!r} "
                        f"has not; it needs {stack}_placement in {PRE_NORM}"
                    )
        if self.depth_mup:
            for stack, p in self._stack_placements():
                if p in SUM_NORM or p == "rezero":
                    raise ValueError(
                        f"depth_mup=True scales a branch that is added to the stream (x + f/√L); "
                        f"{stack}_placement={p!r} does not add its branch that way: it needs "
                        f"{stack}_placement in {tuple(q for q in PLACEMENTS if q not in SUM_NORM + ('rezero',))}"
                    )
        if self.dyt_alpha != 0.5 and self.norm != "dyt":
            raise ValueError(f"dyt_alpha={self.dyt_alpha} is the initial α of norm='dyt' and has no effect "
                             f"with norm={self.norm!r}; leave it at 0.5 or set norm='dyt'")
        if self.parameterization == "mup":
            if self.base_width is None or self.base_width % self.n_heads:
                raise ValueError(
                    f"parameterization='mup' needs base_width, the d_model of the base model: a positive "
                    f"integer divisible by n_heads={self.n_heads}, got base_width={self.base_width!r}")
            if self.tie_embeddings:
                raise ValueError("parameterization='mup' gives the embedding and the readout different "
                                 "rules (tfx.nn.mup); it needs tie_embeddings=False")
        elif self.base_width is not None:
            raise ValueError(f"base_width={self.base_width} has no effect with parameterization="
                             f"{self.parameterization!r}; leave it None or set parameterization='mup'")
        if self.tie_embeddings and self.kind == "encoder" and self.src_vocab != self.tgt_vocab:
            raise ValueError(
                f"tie_embeddings=True in an encoder-only model (n_dec=0) shares the source embedding with the "
                f"output projection: it needs src_vocab == tgt_vocab, got src_vocab={self.src_vocab}, "
                f"tgt_vocab={self.tgt_vocab}"
            )

    def _stack_placements(self) -> list:
        """[('enc', enc_placement), ('dec', dec_placement)] for the stacks that have layers."""
        return [(s, p) for s, p, n in (("enc", self.enc_placement, self.n_enc), ("dec", self.dec_placement, self.n_dec))
                if n]

    @property
    def kind(self) -> str:
        """'encoder-decoder', 'encoder' (encoder-only) or 'decoder' (decoder-only LM)."""
        if self.n_enc and self.n_dec:
            return "encoder-decoder"
        return "encoder" if self.n_enc else "decoder"

    @classmethod
    def for_task(cls, task, **kw) -> "ModelConfig":
        """A config whose vocabularies and max length fit ``task``."""
        kw.setdefault("src_vocab", task.src_vocab)
        kw.setdefault("tgt_vocab", task.tgt_vocab)
        kw.setdefault("max_len", max(task.max_len + 2, 16))
        return cls(**kw)

    @classmethod
    def for_scheme(cls, scheme: str, task, n_enc: int, n_dec: int, **kw) -> "ModelConfig":
        """The config of ``scheme`` (a key of :data:`SCHEMES`) for ``task``, with ``n_enc``
        encoder and ``n_dec`` decoder layers (0: no such stack; both are always given, so no
        caller relies on a default kind of model); ``kw``: other fields (sizes), which win over
        the scheme's own."""
        _check_choice("scheme", scheme, tuple(SCHEMES))
        return cls.for_task(task, n_enc=n_enc, n_dec=n_dec, **{**SCHEMES[scheme], **kw})


# field → rule, in the order of TrainConfig's fields
_TRAIN_RULES = {
    "steps": _rule(_check_int, 1),
    "batch_size": _rule(_check_int, 1),
    "lr": _rule(_check_positive),
    "optimizer": _rule(_check_choice, OPTIMIZERS),
    "betas": _rule(_check_pair, _check_prob, "two numbers in [0, 1), e.g. (0.9, 0.98)"),
    "eps": _rule(_check_positive),
    "momentum": _rule(_check_prob),
    "weight_decay": _rule(_check_number, low=0),
    "weight_decay_mode": _rule(_check_choice, WEIGHT_DECAY_MODES),
    "optimizer_by_kind": _rule(_check_optimizer_by_kind, optional=True),
    "schedule": _rule(_check_choice, SCHEDULES),
    "warmup": _rule(_check_int, 0),
    "clip": _rule(_check_positive, optional=True),
    "label_smoothing": _rule(_check_prob),
    "z_loss": _rule(_check_number, low=0),
    "seed": _rule(_check_int, 0, high=SEED_LIMIT),
    "data_seed": _rule(_check_int, 0, high=SEED_LIMIT, optional=True),
    "device": _rule(_check_device, optional=True),
    "amp": _rule(_check_bool, optional=True),
    "eval_every": _rule(_check_int, 0),
    "eval_batches": _rule(_check_int, 1),
    "log_every": _rule(_check_int, 1),
    "checkpoint_every": _rule(_check_int, 0),
    "checkpoint_path": _rule(_check_path, optional=True),
    "diverge_loss": _rule(_check_positive, optional=True),
    "progress": _rule(_check_bool),
    "record_updates": _rule(_check_bool),
    "compile": _rule(_check_bool),
    "amp_dtype": _rule(_check_choice, AMP_DTYPES, optional=True),
    "max_tokens": _rule(_check_int, 1, optional=True),
    "bleu_sentences": _rule(_check_int, 0),
    "diagnose": _rule(_check_bool),
    "watch_every": _rule(_check_int, 0),
    "probes": _rule(_check_bool),
    "final_lr_fraction": _rule(_check_number, low=0, high=1, high_open=True),
    "cooldown_fraction": _rule(_check_number, low=0, high=1, low_open=True),
    "spike_guard": _rule(_check_choice, SPIKE_GUARDS),
    "guard_window": _rule(_check_int, 2),
    "guard_percentile": _rule(_check_number, low=0, high=100, low_open=True, high_open=True),
    "guard_z": _rule(_check_positive),
    "inject": _rule(_check_choice, INJECTIONS),
    "inject_step": _rule(_check_int, 0),
    "inject_lr_factor": _rule(_check_positive),
    "inject_length": _rule(_check_int, 1),
    "qk_clip": _rule(_check_positive, optional=True),
    "record_qk_logits": _rule(_check_bool),
}
# Settings that only one choice of another field reads: field → (the field, the choices that read it).
# Set away from its default under any other choice, a setting would do nothing: refused.
_READ_ONLY_BY = {
    "final_lr_fraction": ("schedule", ("cosine",)),
    "cooldown_fraction": ("schedule", ("wsd-linear", "wsd-sqrt")),
    "guard_window": ("spike_guard", ("clip-percentile", "skip-zscore", "rollback")),
    "guard_percentile": ("spike_guard", ("clip-percentile",)),
    "guard_z": ("spike_guard", ("clip-zscore", "skip-zscore", "rollback")),
    "inject_lr_factor": ("inject", ("lr-bump",)),
    "inject_length": ("inject", ("lr-bump",)),
}


@dataclass
class TrainConfig(_Replaceable):
    """How to train: optimiser, schedule, clipping, divergence rules, bookkeeping.

    Schedules (lr(t) for step t = 1, 2, …, warmup steps w):
      ``constant``      lr, after a linear warmup if w > 0
      ``inverse-sqrt``  lr · min(t/w, sqrt(w/t))  (Vaswani et al.; w=0: constant)
      ``linear-decay``  linear warmup to lr, then linearly to 0 at ``steps`` (bergsma2025d2z)
      ``cosine``        after warmup, lr·(f + (1 − f)·½(1 + cos πu)), u the share of the steps
                        after warmup done, f = ``final_lr_fraction`` (0.1: "cosine to 10 %")
      ``wsd-linear``    warmup, stable at lr, then a cooldown over the last ``cooldown_fraction``
      ``wsd-sqrt``      of the steps to 0: linear (1 − v), or (1 − √v), v the share of the
                        cooldown done (hagele2024wsd: the (1 − √) cooldown beats linear)

    Spikes (tfx.nn.optim.SpikeGuard; SZ-2), what the one step does, by ``spike_guard``:
      ``none``             nothing (``clip`` still clips at a fixed norm when set)
      ``clip-percentile``  clip ‖g‖ at the ``guard_percentile``-th percentile of the last
                           ``guard_window`` pre-clip norms (the Tuning Playbook's 90th)
      ``clip-zscore``      ZClip (kumar2025zclip): clip to μ + z·σ when ‖g‖'s z-score over an EMA
                           of the norm's mean μ and variance σ² passes z = ``guard_z``
      ``skip-zscore``      skip the update (θ and the optimiser's moments untouched) when the
                           norm's z-score over the last ``guard_window`` norms passes ``guard_z``
                           (OLMo-core's skip-step: 128 steps, z 6)
      ``rollback``         when the loss's z-score over the last ``guard_window`` losses passes
                           ``guard_z``, restore the state of 8–16 steps before and skip the batches
                           in between (chowdhery2022palm)
    Guards act from their 10th step on (GUARD_MIN_STEPS); each decision is recorded
    (History.interventions), and steps whose norm was clipped are counted (steps_clipped).

    Injections (SZ-1, SZ-3), at step ``inject_step``: ``repeated-ngram`` (that step's batch is
    a repeated n-gram: each sequence its first 4 tokens over and over), ``lr-bump`` (the rate ×
    ``inject_lr_factor`` for ``inject_length`` steps), ``fresh-moments`` (the optimiser's state
    dropped, as a resume without it), ``data-reset`` (the data stream starts again from its first
    batch, as a resume that lost its place).

    Optimisers: ``adam`` (kingma2015adam), ``adamw`` (loshchilov2019adamw), ``sgd`` with
    ``momentum``, ``radam``, ``adam-atan2`` (everett2024scaling: Adam's m̂/(√v̂+ε) replaced by
    atan2(m̂, √v̂), so it takes no ``eps``; tfx.nn.optim.AdamAtan2).
    ``optimizer_by_kind`` gives some kinds of parameter (tfx.nn.mup.parameter_kind: 'hidden',
    'embedding', 'vector', 'readout') an optimiser of their own, e.g. ``{"hidden": "sgd"}``;
    the other kinds get ``optimizer``. The optimisers share the run as one
    (tfx.nn.optim.Composite): one schedule, one clipping, one step, one checkpoint.
    ``muon`` (jordan2024muon; liu2025muon: decoupled decay, update RMS matched to AdamW's by
    0.2·√max(m, n); tfx.nn.optim.Muon) orthogonalises the Nesterov momentum (β = ``momentum``)
    of each 2-D matrix, so it is for the hidden kind only: ``optimizer_by_kind={"hidden":
    "muon"}`` with e.g. ``optimizer="adamw"`` for the rest.

    QK-clip (kimi2025k2): ``qk_clip`` = τ rescales, after each optimiser step, W_q's and W_k's
    rows (and bias entries) of every attention head whose largest |pre-softmax logit| in that
    step's forward exceeded τ, by √(τ / that logit) each (tfx.nn.optim.qk_clip_). With
    ``qk_clip`` or ``record_qk_logits``, History.qk_logit_max records that largest logit (over
    every attention module and head, before the clip) at each logged step.

    Weight decay λ = ``weight_decay``, by ``weight_decay_mode``:
      ``coupled``      the optimiser's own: Adam's and SGD's L2 term λθ in the gradient,
                       AdamW's (and Adam-atan2's) decoupled θ ← θ − lr_t·λ·θ (loshchilov2019adamw),
                       which scales with the peak lr
      ``independent``  θ ← θ − λ·(lr_t/lr)·θ: the schedule's shape, not the peak lr
                       (wortsman2023proxies §3.2.2); AdamW only
    Under μP each parameter group's λ is divided by its rate factor, so every group decays
    by the same lr_t·λ (coupled) or λ·lr_t/lr (independent) a step (tfx.nn.optim.group_decay).

    ``z_loss`` = c adds c · mean over real tokens of (log Z)², log Z the log partition
    function of the output softmax (chowdhery2022palm; wortsman2023proxies); the recorded
    losses stay the cross-entropy.
    """

    steps: int = 200
    batch_size: int = 32
    lr: float = 5e-4
    optimizer: str = "adam"
    betas: tuple = (0.9, 0.98)
    eps: float = 1e-8
    momentum: float = 0.9  # SGD only
    weight_decay: float = 0.0
    weight_decay_mode: str = "coupled"  # or 'independent' of the peak lr (AdamW only), see above
    optimizer_by_kind: dict | None = None  # {parameter kind: optimizer}, e.g. {"hidden": "sgd"}; others: optimizer
    schedule: str = "constant"
    warmup: int = 0
    clip: float | None = None  # max global gradient norm
    label_smoothing: float = 0.0
    z_loss: float = 0.0  # c in c · mean (log Z)², added to the training objective (PaLM: 1e-4)
    seed: int = 0  # initial weights, dropout, and (unless data_seed is set) the order of the data
    data_seed: int | None = None  # the training batches' stream (tfx.runs.train.data_step); None: seed
    device: str | None = None  # None: cuda when present, else cpu
    amp: bool | None = None  # None: on for cuda
    eval_every: int = 0  # 0: only at the end
    eval_batches: int = 4
    log_every: int = 1
    checkpoint_every: int = 0
    checkpoint_path: str | None = None
    diverge_loss: float | None = None  # None: tfx.runs.train's DIVERGE_OVER_CHANCE × ln(vocab); also 3× the start
    progress: bool = False
    record_updates: bool = True  # record ‖Δθ‖ at each logged step (from the optimiser's state, no copy)
    # --- speed, precision, batching (tfx.train)
    compile: bool = False  # torch.compile the model's loss (one graph, no breaks)
    amp_dtype: str | None = None  # 'bf16', 'fp16' (with a gradient scaler), 'fp32'; None: bf16/fp16 on cuda, fp32 else
    max_tokens: int | None = None  # batch by token count (length-bucketed) instead of batch_size sentences
    # --- honest status and diagnosis
    bleu_sentences: int = 100  # translation: BLEU on the first N validation sentences at each evaluation
    diagnose: bool = True  # on divergence, replay the failing step and name the first sub-layer that blew up
    watch_every: int = 0  # every N steps record each sub-layer's largest activation and attention logit (0: off)
    probes: bool = False  # at each logged step record attention logits and entropy, stream variance, DyT saturation (tfx.runs.probes)
    # --- schedules after cosine (SC-1)
    final_lr_fraction: float = 0.1  # 'cosine': the rate at the last step, as a fraction of lr
    cooldown_fraction: float = 0.2  # 'wsd-linear', 'wsd-sqrt': the share of the steps the cooldown takes
    # --- runs that break mid-way (SZ-1..3): what the step does about a spike, and what causes one
    spike_guard: str = "none"  # see SPIKE_GUARDS and the docstring
    guard_window: int = 100  # the last N steps a guard's statistics read
    guard_percentile: float = 90.0  # 'clip-percentile'
    guard_z: float = 2.5  # 'clip-zscore', 'skip-zscore', 'rollback': a spike is a z-score above this
    inject: str = "none"  # see INJECTIONS and the docstring
    inject_step: int = 0  # the step an injection happens at (≥ 1 when inject is set)
    inject_lr_factor: float = 10.0  # 'lr-bump': the rate's factor
    inject_length: int = 1  # 'lr-bump': for this many steps
    # --- attention logits (kimi2025k2)
    qk_clip: float | None = None  # τ (K2: 100): a head whose max logit S passed τ gets W_q, W_k × √(τ/S)
    record_qk_logits: bool = False  # History.qk_logit_max: each logged step's largest logit; on with qk_clip

    def __post_init__(self):
        _validate(self, _TRAIN_RULES)
        if self.checkpoint_every and self.checkpoint_path is None:
            raise ValueError(f"checkpoint_every={self.checkpoint_every} needs checkpoint_path (a file to write)")
        if self.amp and self.device is not None and torch.device(self.device).type != "cuda":
            raise ValueError(
                f"amp=True needs a CUDA device (mixed precision runs on CUDA only), got device={self.device!r}"
            )
        by_kind = self.optimizer_by_kind
        if by_kind is not None and set(by_kind.values()) == {self.optimizer}:
            raise ValueError(f"optimizer_by_kind={by_kind} has no effect: every kind it names already gets "
                             f"optimizer={self.optimizer!r}; name another optimizer or leave it None")
        muon_kinds = [k for k in PARAMETER_KINDS if k != "hidden" and self.optimizer_for(k) == "muon"]
        if muon_kinds and self.optimizer == "muon":
            raise ValueError(f"optimizer='muon' would give Muon the {', '.join(muon_kinds)} parameters too; Muon "
                             "orthogonalises 2-D hidden matrices only (jordan2024muon): use optimizer_by_kind="
                             "{'hidden': 'muon'} and name the optimizer of the rest, e.g. optimizer='adamw'")
        if muon_kinds:
            raise ValueError(f"optimizer_by_kind={by_kind} gives 'muon' to {', '.join(muon_kinds)}; Muon "
                             "orthogonalises 2-D hidden matrices only (jordan2024muon): give it 'hidden' alone")
        used = self.optimizers_used()
        if self.weight_decay_mode == "independent" and used != {"adamw"}:
            raise ValueError(f"weight_decay_mode='independent' needs optimizer='adamw' (decoupled weight decay) "
                             f"for every parameter, got {self._optimizers_text()}")
        if used == {"adam-atan2"} and self.eps != 1e-8:
            raise ValueError(f"eps={self.eps} has no effect with optimizer='adam-atan2' (it has no ε, "
                             f"everett2024scaling); leave eps at 1e-8")
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for name, (chooser, choices) in _READ_ONLY_BY.items():
            if getattr(self, chooser) not in choices and getattr(self, name) != defaults[name]:
                raise ValueError(f"{name}={getattr(self, name)!r} has no effect with {chooser}="
                                 f"{getattr(self, chooser)!r}: only {chooser} in {choices} reads it")
        if (self.inject == "none") != (self.inject_step == 0):
            raise ValueError(f"inject={self.inject!r} with inject_step={self.inject_step}: an injection needs a "
                             "step ≥ 1, and a step needs an injection (or leave both at 'none', 0)")
        if self.inject_step > self.steps:
            raise ValueError(f"inject_step={self.inject_step} must be ≤ steps={self.steps}")
        if self.spike_guard in ("clip-percentile", "clip-zscore") and self.clip is not None:
            raise ValueError(f"clip={self.clip} and spike_guard={self.spike_guard!r} both clip: choose one")
        if self.compile and (self.qk_clip is not None or self.record_qk_logits):
            raise ValueError(f"qk_clip={self.qk_clip} / record_qk_logits={self.record_qk_logits} read the attention "
                             "logits from the eager forward; they need compile=False")
        if self.amp is False and self.amp_dtype not in (None, "fp32"):
            raise ValueError(f"amp=False contradicts amp_dtype={self.amp_dtype!r}; set one of them")

    def optimizer_for(self, kind: str) -> str:
        """The optimiser of parameters of ``kind`` (:data:`PARAMETER_KINDS`): ``optimizer_by_kind``'s
        entry, else ``optimizer``."""
        return (self.optimizer_by_kind or {}).get(kind, self.optimizer)

    def optimizers_used(self) -> set:
        """The optimisers some kind of parameter gets."""
        return {self.optimizer_for(kind) for kind in PARAMETER_KINDS}

    def _optimizers_text(self) -> str:
        by_kind = f", optimizer_by_kind={self.optimizer_by_kind}" if self.optimizer_by_kind else ""
        return f"optimizer={self.optimizer!r}{by_kind}"
