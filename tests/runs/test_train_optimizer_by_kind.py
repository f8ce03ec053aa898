"""The trainer with two optimisers sharing a run (TrainConfig.optimizer_by_kind, a
tfx.nn.optim.Composite stepped by the one take_step): the schedule scales both, the update
norm covers both, a checkpoint resumes it exactly; and the default (one optimiser) is the run
tfx trained before optimiser groups by kind existed, to the bit."""
from __future__ import annotations

import copy

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.nn.mup import param_groups
from tfx.nn.optim import Composite, lr_at, make_optimizer, step_batch, take_step
from tfx.runs.train import CheckpointError, UpdateNorm

TASK = tfx.synthetic("reverse", vocab=8, length=6)
SPLIT = TrainConfig(steps=12, lr=3e-3, optimizer="adamw", optimizer_by_kind={"hidden": "sgd"}, momentum=0.9,
                    weight_decay=0.01, warmup=4, seed=2, eval_every=6, eval_batches=1, bleu_sentences=0)


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=0, n_dec=2, placement="pre", dropout=0.1)
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), seed=0)


def test_a_split_run_trains_and_its_rates_follow_the_schedule():
    h = train(_model(), TASK, SPLIT)
    assert h.lr == [lr_at(t, SPLIT) for t in range(1, 13)]  # warmup, read from both optimisers' groups
    assert all(u > 0 for u in h.update_norm) and h.loss[-1] < h.loss[0]
    assert h.train_config["optimizer_by_kind"] == {"hidden": "sgd"}
    assert h.loss != train(_model(), TASK, SPLIT.replace(optimizer_by_kind=None)).loss  # the option does something


def test_a_split_run_resumes_exactly(tmp_path):
    """Checkpoint at step 6, resume in a fresh model: the same history as 12 steps straight."""
    path = str(tmp_path / "ck.pt")
    straight = train(_model(), TASK, SPLIT)
    first = train(_model(), TASK, SPLIT.replace(steps=6, checkpoint_every=6, checkpoint_path=path))
    assert first.steps_done == 6
    ck = torch.load(path, weights_only=True)
    assert set(ck["optimizer"]) == {"sgd", "adamw"}
    resumed = train(_model(), TASK, SPLIT.replace(checkpoint_every=6, checkpoint_path=path), resume=True)
    assert resumed.step == straight.step
    assert resumed.loss == straight.loss and resumed.update_norm == straight.update_norm
    assert resumed.eval_loss[-1] == straight.eval_loss[-1]  # the cut-off run's step-6 evaluation is its final one


def test_a_checkpoint_of_another_recipe_is_refused(tmp_path):
    path = str(tmp_path / "ck.pt")
    train(_model(), TASK, SPLIT.replace(optimizer_by_kind=None, steps=2, checkpoint_every=2, checkpoint_path=path))
    with pytest.raises(CheckpointError, match="does not fit this model and optimiser.*optimisers"):
        train(_model(), TASK, SPLIT.replace(checkpoint_every=2, checkpoint_path=path), resume=True)


def test_the_update_norm_of_a_composite_is_the_step_taken():
    model = _model(dropout=0.0)
    opt = make_optimizer(model, SPLIT)
    assert isinstance(opt, Composite)
    upd = UpdateNorm(opt)
    for step in range(1, 4):
        old = [p.detach().clone() for p in model.parameters()]
        batch = step_batch(TASK, step, SPLIT)
        loss = model.loss_and_accuracy(batch.src, batch.tgt, 0.0, batch.src_padded, batch.tgt_padded)[0]
        take_step(opt, loss, lr=lr_at(step, SPLIT), before_update=upd.before)
        want = torch.linalg.vector_norm(torch.stack([(p.detach() - o).norm() for p, o in zip(model.parameters(), old)]))
        assert float(upd.after()) == pytest.approx(float(want), rel=1e-4)


# ------------------------------------------------------------------ the default is unchanged
def _pre_change_optimizer(model, cfg, device):
    """What make_optimizer built for Adam without weight decay before optimiser groups by kind
    (commit eb16597): the model's param_groups at cfg.lr · lr_scale, one fused torch Adam."""
    params = [{**p, "lr": cfg.lr * p.get("lr_scale", 1.0)} if isinstance(p, dict) else p for p in param_groups(model)]
    return torch.optim.Adam(params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay, fused=True)


@pytest.mark.parametrize("model_kw", [{}, {"parameterization": "mup", "base_width": 16}], ids=["standard", "mup"])
def test_the_default_run_is_the_pre_change_run_to_the_bit(model_kw):
    """tfx.train with the default optimiser, against the same steps taken by hand through the
    optimiser tfx built before (same batches, dropout seed, rates): equal losses and gradient
    norms, bit for bit."""
    cfg = TrainConfig(steps=6, lr=3e-3, warmup=2, seed=1, eval_batches=1, bleu_sentences=0, device="cpu")
    model = _model(**model_kw)
    by_hand = copy.deepcopy(model)
    h = train(model, TASK, cfg)
    opt = _pre_change_optimizer(by_hand, cfg, torch.device("cpu"))
    torch.manual_seed(cfg.seed)  # as train does: dropout; the data depends on the step alone
    losses, norms = [], []
    for step in range(1, cfg.steps + 1):
        batch = step_batch(TASK, step, cfg)
        loss = by_hand.loss_and_accuracy(batch.src, batch.tgt, cfg.label_smoothing, batch.src_padded,
                                         batch.tgt_padded)[0]
        norms.append(float(take_step(opt, loss, lr=lr_at(step, cfg), grad_norm=True)))
        losses.append(float(loss.detach()))
    assert h.loss == losses and h.grad_norm == norms
    for (name, a), b in zip(model.named_parameters(), by_hand.parameters()):
        assert torch.equal(a, b), name
