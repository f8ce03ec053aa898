"""Synthetic tasks: the right targets, deterministic batches, the chance loss."""
import math

import pytest
import torch

from tfx.nn.batch import BOS, EOS, N_SPECIAL
from tfx.runs.data import synthetic


@pytest.mark.parametrize("kind", ["copy", "reverse", "sort"])
def test_targets(kind):
    task = synthetic(kind, vocab=10, length=7, seed=3)
    b = task.batch(5, 16)
    x = b.src[:, :-1]
    assert (b.src[:, -1] == EOS).all() and (b.tgt[:, 0] == BOS).all() and (b.tgt[:, -1] == EOS).all()
    assert ((x >= N_SPECIAL) & (x < N_SPECIAL + 10)).all()
    want = {"copy": x, "reverse": x.flip(-1), "sort": x.sort(-1).values}[kind]
    assert torch.equal(b.tgt[:, 1:-1], want)


def test_batches_are_a_function_of_seed_step_and_split():
    t = synthetic(seed=1)
    assert torch.equal(t.batch(3, 8).src, t.batch(3, 8).src)
    assert not torch.equal(t.batch(3, 8).src, t.batch(4, 8).src)
    assert not torch.equal(t.batch(3, 8).src, t.batch(3, 8, "valid").src)
    assert not torch.equal(t.batch(3, 8).src, synthetic(seed=2).batch(3, 8).src)


def test_chance_loss_is_the_best_source_free_prediction():
    """Mean over positions of the entropy of the target token at that position."""
    t = synthetic("copy", vocab=5, length=4)
    tgt = t.batch(0, 20000).tgt[:, 1:]
    ent = []
    for pos in range(tgt.shape[1]):
        counts = torch.bincount(tgt[:, pos], minlength=t.tgt_vocab).double()
        p = counts[counts > 0] / counts.sum()
        ent.append(float(-(p * p.log()).sum()))
    assert t.chance_loss == pytest.approx(sum(ent) / len(ent), rel=2e-3)
    assert t.chance_loss < math.log(t.tgt_vocab)


@pytest.mark.parametrize("kw, field", [(dict(kind="shuffle"), "kind"), (dict(vocab=1), "vocab"), (dict(length=0), "length")])
def test_bad_task_arguments(kw, field):
    with pytest.raises(ValueError, match=field):
        synthetic(**kw)


def test_batches_by_token_count():
    t = synthetic(vocab=10, length=6)
    b = t.batch(2, max_tokens=64)  # 8 target tokens per sequence
    assert b.tgt.shape == (8, 8) and torch.equal(b.src, t.batch(2, 8).src)
    with pytest.raises(ValueError, match="batch_size or max_tokens"):
        t.batch(0)


def test_every_task_name_resolves_through_one_registry(monkeypatch):
    """tfx.runs.data.TASKS is the one list of task names: load_task loads each (IWSLT'14's
    download stubbed), the shipped corpora are among them, and IWSLT'14's own task.name ('iwslt14-de-en', what its History records) is refused as a
    name to load by, with a hint."""
    from tfx.runs import corpus, data, lm

    assert set(corpus.CORPORA) <= set(data.TASKS) and lm.NAME in data.TASKS
    loaded = {}
    monkeypatch.setattr(corpus, "load_iwslt14_task", lambda seed=0: loaded.setdefault("iwslt14", seed))
    monkeypatch.setattr(corpus, "load_corpus", lambda name, seed=0: loaded.setdefault(name, seed))
    monkeypatch.setattr(lm, "load_lm_corpus", lambda seed=0: loaded.setdefault(lm.NAME, seed))
    for name in data.TASKS:
        task = data.load_task(name, seed=3)
        assert loaded.get(name) == 3 or task.name.startswith(name.split("-")[0])
    assert set(loaded) == {"iwslt14", lm.NAME, *corpus.CORPORA}  # the rest are synthetic
    with pytest.raises(ValueError, match="load it as 'iwslt14'"):
        data.load_task(corpus.IWSLT14_NAME)


def test_one_seed_stride_for_every_stream():
    """The prime between seeds' streams is tfx.nn.config.SEED_STRIDE everywhere; the trainer's
    DATA_STREAM (batches of one data seed) must stay the same number."""
    from tfx.nn.config import SEED_STRIDE
    from tfx.runs import train

    assert SEED_STRIDE == train.DATA_STREAM == 1_000_003
