"""Property-based check of every ModelConfig / TrainConfig field (hypothesis).

For each field, values drawn from what the field must reject (non-finite numbers,
integers too large for a float, booleans, strings, None, sequences, objects, …)
raise a ValueError naming the field — never a TypeError, never accepted — and
values drawn from what it must accept (including NumPy scalars, paths and
torch.device objects) are accepted and stored as plain, JSON-safe Python values.

The specification below is written independently of tfx/nn/config.py. A new field
needs one line in MODEL_SPEC or TRAIN_SPEC: the coverage tests fail until it has one.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tfx import ModelConfig, TrainConfig

SETTINGS = settings(max_examples=25, deadline=None, database=None)

# ------------------------------------------------------------------ value families
NON_FINITE = st.sampled_from([math.inf, -math.inf, math.nan, np.float64("inf"), np.float32("nan")])
TOO_BIG_FOR_A_FLOAT = st.integers(2**1024, 2**1100)
NOT_A_NUMBER = st.one_of(
    st.booleans(), st.just(np.bool_(True)), st.none(), st.text(max_size=6), st.just("0.5"), st.binary(max_size=4),
    st.lists(st.floats(0, 0.5), max_size=3), st.tuples(st.floats(0, 0.5)), st.complex_numbers(max_magnitude=1),
    st.just(torch.tensor(0.5)), st.builds(object), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
NOT_A_STRING = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.binary(max_size=4),
                         st.lists(st.text(max_size=3), max_size=2), st.builds(object))


def integers(low, high=None):
    """Integers in [low, high): NumPy integers too; never floats (not even 2.0) or bools."""
    good = st.integers(low, (high or 2**40) - 1)
    bad = st.one_of(NOT_A_NUMBER, NON_FINITE, st.floats(),
                    st.integers(max_value=low - 1), st.just(np.float64(low + 1)),
                    *([st.integers(high, high * 4)] if high else []))
    return good | good.filter(lambda v: v < 2**62).map(np.int64), bad


def numbers(low, high=None, low_open=False, high_open=False):
    """Finite reals in the interval with integer bounds (NumPy floats too; integers up to
    2**53, which a float holds exactly)."""
    lowest = low + 1 if low_open else low  # the integers in the interval
    highest = 2**53 if high is None else high - 1 if high_open else high
    good = st.one_of(st.floats(low, 1e300 if high is None else high, exclude_min=low_open, exclude_max=high_open),
                     st.integers(lowest, highest))
    below = st.floats(max_value=low, exclude_max=not low_open, allow_nan=False) | st.integers(max_value=lowest - 1)
    bad = [NOT_A_NUMBER, NON_FINITE, TOO_BIG_FOR_A_FLOAT, below]
    if high is not None:
        above = st.floats(min_value=high, exclude_min=not high_open, allow_nan=False) | st.integers(highest + 1)
        bad.append(above)
    return good | good.map(np.float64), st.one_of(*bad)


def choices(allowed):
    good = st.sampled_from(allowed)
    bad = st.one_of(NOT_A_STRING, st.text().filter(lambda s: s not in allowed),
                    st.sampled_from(allowed).map(str.upper).filter(lambda s: s not in allowed),
                    st.sampled_from(allowed).map(lambda s: s + " "), st.sampled_from(allowed).map(lambda s: [s]))
    return good | good.map(np.str_), bad


def booleans():
    return st.booleans(), st.one_of(st.sampled_from(["no", "yes", "False", "True", ""]), st.integers(0, 1),
                                    st.none(), st.floats(), st.text(max_size=4))


def optional(spec):
    good, bad = spec
    return good | st.none(), bad.filter(lambda v: v is not None)


def pair_of(spec):
    good, bad = spec
    return (st.tuples(good, good) | st.lists(good, min_size=2, max_size=2),
            st.one_of(NOT_A_STRING, st.text(min_size=2, max_size=2), st.lists(good, max_size=1),
                      st.lists(good, min_size=3, max_size=4), st.tuples(good, bad), st.tuples(bad, good)))


def optimizer_by_kind():
    """{parameter kind: optimiser}, not empty; an optimiser other than the default 'adam' somewhere
    (a mapping that changes nothing is refused); 'muon' for the hidden kind only."""
    kinds, names = ["hidden", "embedding", "vector", "readout"], ["adam", "adamw", "sgd", "radam", "adam-atan2", "muon"]
    good = st.dictionaries(st.sampled_from(kinds), st.sampled_from(names), min_size=1).filter(
        lambda d: set(d.values()) != {"adam"} and all(v != "muon" or k == "hidden" for k, v in d.items()))
    bad = st.one_of(NOT_A_STRING.filter(lambda v: v is not None), st.just({}), st.text(max_size=4),
                    st.dictionaries(st.text(max_size=6).filter(lambda k: k not in kinds), st.sampled_from(names),
                                    min_size=1),
                    st.dictionaries(st.sampled_from(kinds), st.text(max_size=6).filter(lambda v: v not in names),
                                    min_size=1),
                    st.dictionaries(st.sampled_from(kinds), st.integers(), min_size=1),
                    st.just({"hidden": "adam"}),  # the default optimizer already: no effect
                    st.sampled_from(kinds[1:]).map(lambda k: {"hidden": "muon", k: "muon"}))  # Muon: hidden only
    return good, bad


DEVICE_BAD = st.one_of(
    st.sampled_from(["gpu", "tpu", "meta", "xpu", "", "cuda:abc", "cuda:-1", " cpu", "CPU", "cuda:0:1", "cuda:01"]),
    st.integers(128, 10**6).map(lambda i: f"cuda:{i}"),  # torch.device keeps 8 bits of the index: cuda:130 is cuda:-126
    st.text(max_size=8).filter(lambda s: not re.fullmatch(r"(cpu|cuda|mps)(:[0-9]+)?", s)),
    st.just(torch.device("meta")), st.integers(0, 3), st.booleans(), st.floats(), st.lists(st.just("cpu"), max_size=2),
)
DEVICE_GOOD = (st.from_regex(r"(cpu|cuda|mps)(:(0|[1-9][0-9]?|1[01][0-9]|12[0-7]))?", fullmatch=True)
               | st.sampled_from(["cpu", "cuda", "cuda:1", "mps"]).map(torch.device))
PATH_GOOD = st.text(min_size=1, max_size=20)
PATH_BAD = st.one_of(st.just(""), st.integers(), st.booleans(), st.floats(), st.binary(min_size=1, max_size=4),
                     st.lists(PATH_GOOD, max_size=2), st.builds(object))

PLACEMENTS = ["post", "pre", "admin", "rezero", "deepnorm", "none", "peri-ln", "output-norm", "sub-ln"]
# the placement an initialiser is defined for (others work with any placement)
INIT_PLACEMENT = {"xavier": "post", "lipschitz": "pre", "t-fixup": "none", "admin": "admin",
                  "admin-profiling-free": "admin", "deepnorm": "deepnorm", "rezero": "rezero", "subln": "sub-ln"}

# field -> (good values, bad values)
MODEL_SPEC = {
    "src_vocab": integers(1),
    "tgt_vocab": integers(1),
    "d_model": (st.integers(1, 2**20).map(lambda k: 4 * k), integers(1)[1]),  # divisible by the 4 default heads
    "n_heads": (st.sampled_from([1, 2, 4, 8, 16, 32, 64]), integers(1)[1]),  # divides the default d_model=64
    "d_ffn": integers(1),
    "n_enc": integers(0),
    "n_dec": integers(0),
    "placement": choices(PLACEMENTS),
    "enc_placement": optional(choices(PLACEMENTS)),
    "dec_placement": optional(choices(PLACEMENTS)),
    "init": choices(list(INIT_PLACEMENT)),
    "norm": choices(["layernorm", "rmsnorm", "dyt"]),
    "norm_eps": numbers(0, low_open=True),
    "activation": choices(["relu", "gelu"]),
    "attn_dropout": numbers(0, 1, high_open=True),
    "act_dropout": numbers(0, 1, high_open=True),
    "dropout": numbers(0, 1, high_open=True),
    "embed_scale": booleans(),
    "tie_embeddings": booleans(),
    "positions": choices(["sinusoidal", "learned"]),
    "max_len": integers(1),
    "admin_profiling": choices(["train", "eval"]),
    "dyt_alpha": numbers(0, low_open=True),
    "ln_scaling": booleans(),
    "depth_mup": booleans(),
    "qk_norm": booleans(),
    "attn_softcap": optional(numbers(0, low_open=True)),
    "logit_softcap": optional(numbers(0, low_open=True)),
    "parameterization": choices(["standard", "mup"]),
    "base_width": optional((st.integers(1, 2**20).map(lambda k: 4 * k), integers(1)[1])),  # ÷ the 4 heads
}
TRAIN_SPEC = {
    "steps": integers(1),
    "batch_size": integers(1),
    "lr": numbers(0, low_open=True),
    "optimizer": choices(["adam", "adamw", "sgd", "radam", "adam-atan2"]),  # "muon" alone is refused (hidden only)
    "betas": pair_of(numbers(0, 1, high_open=True)),
    "eps": numbers(0, low_open=True),
    "momentum": numbers(0, 1, high_open=True),
    "weight_decay": numbers(0),
    "schedule": choices(["constant", "inverse-sqrt", "linear-decay", "cosine", "wsd-linear", "wsd-sqrt"]),
    "warmup": integers(0),
    "clip": optional(numbers(0, low_open=True)),
    "label_smoothing": numbers(0, 1, high_open=True),
    "seed": integers(0, 2**64),
    "data_seed": optional(integers(0, 2**64)),
    "device": (DEVICE_GOOD | st.none(), DEVICE_BAD),
    "amp": optional(booleans()),
    "eval_every": integers(0),
    "eval_batches": integers(1),
    "log_every": integers(1),
    "checkpoint_every": integers(0),
    "checkpoint_path": (PATH_GOOD | PATH_GOOD.map(pathlib.Path) | st.none(), PATH_BAD),
    "diverge_loss": optional(numbers(0, low_open=True)),
    "progress": booleans(),
    "record_updates": booleans(),
    "compile": booleans(),
    "amp_dtype": optional(choices(["bf16", "fp16", "fp32"])),
    "max_tokens": optional(integers(1)),
    "bleu_sentences": integers(0),
    "diagnose": booleans(),
    "watch_every": integers(0),
    "z_loss": numbers(0),
    "weight_decay_mode": choices(["coupled", "independent"]),
    "probes": booleans(),
    "optimizer_by_kind": optional(optimizer_by_kind()),
    "final_lr_fraction": numbers(0, 1, high_open=True),
    "cooldown_fraction": numbers(0, 1, low_open=True),
    "spike_guard": choices(["none", "clip-percentile", "clip-zscore", "skip-zscore", "rollback"]),
    "guard_window": integers(2),
    "guard_percentile": numbers(0, 100, low_open=True, high_open=True),
    "guard_z": numbers(0, low_open=True),
    "inject": choices(["none", "repeated-ngram", "lr-bump", "fresh-moments", "data-reset"]),
    "inject_step": integers(0),
    "inject_lr_factor": numbers(0, low_open=True),
    "inject_length": integers(1),
    "qk_clip": optional(numbers(0, low_open=True)),
    "record_qk_logits": booleans(),
}
# other fields a good value needs (the cross-field rules); default: none
COMPANIONS = {
    "init": lambda v: {"placement": INIT_PLACEMENT[str(v)]},
    "checkpoint_every": lambda v: {"checkpoint_path": "run.pt"},
    "dyt_alpha": lambda v: {"norm": "dyt"},  # the initial α of DyT: rejected with another norm
    "ln_scaling": lambda v: {"placement": "pre"},  # scales a norm on the branch's input
    "depth_mup": lambda v: {"placement": "pre"},  # scales a branch added to the stream
    "weight_decay_mode": lambda v: {"optimizer": "adamw"},  # 'independent' rescales AdamW's decay
    "parameterization": lambda v: {"base_width": 64} if v == "mup" else {},  # μP needs its base width
    "base_width": lambda v: {} if v is None else {"parameterization": "mup"},
    # settings read under one choice of another field (config._READ_ONLY_BY), and an injection's step
    "final_lr_fraction": lambda v: {"schedule": "cosine"},
    "cooldown_fraction": lambda v: {"schedule": "wsd-sqrt"},
    "guard_window": lambda v: {"spike_guard": "skip-zscore"},
    "guard_percentile": lambda v: {"spike_guard": "clip-percentile"},
    "guard_z": lambda v: {"spike_guard": "clip-zscore"},
    "inject": lambda v: {} if v == "none" else {"inject_step": 1},
    "inject_step": lambda v: {} if v == 0 else {"inject": "fresh-moments", "steps": max(200, v)},
    "inject_lr_factor": lambda v: {"inject": "lr-bump", "inject_step": 1},
    "inject_length": lambda v: {"inject": "lr-bump", "inject_step": 1},
}
# how an accepted value is stored; default: equal to the value given
STORED = {
    "betas": tuple,
    "device": lambda v: None if v is None else str(torch.device(v)),
    "checkpoint_path": lambda v: None if v is None else os.fspath(v),
    "enc_placement": lambda v: "post" if v is None else v,  # None: the default placement
    "dec_placement": lambda v: "post" if v is None else v,
}
SPECS = {ModelConfig: MODEL_SPEC, TrainConfig: TRAIN_SPEC}
CASES = [(cls, field) for cls, spec in SPECS.items() for field in spec]
IDS = [f"{cls.__name__}.{field}" for cls, field in CASES]


@pytest.mark.parametrize("cls", SPECS, ids=lambda c: c.__name__)
def test_every_field_has_a_spec(cls):
    spec = SPECS[cls]
    fields = [f.name for f in dataclasses.fields(cls)]
    missing = [f for f in fields if f not in spec]
    assert not missing, f"{cls.__name__} fields with no property test: {missing} (add them to this file's specs)"
    assert set(spec) <= set(fields)


@pytest.mark.parametrize("cls, field", CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_bad_values_raise_value_error_naming_the_field(cls, field, data):
    value = data.draw(SPECS[cls][field][1], label=field)
    with pytest.raises(ValueError) as e:
        cls(**{field: value})
    assert f"{field}=" in str(e.value), str(e.value)


@pytest.mark.parametrize("cls, field", CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_good_values_are_accepted_as_plain_values(cls, field, data):
    value = data.draw(SPECS[cls][field][0], label=field)
    kw = {field: value, **COMPANIONS.get(field, lambda v: {})(value)}
    cfg = cls(**kw)
    assert getattr(cfg, field) == STORED.get(field, lambda v: v)(value)
    json.dumps(cfg.to_dict(), allow_nan=False)  # plain Python values only (no NumPy scalars, paths, devices)
    assert cfg.replace() == cfg
