"""What a model eats: the padded `Batch`, and the special token ids every task uses.

Both the synthetic tasks (:mod:`tfx.runs.data`) and the corpora (:mod:`tfx.runs.corpus`)
make batches; the model (:mod:`tfx.nn.model`) reads them. They live here, with the
model, so that neither data module has to import the other.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

PAD, BOS, EOS, UNK = 0, 1, 2, 3  # special ids everywhere in tfx
N_SPECIAL = 4



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


def repeated_ngram(batch: Batch, n: int = 4) -> Batch:
    """``batch`` with every sequence's content replaced by its first ``n`` tokens, repeated:
    token i (after BOS) becomes token 1 + (i − 1) mod n, wherever a real token was (PAD, BOS and
    EOS stay put, so lengths, masks and the token count are unchanged). The kind of document
    OLMo 2 found behind its loss spikes (olmo2025; SZ-1)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} must be an integer ≥ 1 (the n-gram's length)")

    def repeat(x):
        if x is None:
            return None
        pos = torch.arange(x.shape[1], device=x.device)
        first = 0 if x is batch.src else 1  # a target starts with BOS, a source does not
        source = first + (pos - first).clamp(min=0) % n
        content = (x != PAD) & (x != EOS) & (x != BOS)
        return torch.where(content, x.gather(1, source.expand_as(x)), x)

    return Batch(repeat(batch.src), repeat(batch.tgt), batch.src_padded, batch.tgt_padded, batch._n_tokens)
