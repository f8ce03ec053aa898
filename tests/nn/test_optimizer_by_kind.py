"""TrainConfig.optimizer_by_kind and tfx.nn.optim.Composite: each kind of parameter
(tfx.nn.mup.parameter_kind) may have its own optimiser; together they take one step."""
from __future__ import annotations

import copy

import pytest
import torch

import tfx
from tfx.nn.config import ModelConfig, TrainConfig
from tfx.nn.mup import params_by_kind
from tfx.nn.optim import Composite, lr_at, make_optimizer, take_step

TASK = tfx.synthetic("reverse", length=6)
SPLIT = TrainConfig(optimizer="adamw", optimizer_by_kind={"hidden": "sgd"}, lr=1e-2, weight_decay=0.01,
                    momentum=0.9, schedule="linear-decay", warmup=2, steps=6)


def lm(d=32, **kw):
    return ModelConfig.for_task(TASK, n_enc=0, n_dec=2, placement="pre", d_model=d, n_heads=2, d_ffn=2 * d, **kw)


def loss_of(model, step):
    batch = TASK.batch(step, 8)
    torch.manual_seed(step)  # the same dropout masks in every copy
    return model.loss_and_accuracy(batch.src, batch.tgt, 0.0, batch.src_padded, batch.tgt_padded)[0]


# ------------------------------------------------------------------ the field
@pytest.mark.parametrize("value, match", [
    ({"hiden": "sgd"}, "optimizer_by_kind=.*kinds from 'hidden', 'embedding', 'vector', 'readout'"),
    ({"hidden": "lion"}, "optimizer_by_kind=.*optimizers from 'adam', 'adamw', 'sgd'"),
    ({}, "optimizer_by_kind=.*non-empty dict"),
    ("sgd", "optimizer_by_kind=.*dict"),
])
def test_a_bad_mapping_names_the_field_and_what_is_allowed(value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(optimizer_by_kind=value)


def test_a_mapping_that_changes_nothing_is_refused():
    with pytest.raises(ValueError, match="optimizer_by_kind=.*has no effect.*optimizer='adam'"):
        TrainConfig(optimizer="adam", optimizer_by_kind={"hidden": "adam"})


def test_independent_decay_needs_adamw_for_every_kind():
    with pytest.raises(ValueError, match="weight_decay_mode='independent' needs optimizer='adamw'.*for every "
                                         "parameter.*optimizer_by_kind=\\{'hidden': 'sgd'\\}"):
        TrainConfig(optimizer="adamw", optimizer_by_kind={"hidden": "sgd"}, weight_decay_mode="independent")
    # every kind named as AdamW: the default optimizer is then used by none
    kinds = dict.fromkeys(("hidden", "embedding", "vector", "readout"), "adamw")
    assert TrainConfig(optimizer="sgd", optimizer_by_kind=kinds, weight_decay_mode="independent").optimizers_used() \
        == {"adamw"}


def test_eps_is_refused_only_when_no_optimiser_takes_it():
    TrainConfig(optimizer="adam-atan2", optimizer_by_kind={"hidden": "adam"}, eps=1e-6)  # the hidden Adam takes ε
    with pytest.raises(ValueError, match="eps=1e-06 has no effect with optimizer='adam-atan2'"):
        TrainConfig(optimizer="adam-atan2", eps=1e-6)


def test_the_mapping_needs_the_model_and_kinds_it_has():
    model = tfx.build_model(lm(), seed=0)
    with pytest.raises(ValueError, match="optimizer_by_kind=.*needs the model"):
        make_optimizer(list(model.parameters()), SPLIT)
    for p in model.out_proj.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="names \\['readout'\\], which this model has no trainable parameters of"):
        make_optimizer(model, SPLIT.replace(optimizer_by_kind={"readout": "sgd"}))


