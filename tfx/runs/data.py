"""Tasks for tfx: synthetic seq2seq tasks, and :func:`load_task`, which also names the
shipped German→English corpora of :mod:`tfx.runs.corpus` and its English side for a
language model (:mod:`tfx.runs.lm`). The `Batch` they make is
:class:`tfx.nn.batch.Batch`.

Every task is a *deterministic function of (seed, step)*: ``task.batch(step, B)``
always returns the same batch, so a resumed run sees exactly the data an
uninterrupted one would, with no iterator state to save.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..nn.batch import BOS, EOS, N_SPECIAL, PAD, Batch
from ..nn.config import SEED_STRIDE

SYNTHETIC_TASKS = ("copy", "reverse", "sort")


def _mix(seed: int, step: int, split: str) -> int:
    """A generator seed for (seed, step, split); splits never share a batch."""
    salt = {"train": 0, "valid": 1, "test": 2}[split]
    return (seed * SEED_STRIDE + step * 7919 + salt * 104_729) % (2**63 - 1)


class SyntheticTask:
    """Copy, reverse or sort a random sequence of symbols.

    Sources are ``length`` symbols drawn uniformly from ``vocab`` symbols (ids
    ``N_SPECIAL … N_SPECIAL+vocab-1``) followed by EOS; the target is BOS, the
    transformed sequence, EOS. Every sequence has the same length, so there is
    no padding: the tasks isolate optimisation from data handling.

    ``noise`` = p > 0 corrupts the target: each symbol is, with probability p, replaced by
    one drawn uniformly from the ``vocab`` symbols (maybe itself), in every split. No model
    can then predict better than the true distribution, so the loss has a floor above zero
    (:attr:`floor_loss`) and the loss above it measures quality: two models that both learn
    the task can still end at different distances from the floor.
    """

    def __init__(self, kind: str = "reverse", vocab: int = 32, length: int = 12, seed: int = 0,
                 noise: float = 0.0):
        if kind not in SYNTHETIC_TASKS:
            raise ValueError(f"kind={kind!r} is not a synthetic task; allowed: {', '.join(SYNTHETIC_TASKS)}")
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0 <= noise < 1:
            raise ValueError(f"noise={noise!r} must be a probability in [0, 1)")
        if not isinstance(vocab, int) or vocab < 2:
            raise ValueError(f"vocab={vocab!r} must be an integer ≥ 2")
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"length={length!r} must be an integer ≥ 1")
        self.kind, self.vocab, self.length, self.seed, self.noise = kind, vocab, length, seed, float(noise)
        self.name = f"{kind}-v{vocab}-l{length}" + (f"-noise{noise:g}" if noise else "")
        self.src_vocab = self.tgt_vocab = N_SPECIAL + vocab
        self.max_len = length + 2

    @property
    def chance_loss(self) -> float:
        """Loss of the best prediction that ignores the source: it knows where EOS
        goes (every sequence has the same length) and guesses each symbol uniformly,
        (length / (length + 1)) · ln(vocab) nats per target token. A model whose loss
        stays there has learned nothing about its input."""
        return self.length / (self.length + 1) * math.log(self.vocab)

    @property
    def floor_loss(self) -> float:
        """The best loss any model can reach: the entropy of the noisy target given the
        source. A symbol is right with q = 1 − p + p/V and each of the V − 1 others has
        r = p/V, so H = −q ln q − (V − 1) r ln r per symbol; EOS is certain. Per target
        token: (length / (length + 1)) · H (0 without noise)."""
        p, V = self.noise, self.vocab
        if not p:
            return 0.0
        q, r = 1 - p + p / V, p / V
        return self.length / (self.length + 1) * (-q * math.log(q) - (V - 1) * r * math.log(r))

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
        y = self.transform(x)
        if self.noise:
            flip = torch.rand(y.shape, generator=g) < self.noise
            y = torch.where(flip, torch.randint_like(y, N_SPECIAL, N_SPECIAL + self.vocab, generator=g), y)
        eos = torch.full((batch_size, 1), EOS)
        bos = torch.full((batch_size, 1), BOS)
        return Batch(src=torch.cat([x, eos], 1), tgt=torch.cat([bos, y, eos], 1))

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
        noise = f", noise={self.noise:g}" if self.noise else ""
        return f"SyntheticTask(kind={self.kind!r}, vocab={self.vocab}, length={self.length}, seed={self.seed}{noise})"


def synthetic(kind: str = "reverse", vocab: int = 32, length: int = 12, seed: int = 0,
              noise: float = 0.0) -> SyntheticTask:
    """A synthetic seq2seq task: ``copy``, ``reverse`` or ``sort``; ``noise``: the share of
    target symbols replaced at random (a loss floor above zero)."""
    return SyntheticTask(kind, vocab, length, seed, noise)


NOISY_TASKS = {"reverse-noisy": ("reverse", 0.2)}  # name: (kind, noise)
# Every task by the name it is loaded by (load_task; an experiment's or a profile's ``task``):
# the one registry of task names. A loaded task's own ``name`` (History.task) may say more:
# 'reverse-v32-l12' for 'reverse', 'iwslt14-de-en' (tfx.runs.corpus.IWSLT14_NAME) for 'iwslt14'.
TASKS = SYNTHETIC_TASKS + tuple(NOISY_TASKS) + ("libreoffice-de-en", "libreoffice-de-en-large", "iwslt14",
                                                 "libreoffice-en")


def load_task(name: str, seed: int = 0, length: int = 12):
    """A task by name (one of :data:`TASKS`): a synthetic one (``length`` symbols),
    ``reverse-noisy`` (reverse with 20 % of target symbols replaced at random: a loss floor
    above zero), the shipped LibreOffice corpus (``libreoffice-de-en``, or every pair of the
    help pages, ``libreoffice-de-en-large``), IWSLT'14 De-En (``iwslt14``: downloads from the
    Hugging Face hub; full profile), or ``libreoffice-en``, the corpus's English side for a
    decoder-only LM (tfx.runs.lm)."""
    if name in SYNTHETIC_TASKS:
        return synthetic(name, length=length, seed=seed)
    if name in NOISY_TASKS:
        kind, noise = NOISY_TASKS[name]
        return synthetic(kind, length=length, seed=seed, noise=noise)
    if name in ("libreoffice-de-en", "libreoffice-de-en-large"):
        from .corpus import load_corpus

        return load_corpus(name, seed=seed)
    if name == "iwslt14":
        from .corpus import load_iwslt14_task

        return load_iwslt14_task(seed=seed)
    if name == "libreoffice-en":
        from .lm import load_lm_corpus

        return load_lm_corpus(seed=seed)
    hint = " (IWSLT'14's own task.name; load it as 'iwslt14')" if name == "iwslt14-de-en" else ""
    raise ValueError(f"task={name!r} is not a task{hint}; choose one of: {', '.join(TASKS)}")
