"""Weight decay under μP (tfx.nn.optim.group_decay): every parameter group decays by the same
amount a step whatever its μP rate factor, as Microsoft's mup package does (yang2022tp5).
Checked against mup itself (pinned in requirements-nodeps.txt, installed by `make venv`)."""
from __future__ import annotations

import copy

import pytest
import torch

import tfx
from tfx.nn.config import ModelConfig, TrainConfig
from tfx.nn.optim import group_decay, make_optimizer, take_step

TASK = tfx.synthetic("reverse", length=6)
LR, LAM = 1e-2, 0.1


def lm(d, base=32, **kw):
    mup = {"parameterization": "mup", "base_width": base} if base else {}
    return ModelConfig.for_task(TASK, n_enc=0, n_dec=2, placement="pre", d_model=d, n_heads=2, d_ffn=2 * d,
                                **mup, **kw)


def model_of(cfg, dtype=torch.float32):
    return tfx.build_model(cfg, seed=0).to(dtype)


def per_parameter(opt) -> dict:
    """{id(parameter): (lr, weight_decay)} of its group."""
    return {id(p): (g["lr"], g["weight_decay"]) for g in opt.param_groups for p in g["params"]}


def loss_of(model, step):
    batch = TASK.batch(step, 8)
    torch.manual_seed(step)  # the same dropout masks in both models
    return model.loss_and_accuracy(batch.src, batch.tgt, 0.0, batch.src_padded, batch.tgt_padded)[0]


# ------------------------------------------------------------------ the rule
@pytest.mark.parametrize("mode", ["coupled", "independent"])
def test_every_group_decays_alike_whatever_its_rate(mode):
    """lr_g·λ_g = lr·λ (coupled) or λ (independent, at the peak) in every group; a hidden
    matrix's rate is lr/r (r = 128/32 = 4), so its λ_g is 4λ (coupled): without group_decay
    it would be λ and the product lr·λ/4."""
    cfg = TrainConfig(optimizer="adamw", lr=LR, weight_decay=LAM, weight_decay_mode=mode)
    opt = make_optimizer(model_of(lm(128)), cfg)
    want = LR * LAM if mode == "coupled" else LAM
    assert {g["kind"] for g in opt.param_groups} == {"hidden", "embedding", "vector", "readout"}
    for g in opt.param_groups:
        assert g["lr"] * g["weight_decay"] == pytest.approx(want, rel=1e-12), g["kind"]
    hidden = next(g for g in opt.param_groups if g["kind"] == "hidden")
    assert hidden["lr"] == LR / 4
    assert hidden["weight_decay"] == (4 * LAM if mode == "coupled" else LAM / (LR / 4))


@pytest.mark.parametrize("mode", ["coupled", "independent"])
def test_a_step_with_no_gradient_shrinks_every_weight_by_the_same_factor(mode):
    """With zero gradients AdamW's step is the decay alone: θ ← θ·(1 − lr_g·λ_g). At a scheduled
    rate lr_t = lr/2 every parameter, whatever its μP rate factor, is multiplied by 1 − lr_t·λ
    (coupled) or 1 − λ·lr_t/lr (independent, wortsman2023proxies)."""
    model = model_of(lm(128), torch.float64)
    cfg = TrainConfig(optimizer="adamw", lr=LR, weight_decay=LAM, weight_decay_mode=mode)
    opt = make_optimizer(model, cfg)
    before = [p.detach().clone() for p in model.parameters()]
    take_step(opt, sum((0 * p).sum() for p in model.parameters()), lr=LR / 2)
    shrink = 1 - (LR / 2 * LAM if mode == "coupled" else LAM * (LR / 2) / LR)
    for (name, p), p0 in zip(model.named_parameters(), before):
        torch.testing.assert_close(p.detach(), p0 * shrink, rtol=1e-12, atol=0, msg=name)


