"""The optimiser's options, each with a test that fails if the option does nothing:
Adam-atan2 (everett2024scaling), Adam's ε, coupled (Adam + L2) against decoupled (AdamW)
weight decay (loshchilov2019adamw)."""
from __future__ import annotations

import math

import pytest
import torch

import tfx
from tfx.nn.config import ModelConfig, TrainConfig
from tfx.nn.optim import AdamAtan2, make_optimizer, take_step


def one_step(optimizer="adam", grad_scale=1.0, steps=1, **kw):
    """θ after ``steps`` steps on grad_scale · ½‖θ − c‖² from θ = 0 (a gradient we can write)."""
    theta = torch.nn.Parameter(torch.zeros(5, dtype=torch.float64))
    c = torch.tensor([1.0, -2.0, 0.5, 3.0, -0.1], dtype=torch.float64)
    opt = make_optimizer([theta], TrainConfig(optimizer=optimizer, lr=0.1, **kw))
    for _ in range(steps):
        take_step(opt, grad_scale * 0.5 * (theta - c).pow(2).sum())
    return theta.detach().clone()


# ------------------------------------------------------------------ Adam-atan2
def test_adam_atan2_is_in_the_registry_and_has_no_eps():
    opt = make_optimizer([torch.nn.Parameter(torch.zeros(2))], TrainConfig(optimizer="adam-atan2"))
    assert isinstance(opt, AdamAtan2) and "eps" not in opt.param_groups[0]
    with pytest.raises(ValueError, match="eps=0.001 has no effect with optimizer='adam-atan2'"):
        TrainConfig(optimizer="adam-atan2", eps=1e-3)


def test_adam_atan2_is_atan_of_adams_ratio():
    """Where |g| ≫ ε Adam's step is lr·m̂/√v̂; Adam-atan2's is lr·arctan(m̂/√v̂): the same
    direction, within (arctan x − x) ≤ x³/3 of Adam's when the ratio x is small."""
    adam, atan2 = one_step("adam", steps=3), one_step("adam-atan2", steps=3)
    assert not torch.allclose(adam, atan2)  # the option changes the step
    # step 1: m̂/√v̂ = sign(g), so Adam moves lr and Adam-atan2 lr·π/4 per coordinate
    assert torch.allclose(one_step("adam").abs(), torch.full((5,), 0.1, dtype=torch.float64), rtol=1e-6)
    assert torch.allclose(one_step("adam-atan2").abs(), torch.full((5,), 0.1 * math.pi / 4,
                                                                    dtype=torch.float64))


def test_adam_atan2_equals_adam_where_the_ratio_is_small_and_eps_negligible():
    """After many steps near a minimum |m̂| ≪ √v̂: the two steps agree to first order."""
    g = torch.Generator().manual_seed(0)
    noise = torch.randn(200, 4, generator=g, dtype=torch.float64)
    steps = {}
    for name in ("adam", "adam-atan2"):
        theta = torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))
        opt = make_optimizer([theta], TrainConfig(optimizer=name, lr=1e-3))
        for t in range(200):  # zero-mean noisy gradients: m̂ small against √v̂
            before = theta.detach().clone()
            take_step(opt, (theta * noise[t]).sum())
        steps[name] = theta.detach() - before
    assert torch.allclose(steps["adam"], steps["adam-atan2"], rtol=0.05)


def test_adam_atan2_does_not_collapse_on_tiny_gradients_while_adam_does():
    adam_tiny = one_step("adam", grad_scale=1e-12)
    atan2_tiny = one_step("adam-atan2", grad_scale=1e-12)
    assert adam_tiny.abs().max() < 1e-2 * one_step("adam").abs().min()  # ε swamps √v̂
    assert torch.allclose(atan2_tiny, one_step("adam-atan2"))  # scale-invariant


def test_adam_atan2_trains_a_model_and_eps_is_not_read():
    task = tfx.synthetic("reverse", length=6)
    cfg = ModelConfig.for_task(task, n_enc=0, n_dec=1, placement="pre", d_model=16, n_heads=2, d_ffn=32)
    tc = TrainConfig(steps=4, lr=3e-3, device="cpu", bleu_sentences=0, eval_batches=1)
    h_adam = tfx.train(tfx.build_model(cfg, seed=0), task, tc)
    h_atan2 = tfx.train(tfx.build_model(cfg, seed=0), task, tc.replace(optimizer="adam-atan2"))
    assert h_adam.loss != h_atan2.loss and all(math.isfinite(x) for x in h_atan2.update_norm)


# ------------------------------------------------------------------ Adam's ε
def test_eps_changes_a_run_whose_gradients_are_small():
    """Gradients of size 1e-6: ε = 1e-8 leaves Adam's step at lr, ε = 1e-4 shrinks it ~100×."""
    small, large = one_step("adam", grad_scale=1e-6, eps=1e-8), one_step("adam", grad_scale=1e-6, eps=1e-4)
    assert not torch.equal(small, large)
    assert large.abs().max() < 0.05 * small.abs().min()


# ------------------------------------------------------------------ weight decay
def test_coupled_and_decoupled_weight_decay_differ_and_match_their_formulas():
    """From θ = 0 decay has nothing to act on; start from θ₀ ≠ 0 for one step, lr η, λ:
    Adam + L2 (coupled): g' = g + λθ₀ goes through Adam, so step 1 is −η·sign(g + λθ₀);
    AdamW (decoupled): θ₁ = θ₀(1 − ηλ) − η·sign(g)."""
    lr, lam = 0.1, 0.5
    theta0 = torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64)
    c = torch.tensor([1.5, 0.0, 1.0], dtype=torch.float64)
    out = {}
    for name in ("adam", "adamw"):
        theta = torch.nn.Parameter(theta0.clone())
        opt = make_optimizer([theta], TrainConfig(optimizer=name, lr=lr, weight_decay=lam, eps=1e-12))
        take_step(opt, 0.5 * (theta - c).pow(2).sum())
        out[name] = theta.detach()
    g = theta0 - c
    assert torch.allclose(out["adam"], theta0 - lr * torch.sign(g + lam * theta0))
    assert torch.allclose(out["adamw"], theta0 * (1 - lr * lam) - lr * torch.sign(g))
    assert not torch.allclose(out["adam"], out["adamw"])
