"""tfx.nn.mup and ModelConfig(parameterization="mup"): μP for Adam (yang2022tp5). Each rule has
a test that fails if the option does nothing; the standard parameterisation stays as it was."""
from __future__ import annotations

import math

import pytest
import torch

import tfx
from tfx.nn.config import ModelConfig, TrainConfig
from tfx.nn.mup import attention_scale, lr_scales, param_groups, parameter_kind, readout_multiplier
from tfx.nn.optim import make_optimizer

TASK = tfx.synthetic("reverse", length=6)


def lm(d=32, base=None, **kw):
    mup = {} if base is None else {"parameterization": "mup", "base_width": base}
    return ModelConfig.for_task(TASK, n_enc=0, n_dec=2, placement="pre", d_model=d, n_heads=2,
                                d_ffn=2 * d, **mup, **kw)


def losses(cfg, steps=6, lr=3e-3):
    model = tfx.build_model(cfg, seed=0)
    tc = TrainConfig(steps=steps, lr=lr, device="cpu", bleu_sentences=0, eval_batches=1)
    return tfx.train(model, TASK, tc).loss


# ------------------------------------------------------------------ validation
def test_unknown_parameterization_names_the_field_and_the_choices():
    with pytest.raises(ValueError, match="parameterization='mu-p'.*'standard', 'mup'"):
        lm(parameterization="mu-p")


@pytest.mark.parametrize("base", [None, 0, 3, 2.0, True])
def test_mup_needs_a_base_width_divisible_by_the_heads(base):
    with pytest.raises(ValueError, match="base_width"):
        ModelConfig(parameterization="mup", base_width=base, d_model=32, n_heads=2)


def test_base_width_without_mup_is_refused():
    with pytest.raises(ValueError, match="base_width=16 has no effect"):
        ModelConfig(base_width=16)


def test_mup_refuses_tied_embeddings():
    with pytest.raises(ValueError, match="tie_embeddings=False"):
        lm(base=16, tie_embeddings=True)


def test_base_width_may_be_wider_than_the_model():
    assert lm(d=16, base=32).base_width == 32


# ------------------------------------------------------------------ standard is untouched
def test_standard_param_groups_are_the_model_parameters():
    model = tfx.build_model(lm(), seed=0)
    assert param_groups(model) == list(model.parameters())
    opt = make_optimizer(model, TrainConfig())
    assert len(opt.param_groups) == 1 and "lr_scale" not in opt.param_groups[0]


def test_mup_at_the_base_width_is_the_standard_model_to_the_bit():
    std, mup = tfx.build_model(lm(), seed=0), tfx.build_model(lm(base=32), seed=0)
    for (n, a), (_, b) in zip(std.state_dict().items(), mup.state_dict().items()):
        assert torch.equal(a, b), n
    assert losses(lm()) == losses(lm(base=32))


# ------------------------------------------------------------------ each rule does something
def test_mup_changes_training_away_from_the_base_width():
    assert losses(lm(d=32)) != losses(lm(d=32, base=16))


def test_hidden_weights_get_the_rate_times_base_over_width():
    model = tfx.build_model(lm(d=64, base=16), seed=0)
    opt = make_optimizer(model, TrainConfig(lr=1e-3))
    rates = {g["kind"]: g["lr"] for g in opt.param_groups}
    assert rates["hidden"] == pytest.approx(1e-3 * 16 / 64)
    assert rates["embedding"] == pytest.approx(1e-3 * math.sqrt(16 / 64))  # embed_scale: √d
    assert rates["vector"] == rates["readout"] == 1e-3
    tfx.nn.optim.set_lr(opt, 2e-3)  # the schedule keeps each group's factor
    assert {g["kind"]: g["lr"] for g in opt.param_groups}["hidden"] == pytest.approx(2e-3 / 4)


def test_parameter_kinds():
    model = tfx.build_model(lm(d=64, base=16, qk_norm=True), seed=0)
    kinds = {n: parameter_kind(model, n, p) for n, p in model.named_parameters()}
    assert kinds["out_proj.weight"] == "readout"
    assert kinds["tgt_embed.tok.weight"] == "embedding"
    assert kinds["decoder.layers.0.self_attn.f.q_proj.weight"] == "hidden"
    assert kinds["decoder.layers.0.ffn.f.fc2.weight"] == "hidden"
    assert kinds["decoder.layers.0.ffn.f.fc2.bias"] == "vector"
    assert kinds["decoder.layers.0.ffn.norm.weight"] == "vector"
    assert kinds["decoder.layers.0.self_attn.f.q_norm.weight"] == "vector"
    groups = param_groups(model)
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
    assert lr_scales(tfx.build_model(lm(d=64, base=16, embed_scale=False), seed=0))["embedding"] == 1.0


def test_attention_logits_scale_as_one_over_d_head():
    assert attention_scale(lm(d=32)) == 16**-0.5
    assert attention_scale(lm(d=32, base=32)) == 16**-0.5
    assert attention_scale(lm(d=128, base=32)) == pytest.approx(math.sqrt(16) / 64)
    model = tfx.build_model(lm(d=128, base=32), seed=0)
    assert model.decoder.layers[0].self_attn.f.scale == pytest.approx(4 / 64)


def test_readout_logits_are_multiplied_by_base_over_width():
    std, mup = tfx.build_model(lm(d=64), seed=0), tfx.build_model(lm(d=64, base=16), seed=0)
    assert readout_multiplier(mup.cfg) == 0.25 and readout_multiplier(std.cfg) == 1.0
    h = torch.randn(3, 64)
    assert torch.allclose(mup.logits(h), 0.25 * std.logits(h))
