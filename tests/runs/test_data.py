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
