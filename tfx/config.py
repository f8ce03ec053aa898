"""Configuration dataclasses, validated on construction.

Every bad value raises ``ValueError`` naming the field, the value and what is
allowed, so a typo in a notebook fails on the line that made it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# Where the residual connection and the normalisation sit (blocks.Residual).
PLACEMENTS = ("post", "pre", "admin", "rezero", "deepnorm", "none")
NORMS = ("layernorm", "rmsnorm")
ACTIVATIONS = ("relu", "gelu")
POSITIONS = ("sinusoidal", "learned")
# Which initialiser (tfx.init), and the placement each one is defined for (None: any).
INITS = {
    "xavier": None,
    "t-fixup": ("none",),
    "lipschitz": None,
    "admin": ("admin",),
    "admin-profiling-free": ("admin",),
    "deepnorm": ("deepnorm",),
    "rezero": ("rezero",),
}
OPTIMIZERS = ("adam", "adamw", "sgd", "radam")
SCHEDULES = ("constant", "inverse-sqrt", "linear-decay")


def _check_choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; choose one of: {', '.join(map(repr, allowed))}")


def _check_int(name, value, low, what=""):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer ≥ {low}{what}")


def _check_prob(name, value):
    if not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name}={value!r} must be a probability in [0, 1)")


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name}={value!r} must be a number > 0")


class _Replaceable:
    def replace(self, **changes):
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class ModelConfig(_Replaceable):
    """Sizes and the choices the book is about.

    ``placement`` sets both stacks; ``enc_placement`` / ``dec_placement`` override
    it per stack (e.g. Liu et al.'s Post-LN encoder with a Pre-LN decoder).
    ``n_dec=0`` gives an encoder-only model, ``n_enc=0`` a decoder-only LM.
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

    def __post_init__(self):
        _check_int("src_vocab", self.src_vocab, 1)
        _check_int("tgt_vocab", self.tgt_vocab, 1)
        _check_int("d_model", self.d_model, 1)
        _check_int("n_heads", self.n_heads, 1)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by n_heads={self.n_heads} "
                f"(each head gets d_model/n_heads dimensions)"
            )
        _check_int("d_ffn", self.d_ffn, 1)
        _check_int("n_enc", self.n_enc, 0)
        _check_int("n_dec", self.n_dec, 0)
        if self.n_enc == 0 and self.n_dec == 0:
            raise ValueError("n_enc=0 and n_dec=0: at least one stack needs a layer (n_enc ≥ 1 or n_dec ≥ 1)")
        _check_choice("placement", self.placement, PLACEMENTS)
        if self.enc_placement is None:
            self.enc_placement = self.placement
        if self.dec_placement is None:
            self.dec_placement = self.placement
        _check_choice("enc_placement", self.enc_placement, PLACEMENTS)
        _check_choice("dec_placement", self.dec_placement, PLACEMENTS)
        _check_choice("init", self.init, tuple(INITS))
        needs = INITS[self.init]
        if needs is not None:
            for stack, p, n in (("enc", self.enc_placement, self.n_enc), ("dec", self.dec_placement, self.n_dec)):
                if n and p not in needs:
                    raise ValueError(
                        f"init={self.init!r} needs {stack}_placement in {needs}, got {stack}_placement={p!r}"
                    )
        _check_choice("norm", self.norm, NORMS)
        _check_positive("norm_eps", self.norm_eps)
        _check_choice("activation", self.activation, ACTIVATIONS)
        for name in ("attn_dropout", "act_dropout", "dropout"):
            _check_prob(name, getattr(self, name))
        _check_choice("positions", self.positions, POSITIONS)
        _check_int("max_len", self.max_len, 1)

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


