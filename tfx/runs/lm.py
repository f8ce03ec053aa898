"""What does the language model read? English sentences of LibreOffice's help pages.

    task = load_task("libreoffice-en")          # or load_lm_corpus()
    model = build_model(ModelConfig.for_task(task, n_enc=0, n_dec=2, placement="pre"))
    train(model, task, steps=200)

The English side of the shipped LibreOffice help corpus (MPL-2.0, see the NOTICE and
LICENSE beside the data): training on every sentence of the help pages
(``tfx/runs/corpora/libreoffice_de_en_large``, 26,084 distinct sentences, 418k words),
validation and test on the 308 and 310 sentences of ``libreoffice_de_en``'s valid and test
splits; no held-out sentence occurs in the training split. Both directories' files are
checked against their ``SHA256SUMS`` before use (:func:`tfx.runs.corpus.verify_corpus`);
the checksums of those two files are :data:`CHECKSUMS`.

Tokens: an English-only sentencepiece BPE of :data:`VOCAB` = 2000 pieces, trained on the
training sentences and cached like the translation corpora's (:func:`tfx.runs.corpus.train_bpe`).
Why 2000: the text has ~23k distinct words, too many for 26k sentences to teach, while
2000 pieces keep the common words whole and still occur often enough to be learned (the
median piece ~120 times in training); and a d_model = 64 model's output projection
(64 × 2000) stays the size of its two layers, so a CPU run spends its time in the
Transformer rather than in the softmax. ln 2000 = 7.6 nats is the uniform start. Sizes
in tokens that carry a loss (pieces and EOS): train 645,950, valid 7,701, test 8,078;
chance (unigram entropy) 6.25 nats.

Each sentence is one sequence, ``tgt = [BOS] + BPE(sentence) + [EOS]`` (cut to ``max_len``
tokens, EOS kept: 5 % of the training sentences are longer), ``src = None``; a batch is right-padded with PAD to its longest
sentence (no packing: a sentence never attends to another). ``chance_loss`` is the entropy
of the unigram distribution of the training tokens (the best prediction that ignores the
context, as for the translation tasks); ``floor_loss`` is 0 (the text's entropy is unknown).
"""
from __future__ import annotations

import os
from typing import Sequence

from ..nn.batch import Batch
from .corpus import SPLITS, TranslationTask, _LO_LARGE_DIR, read_pairs, train_bpe, verify_corpus

NAME = "libreoffice-en"
VOCAB = 2000
CHECKSUMS = {  # SHA-256 of each directory's SHA256SUMS: what verify_corpus returns
    "libreoffice_de_en_large": "a9abd22037c870c83aeefaab2cf30c53cd9c1d8570d899da2e80b03e6a8fcc80",
    "libreoffice_de_en": "aa1cf03f8b4e99d48371061d7279efa92f19caf0877ce430d986c1319fab5d4d",
}


class LanguageModelTask(TranslationTask):
    """Sentences of one language, BPE-encoded, served as deterministic padded batches for a
    decoder-only LM: a :class:`TranslationTask` (same shuffling, token batching, chance loss)
    whose batches carry only ``tgt`` = [BOS] + tokens + [EOS]."""

    floor_loss = 0.0  # the text's own entropy is unknown

    def __init__(self, name: str, sentences: dict[str, Sequence[str]], sp_model: str | os.PathLike,
                 max_len: int = 64, seed: int = 0):
        super().__init__(name, {split: [("", s) for s in ss] for split, ss in sentences.items()},
                         sp_model, max_len=max_len, seed=seed)

    def _collate(self, split: str, idx: Sequence[int]) -> Batch:
        tgt = self._tgt[split]
        return Batch(src=None, tgt=self._pad([tgt[i] for i in idx]))

    def sentences(self, split: str = "train") -> list[str]:
        """The raw sentences of a split, in order."""
        return self.references(split)

    def n_tokens(self, split: str = "train") -> int:
        """Tokens of a split that carry a loss: every sentence's BPE pieces and its EOS."""
        return sum(len(row) - 1 for row in self._tgt[split])

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={len(v)}" for k, v in self.pairs.items())
        return f"LanguageModelTask({self.name!r}, {sizes}, vocab={self.tgt_vocab}, max_len={self.max_len}, seed={self.seed})"


def load_lm_corpus(vocab_size: int = VOCAB, seed: int = 0, max_len: int = 64,
                   cache_dir: str | os.PathLike | None = None) -> LanguageModelTask:
    """The English side of the shipped LibreOffice help corpus as a :class:`LanguageModelTask`
    (this module's docstring): files verified, BPE trained once (≈1 s) and cached under
    ``cache_dir`` (default ``$TFX_CACHE`` or ``~/.cache/tfx``) by corpus checksum and size."""
    key = verify_corpus(_LO_LARGE_DIR) + verify_corpus()
    sentences = {split: [en for _, en in read_pairs(split)] for split in SPLITS}
    sentences["train"] = [en for _, en in read_pairs("train", _LO_LARGE_DIR)]
    model = train_bpe(sentences["train"], vocab_size, key + "|en", cache_dir, prefix=NAME)
    return LanguageModelTask(NAME, sentences, model, max_len=max_len, seed=seed)
