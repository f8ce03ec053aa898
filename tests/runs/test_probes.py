"""Probes recorded during training (TrainConfig.probes, tfx.runs.probes): each one against a
direct computation, nothing recorded or built when off, and recording changes no number."""
import math

import pytest
import torch
from torch import nn

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.nn.batch import BOS, EOS, PAD, Batch
from tfx.nn.hooks import record_branches
from tfx.runs import probes as probes_module
from tfx.runs.probes import Probes

TASK = tfx.synthetic("reverse", vocab=8, length=6)


def _lm(**kw):
    base = dict(src_vocab=12, tgt_vocab=12, d_model=16, n_heads=2, d_ffn=32, n_enc=0, n_dec=2, placement="pre",
                max_len=16)
    base.update(kw)
    return build_model(ModelConfig(**base))


def _padded_batch():
    g = torch.Generator().manual_seed(0)
    tgt = torch.randint(4, 12, (3, 7), generator=g)
    tgt[:, 0] = BOS
    tgt[0, 4], tgt[0, 5:] = EOS, PAD  # row 0: 3 tokens then EOS, then padding
    tgt[1, 6] = EOS
    tgt[2, 2], tgt[2, 3:] = EOS, PAD
    return Batch(None, tgt)


def _direct(model, batch):
    """Every probe from the recorded residual streams, by hand: scores from the weights,
    masks built here (causal ∧ real key), entropy with torch.special.entr, variances over real tokens."""
    tgt_in = batch.tgt[:, :-1]
    real = tgt_in != PAD
    T, h = tgt_in.shape[1], model.cfg.n_heads
    allowed = torch.ones(T, T, dtype=torch.bool).tril() & real[:, None, None, :]
    with torch.no_grad(), record_branches(model) as rec:
        model.loss(batch)
    out = {"attn_logit_max": [], "attn_entropy": [], "stream_var": []}
    torch.set_grad_enabled(False)
    for r, (name, res) in zip(rec["decoder"], model.decoder.residuals()):
        x = r["x"]
        out["stream_var"].append(float(x[real].var(unbiased=False)))
        if name.endswith("self_attn"):
            a, y = res.f, res.norm(x)
            split = lambda t: t.view(*t.shape[:2], h, -1).transpose(1, 2)  # noqa: E731
            s = split(a.q_proj(y)) @ split(a.k_proj(y)).transpose(-1, -2) / math.sqrt(y.shape[-1] // h)
            out["attn_logit_max"].append(float(s.abs()[allowed.expand_as(s)].max()))
            p = torch.softmax(s.masked_fill(~allowed, float("-inf")), -1)
            ent = torch.special.entr(p).sum(-1)  # (B, h, T)
            out["attn_entropy"].append([float(ent[:, k][real].mean()) for k in range(h)])
    last = rec["decoder"][-1]
    final = model.decoder.final_norm(last["x"] + last["f"])
    out["stream_var"].append(float(final[real].var(unbiased=False)))
    torch.set_grad_enabled(True)
    return out


def test_each_probe_is_the_direct_computation():
    model, batch = _lm().eval(), _padded_batch()
    probes = Probes(model)
    with torch.no_grad(), probes:
        model.loss(batch)
    got = probes.unpack(probes.row().tolist())
    want = _direct(model, batch)
    assert probes.stream_names[-1] == "decoder.output" and len(got["stream_var"]) == 5
    assert [n for n, *_ in probes.attention] == ["decoder.layers.0.self_attn", "decoder.layers.1.self_attn"]
    for key in want:
        torch.testing.assert_close(torch.tensor(got[key]), torch.tensor(want[key]), rtol=1e-5, atol=1e-6, msg=key)
    assert got["dyt_saturated"] == []
    assert 0 < min(min(e) for e in got["attn_entropy"]) and max(max(e) for e in got["attn_entropy"]) < math.log(6)


class DyT(nn.Module):
    """A stand-in for the DyT norm being added to tfx.nn.blocks: γ ⊙ tanh(αx) + β."""

    def __init__(self, d, alpha):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(float(alpha)))
        self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return self.weight * torch.tanh(self.alpha * x) + self.bias


def test_dyt_saturation_is_the_share_of_real_inputs_beyond_the_knee():
    model, batch = _lm().eval(), _padded_batch()
    res = model.decoder.layers[1].ffn
    res.norm = DyT(16, alpha=2.0)
    with torch.no_grad(), record_branches(model) as rec:
        model.loss(batch)
    x = rec["decoder"][3]["x"]
    real = batch.tgt[:, :-1] != PAD
    want = float((torch.tanh(2.0 * x[real]).abs() > 0.99).float().mean())
    probes = Probes(model)
    with torch.no_grad(), probes:
        model.loss(batch)
    got = probes.unpack(probes.row().tolist())
    assert probes.dyt_names == ["decoder.layers.1.ffn.norm"] and 0 < want < 1
    assert got["dyt_saturated"] == pytest.approx([want])
    assert not probes_module.is_dyt(model.decoder.layers[0].ffn)  # a Residual's alpha is not a DyT