@dataclass
class TrainConfig(_Replaceable):
    """How to train: optimiser, schedule, clipping, divergence rules, bookkeeping.

    Schedules (lr(t) for step t = 1, 2, …, warmup steps w):
      ``constant``      lr, after a linear warmup if w > 0
      ``inverse-sqrt``  lr · min(t/w, sqrt(w/t))  (Vaswani et al.; w=0: constant)
      ``linear-decay``  linear warmup to lr, then linearly to 0 at ``steps``
    """

    steps: int = 200
    batch_size: int = 32
    lr: float = 5e-4
    optimizer: str = "adam"
    betas: tuple = (0.9, 0.98)
    eps: float = 1e-8
    momentum: float = 0.9  # SGD only
    weight_decay: float = 0.0
    schedule: str = "constant"
    warmup: int = 0
    clip: float | None = None  # max global gradient norm
    label_smoothing: float = 0.0
    seed: int = 0
    device: str | None = None  # None: cuda when present, else cpu
    amp: bool | None = None  # None: on for cuda
    eval_every: int = 0  # 0: only at the end
    eval_batches: int = 4
    log_every: int = 1
    checkpoint_every: int = 0
    checkpoint_path: str | None = None
    diverge_loss: float | None = None  # None: 3 × ln(vocab)
    stuck_fraction: float = 0.95  # final loss ≥ this × chance loss → 'stuck'
    progress: bool = False
    record_updates: bool = True  # record ‖Δθ‖ at each logged step (from the optimiser's state, no copy)
    # --- speed, precision, batching (tfx.train)
    compile: bool = False  # torch.compile the model's loss (one graph, no breaks)
    amp_dtype: str | None = None  # 'bf16', 'fp16' (with a gradient scaler), 'fp32'; None: bf16/fp16 on cuda, fp32 else
    max_tokens: int | None = None  # batch by token count (length-bucketed) instead of batch_size sentences
    # --- honest status and diagnosis
    bleu_sentences: int = 100  # translation: BLEU on the first N validation sentences at each evaluation
    min_bleu: float = 1.0  # translation: a run whose last BLEU is below this learned nothing of its source
    diagnose: bool = True  # on divergence, replay the failing step and name the first sub-layer that blew up
    watch_every: int = 0  # every N steps record each sub-layer's largest activation and attention logit (0: off)

    def __post_init__(self):
        _check_int("steps", self.steps, 1)
        _check_int("batch_size", self.batch_size, 1)
        _check_positive("lr", self.lr)
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
        self.betas = tuple(self.betas)
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas={self.betas!r} must be two numbers in [0, 1)")
        _check_positive("eps", self.eps)
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum={self.momentum!r} must be in [0, 1)")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay={self.weight_decay!r} must be ≥ 0")
        _check_choice("schedule", self.schedule, SCHEDULES)
        _check_int("warmup", self.warmup, 0)
        if self.clip is not None:
            _check_positive("clip", self.clip)
        _check_prob("label_smoothing", self.label_smoothing)
        _check_int("eval_every", self.eval_every, 0)
        _check_int("eval_batches", self.eval_batches, 1)
        _check_int("log_every", self.log_every, 1)
        _check_int("checkpoint_every", self.checkpoint_every, 0)
        if self.checkpoint_every and not self.checkpoint_path:
            raise ValueError("checkpoint_every > 0 needs checkpoint_path (a file to write)")
        if self.device is not None and not str(self.device).startswith(("cpu", "cuda", "mps")):
            raise ValueError(f"device={self.device!r} must be 'cpu', 'cuda[:n]', 'mps' or None (automatic)")
        if self.diverge_loss is not None:
            _check_positive("diverge_loss", self.diverge_loss)
        if not 0 < self.stuck_fraction <= 1:
            raise ValueError(f"stuck_fraction={self.stuck_fraction!r} must be in (0, 1]")
        _check_choice("amp_dtype", self.amp_dtype, (None, "bf16", "fp16", "fp32"))
        if self.amp is False and self.amp_dtype not in (None, "fp32"):
            raise ValueError(f"amp=False contradicts amp_dtype={self.amp_dtype!r}; set one of them")
        if self.max_tokens is not None:
            _check_int("max_tokens", self.max_tokens, 1)
        _check_int("bleu_sentences", self.bleu_sentences, 0)
        if isinstance(self.min_bleu, bool) or not isinstance(self.min_bleu, (int, float)) or self.min_bleu < 0:
            raise ValueError(f"min_bleu={self.min_bleu!r} must be a number ≥ 0 (BLEU, 0–100)")
        _check_int("watch_every", self.watch_every, 0)
