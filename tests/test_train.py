"""The trainer: schedules, optimisers, determinism, exact resume, divergence and stuck runs."""
import math

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.train import History, lr_at

TASK = tfx.synthetic("reverse", vocab=8, length=6)


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, dropout=0.1)
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), batch=TASK.batch(0, 8))


def test_schedules():
    c = TrainConfig(lr=1.0, warmup=10, schedule="inverse-sqrt", steps=100)
    assert lr_at(5, c) == pytest.approx(0.5) and lr_at(10, c) == pytest.approx(1.0)
    assert lr_at(40, c) == pytest.approx(math.sqrt(10 / 40))
    c = TrainConfig(lr=1.0, warmup=10, schedule="linear-decay", steps=110)
    assert lr_at(5, c) == pytest.approx(0.5) and lr_at(60, c) == pytest.approx(0.5) and lr_at(110, c) == 0
    c = TrainConfig(lr=2.0, warmup=4, schedule="constant")
    assert [lr_at(s, c) for s in (1, 2, 4, 50)] == [0.5, 1.0, 2.0, 2.0]
    assert lr_at(1, TrainConfig(lr=3.0)) == 3.0


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd", "radam"])
def test_optimizers_reduce_the_loss(optimizer):
    lr = 0.3 if optimizer == "sgd" else 3e-3
    h = train(_model(placement="pre"), TASK, steps=60, lr=lr, optimizer=optimizer, batch_size=32, clip=1.0)
    assert h.status in ("ok", "stuck") and len(h.loss) == 60
    assert h.final_loss() < h.loss[0]
    assert all(g > 0 for g in h.grad_norm) and all(u > 0 for u in h.update_norm)


def test_history_records_everything():
    h = train(_model(), TASK, steps=20, lr=1e-3, eval_every=10, eval_batches=2, warmup=5)
    assert h.step == list(range(1, 21))
    assert h.lr[:5] == pytest.approx([2e-4, 4e-4, 6e-4, 8e-4, 1e-3])
    assert h.eval_step == [10, 20] and len(h.eval_loss) == 2 and 0 <= h.eval_acc[-1] <= 1
    assert h.chance_loss == pytest.approx(TASK.chance_loss)
    assert h.device == "cpu" and h.model_config["n_enc"] == 2 and h.train_config["lr"] == 1e-3
    assert h.tokens == 20 * 32 * 7 and h.tokens_per_second > 0


def test_same_seed_same_history():
    a = train(_model(), TASK, steps=15, lr=1e-3, seed=4)
    b = train(_model(), TASK, steps=15, lr=1e-3, seed=4)
    c = train(_model(), TASK, steps=15, lr=1e-3, seed=5)  # other dropout masks
    assert a.loss == b.loss and a.grad_norm == b.grad_norm and a.update_norm == b.update_norm
    assert a.loss != c.loss


def test_resume_is_exact(tmp_path):
    """Checkpoint at step 10, resume in a fresh model: the same history as 20 steps straight."""
    path = str(tmp_path / "ck.pt")
    cfg = TrainConfig(steps=20, lr=1e-3, warmup=5, seed=2, eval_every=5, eval_batches=1)
    straight = train(_model(), TASK, cfg)
    first = train(_model(), TASK, cfg.replace(steps=10, checkpoint_every=10, checkpoint_path=path))
    assert first.steps_done == 10
    resumed = train(_model(), TASK, cfg.replace(checkpoint_every=10, checkpoint_path=path), resume=True)
    assert resumed.step == straight.step
    assert resumed.loss == straight.loss
    assert resumed.update_norm == straight.update_norm
    assert resumed.eval_loss[-1] == straight.eval_loss[-1]


def test_nan_loss_is_diverged_not_an_exception():
    model = _model()
    with torch.no_grad():
        model.out_proj.weight.fill_(float("nan"))
    h = train(model, TASK, steps=10)
    assert h.status == "diverged" and "not finite" in h.reason
    assert h.steps_done == 0 and len(h.loss) == 1 and math.isnan(h.loss[0])


def test_exploding_loss_is_diverged():
    model = _model(placement="none")
    with torch.no_grad():
        model.out_proj.weight.mul_(1e3)
    h = train(model, TASK, steps=10, diverge_loss=20.0)
    assert h.status == "diverged" and "diverge_loss" in h.reason


def test_stuck_near_chance():
    """A run that never leaves the best constant prediction is 'stuck', not 'ok'."""
    h = train(_model(placement="post", n_enc=2, n_dec=2), TASK, steps=3, lr=1e-6)
    assert h.status == "stuck" and "chance" in h.reason
    h2 = train(_model(placement="pre"), TASK, steps=150, lr=3e-3, batch_size=32)
    assert h2.status == "ok" and h2.final_loss() < 0.5 * h2.chance_loss


def test_history_round_trip(tmp_path):
    h = train(_model(), TASK, steps=5)
    h.save(tmp_path / "h.json")
    assert History.load(tmp_path / "h.json").to_dict() == h.to_dict()


def test_reader_example_admin_on_the_shipped_corpus():
    """The README's five lines, shrunk: a Post-LN encoder–decoder with Admin init, no warmup."""
    data = tfx.data.load_corpus()
    cfg = ModelConfig.for_task(data, n_enc=2, n_dec=2, d_model=32, n_heads=4, d_ffn=64, placement="admin", init="admin")
    model = build_model(cfg, batch=data.batch(0, 8))
    h = train(model, data, steps=5, batch_size=8, warmup=0)
    assert h.status in ("ok", "stuck", "diverged") and h.steps_done == 5
    assert h.task and h.chance_loss < math.log(data.tgt_vocab)