def test_the_decay_differs_from_the_standard_groups_only_where_the_rate_does():
    """μP + decay vs the standard parameterisation with the same λ: a hidden matrix (rate lr/r)
    has λ·r; the embedding with embed_scale (rate lr/√r) λ·√r; vectors and the readout
    (rate lr) λ, as under the standard parameterisation."""
    cfg = TrainConfig(optimizer="adamw", lr=LR, weight_decay=LAM)
    mup = {g["kind"]: g["weight_decay"] for g in make_optimizer(model_of(lm(128)), cfg).param_groups}
    std = make_optimizer(model_of(lm(128, base=None)), cfg).param_groups
    assert len(std) == 1 and std[0]["weight_decay"] == LAM
    assert mup == pytest.approx({"hidden": 4 * LAM, "embedding": 2 * LAM, "vector": LAM, "readout": LAM})


def test_at_the_base_width_mup_with_decay_is_the_standard_run_to_the_bit():
    def losses(cfg):
        tc = TrainConfig(steps=5, lr=3e-3, optimizer="adamw", weight_decay=LAM, device="cpu", bleu_sentences=0,
                         eval_batches=1)
        return tfx.train(model_of(cfg), TASK, tc).loss

    assert losses(lm(32, base=None)) == losses(lm(32, base=32))


def test_group_decay_without_a_rate_factor_is_the_plain_decay():
    assert group_decay(TrainConfig(weight_decay=LAM)) == LAM
    assert group_decay(TrainConfig(optimizer="adamw", lr=LR, weight_decay=LAM, weight_decay_mode="independent")) \
        == LAM / LR


# ------------------------------------------------------------------ against the mup package
@pytest.fixture(scope="module")
def mup():
    return pytest.importorskip("mup", reason="mup==1.0.0 is a test requirement: make venv installs it "
                                             "(pip install --no-deps -r requirements-nodeps.txt)")


def _as_mup_sees_it(mup, model):
    """``model`` with mup's base shapes from the width-32 model. tfx's readout is an nn.Linear
    whose logits tfx multiplies by 1/r itself (tfx.nn.mup.readout_multiplier, MuReadout's rule),
    so mup's check that the readout is a MuReadout is off, and nothing is rescaled: only the
    optimiser is compared."""
    base = model_of(lm(32, embed_scale=False))
    return mup.set_base_shapes(model, base, rescale_params=False, do_assert=False)


@pytest.mark.parametrize("optimizer, mu", [("adamw", "MuAdamW"), ("adam", "MuAdam")])
@pytest.mark.parametrize("width", [128, 256])
def test_each_parameter_gets_mups_rate_and_decay(mup, optimizer, mu, width):
    """Per parameter, (lr, λ) of tfx's groups equal those of mup's MuAdamW / MuAdam (which
    scale a matrix-like weight's lr by 1/r and its weight_decay by r). The embedding is
    compared without embed_scale, which mup does not have."""
    model = model_of(lm(width, embed_scale=False))
    cfg = TrainConfig(optimizer=optimizer, lr=LR, weight_decay=LAM)
    ours = per_parameter(make_optimizer(model, cfg))
    theirs = per_parameter(getattr(mup, mu)(_as_mup_sees_it(mup, model).parameters(), lr=LR, weight_decay=LAM))
    assert ours == theirs
    assert len({lw for lw in ours.values()}) == 2  # hidden matrices (lr/r, λ·r) and the rest (lr, λ)


def test_three_steps_give_mups_parameters_in_float64(mup):
    """The same model, data and dropout stepped by tfx's AdamW under μP and by mup's MuAdamW:
    the parameters are bit-identical after three steps with decay, and every one has moved."""
    ours = model_of(lm(128, embed_scale=False), torch.float64)
    theirs = copy.deepcopy(ours)
    opt = make_optimizer(ours, TrainConfig(optimizer="adamw", lr=LR, weight_decay=LAM, betas=(0.9, 0.98)))
    mu_opt = mup.MuAdamW(_as_mup_sees_it(mup, theirs).parameters(), lr=LR, weight_decay=LAM, betas=(0.9, 0.98),
                         eps=1e-8)
    start = [p.detach().clone() for p in ours.parameters()]
    for step in range(3):
        take_step(opt, loss_of(ours, step))
        take_step(mu_opt, loss_of(theirs, step))
    for (name, a), b, a0 in zip(ours.named_parameters(), theirs.parameters(), start):
        assert torch.equal(a, b), name
        assert not torch.equal(a, a0), name
