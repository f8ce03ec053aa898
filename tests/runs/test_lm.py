"""libreoffice-en: the English sentences a decoder-only LM reads (tfx.runs.lm)."""
import math

import pytest
import torch

from tfx import ModelConfig, build_model, train
from tfx.nn.batch import BOS, EOS, PAD
from tfx.runs import lm
from tfx.runs.corpus import corpus_dir, verify_corpus
from tfx.runs.data import TASKS, load_task
from tfx.runs.outcome import judge


@pytest.fixture(scope="module")
def task():
    return load_task("libreoffice-en")


def test_the_task_is_named_sized_and_checksummed_as_documented(task):
    assert "libreoffice-en" in TASKS and task.name == "libreoffice-en"
    assert task.src_vocab == task.tgt_vocab == lm.VOCAB == 2000 and task.max_len == 64 and task.floor_loss == 0.0
    assert [task.size(s) for s in ("train", "valid", "test")] == [26_084, 308, 310]
    assert [task.n_tokens(s) for s in ("train", "valid", "test")] == [645_950, 7_701, 8_078]
    for name in ("libreoffice-de-en-large", "libreoffice-de-en"):
        assert verify_corpus(corpus_dir(name)) == lm.CHECKSUMS[corpus_dir(name).name]
    for number in ("26,084", "308", "310", "645,950", "7,701", "8,078", "6.25"):
        assert number in lm.__doc__
    assert f"{task.chance_loss:.2f}" == "6.25"


def test_splits_are_disjoint(task):
    train_set = set(task.sentences("train"))
    assert not train_set & set(task.sentences("valid")) and not train_set & set(task.sentences("test"))
    assert not set(task.sentences("valid")) & set(task.sentences("test"))


def test_batches_are_deterministic_lm_rows(task):
    a, b, c = task.batch(7, 16), task.batch(7, 16), task.batch(8, 16)
    assert a.src is None and torch.equal(a.tgt, b.tgt) and not torch.equal(a.tgt, c.tgt)
    assert torch.equal(task.batch(3, 8, "valid").tgt, task.batch(3, 8, "valid").tgt)
    for row in a.tgt.tolist():
        assert row[0] == BOS and row.count(EOS) == 1 and set(row[row.index(EOS) + 1:]) <= {PAD}
    lengths = [row.index(EOS) + 1 for row in a.tgt.tolist()]
    assert a.tgt.shape[1] == max(lengths) <= task.max_len  # padded to the longest row
    assert task.decode(a.tgt[0]) in task.sentences("train") or len(task.sp.encode(task.decode(a.tgt[0]))) >= 62


def test_chance_is_the_unigram_entropy_of_the_training_tokens(task):
    counts = torch.bincount(torch.tensor([t for s in task.sp.encode(task.sentences("train"))
                                          for t in s[:62] + [EOS]]), minlength=task.tgt_vocab).double()
    p = counts[counts > 0] / counts.sum()
    assert task.chance_loss == pytest.approx(float(-(p * p.log()).sum()), rel=1e-9)


def test_a_small_decoder_only_lm_learns_the_text(task):
    torch.manual_seed(0)
    model = build_model(ModelConfig.for_task(task, n_enc=0, n_dec=2, d_model=64, n_heads=4, d_ffn=256,
                                             placement="pre"))
    start = float(model.loss(task.batch(0, 32))["loss"])
    assert abs(start - math.log(task.tgt_vocab)) < 0.1 * math.log(task.tgt_vocab)
    h = train(model, task, steps=100, lr=1e-2, clip=1.0, batch_size=32, eval_every=50, eval_batches=4,
              log_every=10)
    assert h.eval_loss[0] < h.chance_loss  # held out, below chance after 50 steps
    assert judge(h).verdict == "learned", judge(h).reason
