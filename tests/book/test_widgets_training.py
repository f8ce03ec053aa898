"""The training explorers: refused settings show the library's message, records are reused."""
import dataclasses

import pytest

import tfx
from tfx.book import widgets as w
from tfx.runs import sweep


@pytest.fixture
def P():
    return dataclasses.replace(tfx.get_profile("quick"), train_steps=10, batch_size=4, train_d_model=16, d_model=16,
                               n_heads=2, deep=1, seq_len=4)


def test_why_hard_refuses_pre_ln_with_admin_init(P):
    e = w.why_hard_explorer(P, tfx.synthetic("reverse", length=P.seq_len), depths=(1, 2))
    refused = e.panels(placement="pre", init="admin", depth=1)
    assert "init='admin' needs" in refused[0].note.replace("\n", " ") and not any(True for _ in refused[0].series())
    ok = e.panels(placement="post", init="admin", depth=2)  # Admin = Post-LN with Admin's ω
    assert [len(p.lines) for p in ok] == [4, 3, 2]  # 3 schemes + chance; 3 schemes; encoder, decoder
    assert ok[0].styles["admin (Post-LN + ω)"] == "bold"


def test_training_explorer_reuses_records(P, monkeypatch):
    task = tfx.synthetic("reverse", length=P.seq_len)
    cfg = tfx.ModelConfig.for_task(task, n_enc=1, n_dec=1, **P.model_kwargs(train=True))
    tc = tfx.TrainConfig(steps=P.train_steps, batch_size=P.batch_size, lr=P.train_lr, device=P.device,
                         record_updates=False)
    recs = sweep.run_grid({"post": cfg}, task, tc)
    calls = []
    real = sweep.run_one
    monkeypatch.setattr(sweep, "run_one", lambda *a, **k: calls.append(a) or real(*a, **k))
    e = w.training_explorer(P, task, depth=1, records=recs)
    e.panels(placement="post", warmup="10%")
    assert len(calls) == 1  # the run with warmup; the recorded one without is reused
    assert calls[0][3].warmup == round(0.1 * P.train_steps)
    before = len(calls)
    e.panels(placement="post", warmup="0%")
    assert len(calls) == before
