"""Data for tfx: the `Batch` every model eats, synthetic seq2seq tasks, and the
shipped German→English corpus (re-exported from `tfx.corpus`).

Every task is a *deterministic function of (seed, step)*: ``task.batch(step, B)``
always returns the same batch, so a resumed run sees exactly the data an
uninterrupted one would, with no iterator state to save.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

PAD, BOS, EOS, UNK = 0, 1, 2, 3  # special ids everywhere in tfx
N_SPECIAL = 4

SYNTHETIC_TASKS = ("copy", "reverse", "sort")


@dataclass
class Batch:
    """A padded batch. ``src``: (B, S) ending with EOS, or None for a language model.
    ``tgt``: (B, T) starting with BOS and ending with EOS. Both right-padded with PAD.

    ``src_padded`` / ``tgt_padded`` (does a PAD occur in ``src`` / in ``tgt[:, :-1]``?) and
    ``n_tokens`` are found on the host when the batch is made there, and travel with it
    in :meth:`to`: the model then builds attention masks, and the trainer counts tokens,
    without reading the device (a host sync, and a graph break for ``torch.compile``).
    """

    src: torch.Tensor | None
    tgt: torch.Tensor
    src_padded: bool | None = None
    tgt_padded: bool | None = None
    _n_tokens: int | None = None

    def __post_init__(self):
        if self.tgt.device.type != "cpu":
            return  # made on the device: left unknown (the model then always builds a mask)
        if self.src_padded is None and self.src is not None:
            self.src_padded = bool((self.src == PAD).any())
        if self.tgt_padded is None:
            self.tgt_padded = bool((self.tgt[:, :-1] == PAD).any())
        if self._n_tokens is None:
            self._n_tokens = int((self.tgt[:, 1:] != PAD).sum())

    def to(self, device) -> "Batch":
        src = None if self.src is None else self.src.to(device, non_blocking=True)
        return Batch(src, self.tgt.to(device, non_blocking=True), self.src_padded, self.tgt_padded, self._n_tokens)

    @property
    def n_tokens(self) -> int:
        """Target tokens that carry a loss (everything after BOS that is not PAD)."""
        if self._n_tokens is None:
            self._n_tokens = int((self.tgt[:, 1:] != PAD).sum())
        return self._n_tokens


def _mix(seed: int, step: int, split: str) -> int:
    """A generator seed for (seed, step, split); splits never share a batch."""
    salt = {"train": 0, "valid": 1, "test": 2}[split]
    return (seed * 1_000_003 + step * 7919 + salt * 104_729) % (2**63 - 1)


class SyntheticTask:
    """Copy, reverse or sort a random sequence of symbols.

    Sources are ``length`` symbols drawn uniformly from ``vocab`` symbols (ids
    ``N_SPECIAL … N_SPECIAL+vocab-1``) followed by EOS; the target is BOS, the
    transformed sequence, EOS. Every sequence has the same length, so there is
    no padding: the tasks isolate optimisation from data handling.
    """

    def __init__(self, kind: str = "reverse", vocab: int = 32, length: int = 12, seed: int = 0):
        if kind not in SYNTHETIC_TASKS:
            raise ValueError(f"kind={kind!r} is not a synthetic task; allowed: {', '.join(SYNTHETIC_TASKS)}")
        if not isinstance(vocab, int) or vocab < 2:
            raise ValueError(f"vocab={vocab!r} must be an integer ≥ 2")
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"length={length!r} must be an integer ≥ 1")
        self.kind, self.vocab, self.length, self.seed = kind, vocab, length, seed
        self.name = f"{kind}-v{vocab}-l{length}"
        self.src_vocab = self.tgt_vocab = N_SPECIAL + vocab
        self.max_len = length + 2

    @property
    def chance_loss(self) -> float:
        """Loss of the best prediction that ignores the source: it knows where EOS
        goes (every sequence has the same length) and guesses each symbol uniformly,
        (length / (length + 1)) · ln(vocab) nats per target token. A model whose loss
        stays there has learned nothing about its input."""
        return self.length / (self.length + 1) * math.log(self.vocab)

    def transform(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "copy":
            return x
        if self.kind == "reverse":
            return x.flip(-1)
        return x.sort(-1).values

    def batch(self, step: int, batch_size: int | None = None, split: str = "train",
              max_tokens: int | None = None) -> Batch:
        """``batch_size`` sequences, or as many as fit in ``max_tokens`` target tokens
        (every sequence has ``length + 2`` of them: nothing to bucket)."""
        if (batch_size is None) == (max_tokens is None):
            raise ValueError(f"give batch_size or max_tokens, not both or neither "
                             f"(got batch_size={batch_size!r}, max_tokens={max_tokens!r})")
        if max_tokens is not None:
            batch_size = max(1, max_tokens // (self.length + 2))
        g = torch.Generator().manual_seed(_mix(self.seed, step, split))
        x = torch.randint(N_SPECIAL, N_SPECIAL + self.vocab, (batch_size, self.length), generator=g)
        eos = torch.full((batch_size, 1), EOS)
        bos = torch.full((batch_size, 1), BOS)
        return Batch(src=torch.cat([x, eos], 1), tgt=torch.cat([bos, self.transform(x), eos], 1))

    def eval_batches(self, batch_size: int, split: str = "valid", max_batches: int | None = None) -> list[Batch]:
        return [self.batch(i, batch_size, split) for i in range(max_batches or 4)]

    def decode(self, ids, side: str = "tgt") -> str:
        out = []
        for t in (ids.tolist() if hasattr(ids, "tolist") else ids):
            if t == EOS:
                break
            if t >= N_SPECIAL:
                out.append(str(t - N_SPECIAL))
        return " ".join(out)

    def __repr__(self) -> str:
        return f"SyntheticTask(kind={self.kind!r}, vocab={self.vocab}, length={self.length}, seed={self.seed})"


def synthetic(kind: str = "reverse", vocab: int = 32, length: int = 12, seed: int = 0) -> SyntheticTask:
    """A synthetic seq2seq task: ``copy``, ``reverse`` or ``sort``."""
    return SyntheticTask(kind, vocab, length, seed)


TASKS = SYNTHETIC_TASKS + ("libreoffice-de-en", "iwslt14")


def load_task(name: str, seed: int = 0, length: int = 12):
    """A task by name: a synthetic one (``length`` symbols), the shipped LibreOffice
    corpus, or IWSLT'14 De-En (downloads from the Hugging Face hub; full profile)."""
    if name in SYNTHETIC_TASKS:
        return synthetic(name, length=length, seed=seed)
    if name == "libreoffice-de-en":
        from .corpus import load_corpus

        return load_corpus(name, seed=seed)
    if name == "iwslt14":
        from .corpus import load_iwslt14_task

        return load_iwslt14_task(seed=seed)
    raise ValueError(f"task={name!r} is not a task; choose one of: {', '.join(TASKS)}")


def __getattr__(name):  # the real corpora live in tfx.corpus; load them lazily
    if name in ("load_corpus", "load_iwslt14", "load_iwslt14_task", "bleu", "verify_corpus", "TranslationTask"):
        from tfx import corpus

        return getattr(corpus, name)
    raise AttributeError(f"module 'tfx.data' has no attribute {name!r}")