def test_probes_on_an_encoder_decoder_see_cross_attention_and_both_stacks():
    model = build_model(ModelConfig.for_task(TASK, d_model=16, n_heads=2, d_ffn=32), batch=TASK.batch(0, 4))
    probes = Probes(model)
    with torch.no_grad(), probes:
        model.loss(TASK.batch(0, 4))
    got = probes.unpack(probes.row().tolist())
    assert len(probes.attention) == 2 + 4 and probes.stream_names[-2:] == ["encoder.output", "decoder.output"]
    assert all(math.isfinite(v) for v in got["attn_logit_max"] + got["stream_var"])
    assert all(0 < e < math.log(7) + 1e-6 for row in got["attn_entropy"] for e in row)


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, dropout=0.1, placement="pre")
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), batch=TASK.batch(0, 8))


def test_probes_record_on_logged_steps_and_change_nothing():
    cfg = TrainConfig(steps=12, lr=3e-3, log_every=4, seed=3)
    off = train(_model(), TASK, cfg)
    on = train(_model(), TASK, cfg.replace(probes=True))
    assert on.loss == off.loss and on.grad_norm == off.grad_norm and on.eval_loss == off.eval_loss  # bit-identical
    assert on.log_z == off.log_z and len(on.log_z) == len(on.step) == 3
    assert on.probe_step == [4, 8, 12]
    assert len(on.attn_logit_max) == 3 and len(on.attn_logit_max[0]) == len(on.attn_names) == 6
    assert len(on.attn_entropy[0]) == 6 and len(on.attn_entropy[0][0]) == 4
    assert len(on.stream_var[0]) == len(on.stream_names) == 10 + 2 and on.dyt_saturated == [[]] * 3
    assert on.sublayers == on.stream_names[:10]
    for name in ("probe_step", "attn_logit_max", "attn_entropy", "stream_var", "dyt_saturated", "attn_names"):
        assert getattr(off, name) == [], name


def test_probes_off_builds_no_probes(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("Probes built with probes=False")

    monkeypatch.setattr(tfx.runs.train, "Probes", refuse)
    train(_model(), TASK, steps=3)
    with pytest.raises(AssertionError, match="probes=False"):
        train(_model(), TASK, steps=3, probes=True)


def test_probe_hooks_never_read_the_device(monkeypatch):
    """Nothing in the hooks turns a tensor into a Python number: every read is the trainer's,
    one per read-back. Counted by patching the ways a tensor reaches the host."""
    reads = []
    for method in ("item", "tolist", "__float__", "__int__", "__bool__", "numpy", "cpu"):
        orig = getattr(torch.Tensor, method)

        def counted(self, *a, _orig=orig, _m=method, **k):
            reads.append(_m)
            return _orig(self, *a, **k)
        monkeypatch.setattr(torch.Tensor, method, counted)
    model, batch = _lm().eval(), _padded_batch()
    model.loss(batch)  # the masks are found on the host when the batch is made
    probes = Probes(model)
    reads.clear()
    with torch.no_grad(), probes:
        model.loss(batch)
    probes.row()
    assert reads == []
    # in the trainer: the same reads with and without probes, but one per read-back
    counts = {}
    for on in (False, True):
        reads.clear()
        train(_model(), TASK, steps=8, log_every=4, probes=on, eval_batches=1, record_updates=False)
        counts[on] = reads.count("tolist")
    assert counts[True] == counts[False] + 2  # two read-backs (steps 4 and 8), one probe row stack each


def test_resume_with_probes_is_exact(tmp_path):
    path = str(tmp_path / "ck.pt")
    cfg = TrainConfig(steps=12, lr=1e-3, seed=2, log_every=3, eval_batches=1, probes=True)
    straight = train(_model(), TASK, cfg)
    first = train(_model(), TASK, cfg.replace(steps=6, checkpoint_every=6, checkpoint_path=path))
    assert first.steps_done == 6
    resumed = train(_model(), TASK, cfg.replace(checkpoint_every=6, checkpoint_path=path), resume=True)
    assert resumed.loss == straight.loss and resumed.probe_step == straight.probe_step == [3, 6, 9, 12]
    for name in ("attn_logit_max", "attn_entropy", "stream_var", "log_z"):
        assert getattr(resumed, name) == getattr(straight, name), name


def test_a_recorded_run_keeps_its_probes(tmp_path):
    from tfx.runs import results

    cfg = TrainConfig(steps=4, lr=1e-3, log_every=2, eval_batches=1, probes=True)
    model = _model()
    hist = train(model, TASK, cfg)
    rec = results.Record(label="p", config=model.cfg, train_config=cfg, seed=0, code_version="x", device="cpu",
                         wall_time=hist.wall_time, status=hist.status, history=hist)
    results.append(tmp_path / "r.jsonl", rec)
    back = results.read(tmp_path / "r.jsonl")[0]
    for name in ("probe_step", "attn_names", "stream_names", "attn_logit_max", "attn_entropy", "stream_var",
                 "log_z", "log_z_absmax"):
        assert getattr(back.history, name) == getattr(hist, name), name
    assert back.train_config.probes is True

