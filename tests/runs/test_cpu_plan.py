"""The CPU half's plan (tfx.runs.cost.cpu_*): seconds a step read off recorded runs of the same
size, or scaled from the nearest recorded size of the same task and batch."""
from types import SimpleNamespace

import pytest

from tfx.nn.config import ModelConfig, TrainConfig
from tfx.runs import cost


def _rec(task, n_enc, n_dec, d, wall, done, batch=32):
    config = ModelConfig(d_model=d, n_heads=4, d_ffn=4 * d, n_enc=n_enc, n_dec=n_dec)
    return SimpleNamespace(task=task, config=config, train_config=TrainConfig(batch_size=batch), wall_time=wall,
                           history=SimpleNamespace(steps_done=done))


def _size(task, n_enc, n_dec, d, batch=32):
    return cost.cpu_size(task, {"d_model": d, "n_heads": 4, "d_ffn": 4 * d, "n_enc": n_enc, "n_dec": n_dec}, batch)


def test_seconds_a_step_are_the_median_over_steps_done_and_a_noisy_task_is_its_clean_one():
    recs = [_rec("reverse-noisy", 6, 6, 64, w, 1000) for w in (40.0, 50.0, 90.0)]
    recs.append(_rec("reverse", 6, 6, 64, 5.0, 100))  # diverged at step 100: its own steps count
    recs.append(_rec("reverse", 6, 6, 64, 3.0, 0))  # never stepped: left out
    got = cost.cpu_step_seconds(recs)
    assert got == {_size("reverse", 6, 6, 64): pytest.approx(0.05)}


def test_an_unrecorded_size_is_scaled_from_the_nearest_of_the_same_width_by_sublayers_and_width_squared():
    table = {_size("reverse", 6, 6, 64): 0.05, _size("reverse", 12, 12, 64): 0.09,
             _size("reverse", 6, 6, 128): 0.11, _size("libreoffice-en", 0, 8, 64): 0.14}
    assert cost.cpu_seconds_a_step(_size("reverse-noisy", 6, 6, 64), table) == (0.05, _size("reverse", 6, 6, 64))
    s, src = cost.cpu_seconds_a_step(_size("reverse", 18, 18, 64), table)
    assert src == _size("reverse", 12, 12, 64) and s == pytest.approx(0.09 * 90 / 60)
    s, src = cost.cpu_seconds_a_step(_size("reverse", 12, 12, 128), table)  # same width first
    assert src == _size("reverse", 6, 6, 128) and s == pytest.approx(0.11 * 2)
    assert cost.cpu_seconds_a_step(_size("reverse", 6, 6, 64, batch=8), table) is None  # no such batch
    assert cost.cpu_seconds_a_step(_size("copy", 6, 6, 64), table) is None  # no such task
    assert cost.size_text(_size("reverse", 18, 18, 64)) == "18+18, d 64"
    assert cost.size_text(_size("libreoffice-en", 0, 8, 64)) == "8-layer LM, d 64"
