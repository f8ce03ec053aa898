"""Checkpoints: exact resume, loaded with torch.load(weights_only=True); every bad file is one
clear error naming the file and the problem, and the run never silently starts over."""
import os

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.runs.train import CheckpointError

TASK = tfx.synthetic("reverse", vocab=8, length=6)


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2)
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base))


@pytest.fixture
def checkpoint(tmp_path):
    path = str(tmp_path / "run.pt")
    train(_model(), TASK, steps=4, lr=1e-3, checkpoint_every=4, checkpoint_path=path)
    return path


def _resume(path, model=None):
    cfg = TrainConfig(steps=8, lr=1e-3, checkpoint_every=4, checkpoint_path=path)
    return train(model or _model(), TASK, cfg, resume=True)


def test_a_checkpoint_holds_only_tensors_and_plain_values(checkpoint):
    ck = torch.load(checkpoint, weights_only=True)  # raises if anything else is inside
    assert ck["step"] == 4 and ck["history"]["steps_done"] == 4
    assert not os.path.exists(checkpoint + ".tmp")  # written to a temporary file, then renamed
    h = _resume(checkpoint)
    assert h.steps_done == 8 and h.step[:4] == [1, 2, 3, 4]


def test_truncated_checkpoint(checkpoint):
    data = open(checkpoint, "rb").read()
    with open(checkpoint, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupt") as e:
        _resume(checkpoint)
    assert checkpoint in str(e.value) and "nothing was resumed" in str(e.value)


@pytest.mark.parametrize("cut", [0, 1, 100])
def test_empty_or_cut_short_checkpoint_names_the_file(checkpoint, cut):
    """An empty file (a write that never finished) and a few leftover bytes raise the one
    CheckpointError naming the file, never an IndexError from deep inside torch.load."""
    data = open(checkpoint, "rb").read()
    with open(checkpoint, "wb") as f:
        f.write(data[:cut])
    with pytest.raises(CheckpointError, match="empty" if cut == 0 else "truncated or corrupt") as e:
        _resume(checkpoint)
    assert checkpoint in str(e.value) and "nothing was resumed" in str(e.value)


def test_corrupt_checkpoint(checkpoint):
    with open(checkpoint, "wb") as f:
        f.write(b"this is not a checkpoint at all" * 10)
    with pytest.raises(CheckpointError, match="truncated or corrupt") as e:
        _resume(checkpoint)
    assert checkpoint in str(e.value)


class _Payload:
    """An object whose unpickling runs code: what a malicious checkpoint would contain."""

    def __reduce__(self):
        return (os.system, ("touch " + _Payload.marker,))


def test_a_checkpoint_that_would_run_code_is_refused(checkpoint, tmp_path):
    _Payload.marker = str(tmp_path / "pwned")
    ck = torch.load(checkpoint, weights_only=True)
    ck["history"]["task"] = _Payload()
    torch.save(ck, checkpoint)
    with pytest.raises(CheckpointError, match="could run code") as e:
        _resume(checkpoint)
    assert checkpoint in str(e.value)
    assert not os.path.exists(_Payload.marker)


def test_another_models_checkpoint(checkpoint):
    with pytest.raises(CheckpointError, match="another model") as e:
        _resume(checkpoint, _model(n_enc=3))
    assert "n_enc=2 there, 3 here" in str(e.value) and checkpoint in str(e.value)


def test_not_a_training_checkpoint(checkpoint):
    torch.save({"model": _model().state_dict()}, checkpoint)  # weights alone
    with pytest.raises(CheckpointError, match="not a tfx training checkpoint.*optimizer"):
        _resume(checkpoint)


def test_no_checkpoint_yet_starts_from_step_one(tmp_path):
    h = _resume(str(tmp_path / "absent.pt"))
    assert h.step[0] == 1 and h.steps_done == 8
