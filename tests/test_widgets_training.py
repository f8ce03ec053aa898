"""tfx.widgets.training_explorer: trains on a press, shows refused settings' messages, reuses records."""
import dataclasses

import pytest

import tfx
import tfx.widgets as w
from tfx import sweep


@pytest.fixture
def P():
    return dataclasses.replace(tfx.get_profile("quick"), train_steps=3, batch_size=4, train_d_model=16,
                               n_heads=2, deep=1, seq_len=4)


def _controls(box):
    return {c.description_key: c for row in box.children[:-1] for c in row.children if hasattr(c, "description_key")}, \
        [c for row in box.children[:-1] for c in row.children if not hasattr(c, "description_key")][0]


def test_default_state_then_an_invalid_combination(P, capsys):
    box = w.training_explorer(P)
    ctrl, button = _controls(box)
    assert set(ctrl) == {"placement", "init", "depth", "lr", "warmup"}
    assert ctrl["lr"].value == pytest.approx(P.train_lr)
    ctrl["placement"].value, ctrl["init"].value = "pre", "admin"
    button.click()  # must not raise
    assert "init='admin' needs" in capsys.readouterr().out


def test_records_prefill_the_cache(P, monkeypatch):
    task = tfx.synthetic("reverse", length=P.seq_len)
    cfg = tfx.ModelConfig.for_task(task, n_enc=1, n_dec=1, **P.model_kwargs(train=True))
    tc = tfx.TrainConfig(steps=P.train_steps, batch_size=P.batch_size, lr=P.train_lr, device=P.device,
                         record_updates=False)
    recs = sweep.run_grid({"post": cfg}, task, tc)
    calls = []
    monkeypatch.setattr(sweep, "run_one", lambda *a, **k: calls.append(a))
    w.training_explorer(P, task, depth=1, records=recs)  # default state = the recorded run
    assert calls == []