# ------------------------------------------------------------------ the composite
def test_the_composite_holds_one_optimiser_per_name_over_disjoint_kinds():
    model = tfx.build_model(lm(), seed=0)
    opt = make_optimizer(model, SPLIT)
    assert isinstance(opt, Composite) and list(opt.optimizers) == ["sgd", "adamw"]
    assert isinstance(opt.optimizers["sgd"], torch.optim.SGD) and isinstance(opt.optimizers["adamw"], torch.optim.AdamW)
    assert [g["kind"] for g in opt.optimizers["sgd"].param_groups] == ["hidden"]
    assert [g["kind"] for g in opt.optimizers["adamw"].param_groups] == ["embedding", "vector", "readout"]
    ids = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters())  # every parameter once
    with pytest.raises(ValueError, match="shares parameters"):
        Composite({"a": torch.optim.SGD(model.parameters(), lr=1.0), "b": torch.optim.SGD(model.parameters(), lr=1.0)})


def test_each_set_moves_exactly_as_its_own_optimiser_alone_would():
    """SGD (momentum, L2) on the hidden matrices and AdamW on the rest, stepped through
    take_step with the schedule's rate: bit-identical to a standalone SGD and a standalone
    AdamW on a copy of the model, each over its own parameters, with the same gradients
    and rates; and the hidden matrices move otherwise than under AdamW alone."""
    model = tfx.build_model(lm(dropout=0.1), seed=0)
    alone, all_adamw = copy.deepcopy(model), copy.deepcopy(model)
    opt = make_optimizer(model, SPLIT)
    kinds = params_by_kind(alone)
    sgd = torch.optim.SGD(kinds["hidden"], lr=SPLIT.lr, momentum=SPLIT.momentum, weight_decay=SPLIT.weight_decay)
    adamw = torch.optim.AdamW([p for k in ("embedding", "vector", "readout") for p in kinds[k]], lr=SPLIT.lr,
                              betas=SPLIT.betas, eps=SPLIT.eps, weight_decay=SPLIT.weight_decay)
    reference = make_optimizer(all_adamw, SPLIT.replace(optimizer_by_kind=None))
    hidden = {id(p) for p in params_by_kind(model)["hidden"]}
    for step in range(1, 5):
        lr = lr_at(step, SPLIT)
        take_step(opt, loss_of(model, step), lr=lr)
        assert [g["lr"] for g in opt.param_groups] == [lr] * 4  # the schedule scales both optimisers
        sgd.zero_grad(), adamw.zero_grad()
        loss_of(alone, step).backward()
        for o in (sgd, adamw):
            for g in o.param_groups:
                g["lr"] = lr
            o.step()
        take_step(reference, loss_of(all_adamw, step), lr=lr)
        if step == 1:  # one step from the same θ: only the hidden matrices' optimiser differs
            for (name, a), c in zip(model.named_parameters(), all_adamw.parameters()):
                assert torch.equal(a, c) != (id(a) in hidden), name
    for (name, a), b in zip(model.named_parameters(), alone.parameters()):
        assert torch.equal(a, b), name


def test_mup_rates_and_decay_hold_in_each_optimiser():
    model = tfx.build_model(lm(128, parameterization="mup", base_width=32), seed=0)
    opt = make_optimizer(model, SPLIT)
    rates = {g["kind"]: (g["lr"], g["weight_decay"]) for g in opt.param_groups}
    assert rates["hidden"] == (SPLIT.lr / 4, SPLIT.weight_decay * 4)  # in the SGD
    assert rates["embedding"] == pytest.approx((SPLIT.lr / 2, SPLIT.weight_decay * 2))  # embed_scale: lr/√r
    assert rates["readout"] == (SPLIT.lr, SPLIT.weight_decay)


def test_state_dict_round_trip_resumes_identically():
    model = tfx.build_model(lm(), seed=0)
    opt = make_optimizer(model, SPLIT)
    for step in (1, 2):
        take_step(opt, loss_of(model, step), lr=lr_at(step, SPLIT))
    copy_model = copy.deepcopy(model)
    copy_opt = make_optimizer(copy_model, SPLIT)
    copy_opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert set(opt.state_dict()) == {"sgd", "adamw"}
    for step in (3, 4):
        take_step(opt, loss_of(model, step), lr=lr_at(step, SPLIT))
        take_step(copy_opt, loss_of(copy_model, step), lr=lr_at(step, SPLIT))
    for (name, a), b in zip(model.named_parameters(), copy_model.parameters()):
        assert torch.equal(a, b), name
    with pytest.raises(ValueError, match="this state is of optimisers \\['param_groups', 'state'\\]"):
        copy_opt.load_state_dict(torch.optim.AdamW(model.parameters()).state_dict())
