"""The large shipped corpus: every pair of the LibreOffice help pages (train split only;
valid and test are the small corpus's), compressed and checksummed."""
from __future__ import annotations

import pytest

from tfx.runs.corpus import CorpusChecksumError, corpus_dir, load_corpus, read_pairs, verify_corpus
from tfx.runs.lm import CHECKSUMS

LARGE = corpus_dir("libreoffice-de-en-large")


def test_large_corpus_is_checksummed_licensed_and_small_on_disk(tmp_path):
    assert verify_corpus(LARGE) == CHECKSUMS["libreoffice_de_en_large"]  # every file as SHA256SUMS lists it
    notice = (LARGE / "NOTICE").read_text(encoding="utf-8")
    assert "MPL-2.0" in notice and "valid and test splits are those of ../libreoffice_de_en" in notice
    assert "Mozilla Public License Version 2.0" in (LARGE / "LICENSE").read_text(encoding="utf-8")
    assert sum(f.stat().st_size for f in LARGE.iterdir()) < 3_000_000
    (tmp_path / "SHA256SUMS").write_text((LARGE / "SHA256SUMS").read_text())
    with pytest.raises(CorpusChecksumError, match="train.tsv.gz.*missing"):
        verify_corpus(tmp_path)


def test_large_train_extends_the_small_one_and_never_meets_valid_or_test():
    large, small = read_pairs("train", LARGE), read_pairs("train")
    assert len(large) > 25_000
    assert large[:len(small)] == small  # the same walk over the files, without the 4k stop
    held_out = {p for s in ("valid", "test") for p in read_pairs(s)}
    de, en = {d for d, _ in held_out}, {e for _, e in held_out}
    assert not any(d in de or e in en for d, e in large)
    assert len({d for d, _ in large}) == len(large)  # no repeated German sentence
    files = [line.split("\t") for line in (LARGE / "files.tsv").read_text(encoding="utf-8").splitlines()]
    assert sum(int(n) for s, _, n in files if s == "train") == len(large)


def test_load_large_corpus(tmp_path):
    task = load_corpus("libreoffice-de-en-large", cache_dir=tmp_path)
    small = load_corpus(cache_dir=tmp_path)
    assert task.name == "libreoffice-de-en-large" and task.tgt_vocab == 8000
    assert len(task) == len(read_pairs("train", LARGE))
    assert task.references("valid") == small.references("valid")  # comparable BLEU
    b = task.batch(3, 8)
    assert b.src.shape[0] == 8 and task.decode(b.tgt[0])
    with pytest.raises(ValueError, match="name='x'"):
        corpus_dir("x")
