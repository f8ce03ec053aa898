"""tfx.nn.optim: the one optimiser step (take_step), the data each step reads (data_step,
step_batch), and the rule that nothing else in tfx steps an optimiser."""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest
import torch

import tfx
from tfx.nn.config import ModelConfig, TrainConfig
from tfx.nn.optim import data_step, make_optimizer, step_batch, take_step
from tfx.runs.train import train
from tfx.theory import adam

ROOT = Path(tfx.__file__).resolve().parent


def quadratic(seed=0):
    """θ ∈ R⁴ and the objective ½‖Aθ‖², a gradient we can write down: ∇ = AᵀAθ."""
    g = torch.Generator().manual_seed(seed)
    theta = torch.nn.Parameter(torch.randn(4, generator=g))
    a = torch.randn(4, 4, generator=g)
    return theta, a, lambda: 0.5 * (a @ theta).pow(2).sum()


def test_take_step_is_one_sgd_step_and_sets_the_learning_rate():
    theta, a, objective = quadratic()
    opt = torch.optim.SGD([theta], lr=1.0)
    want = theta.detach() - 0.1 * (a.T @ a @ theta.detach())
    assert take_step(opt, objective(), lr=0.1) is None  # no norm asked for: nothing computed
    assert opt.param_groups[0]["lr"] == 0.1
    torch.testing.assert_close(theta.detach(), want)


def test_take_step_clears_old_gradients_before_backward():
    theta, a, objective = quadratic()
    opt = torch.optim.SGD([theta], lr=0.0)
    take_step(opt, objective())
    take_step(opt, objective())  # lr 0: θ unchanged, so the gradient must be the same, not twice it
    torch.testing.assert_close(theta.grad, a.T @ a @ theta.detach())


def test_take_step_clips_the_global_norm_and_returns_it_before_clipping():
    theta, a, objective = quadratic()
    grad = a.T @ a @ theta.detach()
    opt = torch.optim.SGD([theta], lr=1.0)
    start = theta.detach().clone()
    norm = take_step(opt, objective(), clip=1e-3)
    assert float(norm) == pytest.approx(float(grad.norm()), rel=1e-6)
    assert float((start - theta.detach()).norm()) == pytest.approx(1e-3, rel=1e-4)  # the step was clipped
    theta2, _, objective2 = quadratic()
    norm2 = take_step(torch.optim.SGD([theta2], lr=1.0), objective2(), grad_norm=True)
    assert float(norm2) == pytest.approx(float(grad.norm()), rel=1e-6)
    torch.testing.assert_close(theta2.detach(), start - grad)  # grad_norm alone does not clip


def test_before_update_sees_the_gradients_and_the_old_weights():
    theta, a, objective = quadratic()
    start = theta.detach().clone()
    seen = {}

    def probe():
        seen["theta"], seen["grad"] = theta.detach().clone(), theta.grad.clone()

    take_step(torch.optim.SGD([theta], lr=0.5), objective(), before_update=probe)
    torch.testing.assert_close(seen["theta"], start)
    torch.testing.assert_close(seen["grad"], a.T @ a @ start)
    assert not torch.equal(theta.detach(), start)


def test_a_scaler_unscales_before_clipping_and_skips_a_non_finite_step():
    theta, a, objective = quadratic()
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    seen = {}
    take_step(torch.optim.SGD([theta], lr=0.0), objective(), scaler=scaler,
              before_update=lambda: seen.update(grad=theta.grad.clone()))
    torch.testing.assert_close(seen["grad"], a.T @ a @ theta.detach())  # unscaled
    start = theta.detach().clone()
    bad = (theta * torch.tensor([float("inf"), 1, 1, 1])).sum()
    take_step(torch.optim.SGD([theta], lr=1.0), bad, scaler=scaler)
    assert torch.equal(theta.detach(), start)  # the scaler skipped it
    assert scaler.get_scale() < 1024.0


def test_data_step_follows_the_data_seed():
    assert data_step(1, TrainConfig(seed=0)) == 0
    assert data_step(3, TrainConfig(seed=0)) == 2
    assert data_step(1, TrainConfig(seed=2)) == data_step(1, TrainConfig(seed=5, data_seed=2)) != 0
    with pytest.raises(ValueError, match="step=0"):
        data_step(0, TrainConfig())


def test_step_batch_uses_max_tokens_when_set():
    task = tfx.synthetic("reverse", vocab=20, length=8)
    by_count = step_batch(task, 1, TrainConfig(batch_size=4))
    by_tokens = step_batch(task, 1, TrainConfig(batch_size=4, max_tokens=200))
    assert by_count.src.shape[0] == 4 and by_tokens.src.shape[0] != 4


@pytest.mark.parametrize("seed", [0, 1])
def test_first_steps_trains_on_the_batches_tfx_train_reads(seed):
    """WU-3's first_steps says it follows tfx.train: same optimiser, schedule and data. With
    seed 1 the data differ from batch step − 1, which is what it used to read."""
    task = tfx.synthetic("reverse", vocab=20, length=8)
    cfg = ModelConfig.for_task(task, d_model=32, n_heads=2, d_ffn=64, n_enc=2, n_dec=2, dropout=0.0)
    tc = TrainConfig(steps=6, batch_size=8, lr=3e-3, warmup=2, seed=seed, log_every=1, eval_batches=1,
                     bleu_sentences=0, device="cpu")
    model = tfx.build_model(cfg, seed=seed)
    fs = adam.first_steps(copy.deepcopy(model), task, tc, steps=6, every=3)
    hist = train(model, task, tc)
    assert fs.loss == pytest.approx(hist.loss, rel=1e-6, abs=1e-7)


def test_no_module_but_optim_steps_an_optimiser():
    """One optimiser step in tfx: an ``X.step()`` call with no argument (an optimiser's step)
    anywhere else in the library is a second, hand-written loop (bench's loops included)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "nn" / "optim.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "step" and not node.args and not node.keywords):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"optimiser steps outside tfx.nn.optim.take_step: {found}"


def test_make_optimizer_is_what_take_step_steps():
    theta, _, objective = quadratic()
    opt = make_optimizer([theta], TrainConfig(optimizer="sgd", lr=0.1, momentum=0.0))
    start = theta.detach().clone()
    take_step(opt, objective())
    assert not torch.equal(start, theta.detach())
