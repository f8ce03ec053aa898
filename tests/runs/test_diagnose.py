"""Where did a run blow up? The replay of a failing step names the first sub-layer out of range."""
import math

import pytest
import torch

import tfx
from tfx import ModelConfig, build_model
from tfx import train
from tfx.nn.batch import Batch
from tfx.runs.diagnose import Watch, first_offender

TASK = tfx.synthetic("reverse", vocab=8, length=6)
SPARE = TASK.src_vocab  # a source id the task never produces


class Poisoned:
    """``TASK``, except that from step ``at`` (1-based) every source starts with ``SPARE``."""

    def __init__(self, at):
        self.at = at

    def __getattr__(self, name):
        return getattr(TASK, name)

    def batch(self, step, batch_size=None, split="train", max_tokens=None):
        b = TASK.batch(step, batch_size, split, max_tokens)
        if split != "train" or step + 1 < self.at:
            return b
        src = b.src.clone()
        src[:, 0] = SPARE
        return Batch(src, b.tgt)


def _model(**kw):
    cfg = ModelConfig.for_task(TASK, d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2,
                               src_vocab=TASK.src_vocab + 1, **kw)
    return build_model(cfg)


def test_fp16_overflow_is_named_and_fp32_survives():
    """Like profiled Admin at 18+18 layers (NaN in bf16, trains in fp32), made small: from step 6
    one source token's embedding is 10⁵ · √d, beyond fp16's 65,504. The first sub-layer that
    sees it, the first encoder self-attention, produces non-finite attention logits in fp16;
    the same step replayed in fp32 is finite. Steps 1–5 come with their magnitudes."""
    model = _model()
    with torch.no_grad():
        model.src_embed.tok.weight[SPARE].fill_(1e5)
    h = train(model, Poisoned(6), steps=12, lr=1e-3, batch_size=8, amp_dtype="fp16")
    assert h.status == "diverged" and h.diverged_step == 6 and h.amp_dtype == "fp16"
    d = h.diagnosis
    assert d["dtype"] == "fp16" and d["step"] == 6
    assert d["first"]["sublayer"] == "encoder.layers.0.self_attn" and d["first"]["what"] == "attention logits"
    assert d["first"]["limit"] == 65504.0
    assert d["fp32"]["first"] is None and math.isfinite(d["fp32"]["loss"])
    assert "encoder.layers.0.self_attn" in d["summary"] and "fp32" in d["summary"]
    assert d["before"]["step"] == [1, 2, 3, 4, 5]
    names = d["sublayers"]
    assert names == [n for n, _ in model.residuals()] and len(names) == 2 * 2 + 2 * 3
    for row in d["before"]["act_max"]:  # finite and within fp16 before the poison arrives
        assert all(0 < v < 65504 for v in row)
    attn = [i for i, n in enumerate(names) if "attn" in n]
    assert all(0 < d["before"]["logit_max"][-1][i] < 65504 for i in attn)


def test_a_weight_scaled_to_blow_up_names_its_sub_layer():
    """The second decoder FFN's output weights × 10⁶: its output leaves fp16's range at step 1;
    every sub-layer before it in forward order stays finite."""
    model = _model()
    with torch.no_grad():
        model.decoder.layers[1].ffn.f.fc2.weight.mul_(1e6)
    h = train(model, TASK, steps=5, lr=1e-3, batch_size=8, amp_dtype="fp16")
    d = h.diagnosis
    assert h.status == "diverged" and d["step"] == 1 and d["before"]["step"] == []
    assert d["first"]["sublayer"] == "decoder.layers.1.ffn" and d["first"]["what"] == "output"
    i = d["sublayers"].index("decoder.layers.1.ffn")
    assert all(math.isfinite(v) and v < 65504 for v in d["act_max"][:i])
    assert d["act_max"][i] > 65504 or not math.isfinite(d["act_max"][i])


def test_gradients_are_checked_in_backward_order():
    table = {"attention": [True, False, False], "output": [1.0, 2.0, 3.0], "logit": [4.0, math.nan, math.nan],
             "grad": [math.inf, 1.0, math.nan]}
    first = first_offender(table, ["a", "b", "c"], limit=100.0)
    assert first == {"sublayer": "c", "what": "gradient", "value": first["value"], "limit": 100.0}
    table["logit"][0] = 1e3
    assert first_offender(table, ["a", "b", "c"], limit=100.0)["what"] == "attention logits"


def test_watch_matches_a_direct_computation():
    """The recomputed attention logits equal QKᵀ/√d_h from the layer's own projections."""
    model = _model().eval()
    batch = TASK.batch(0, 4)
    with Watch(model, grads=True) as w:
        model.loss(batch)["loss"].backward()
    table = w.table()
    attn = model.encoder.layers[0].self_attn.f
    x = model.src_embed(batch.src)
    q, k = attn._heads(attn.q_proj(x)), attn._heads(attn.k_proj(x))
    want = float((q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).abs().max().detach())
    assert table["logit"][0] == pytest.approx(want, rel=1e-5)
    assert table["output"][0] == pytest.approx(float(attn(x).abs().max().detach()), rel=1e-5)
    assert all(g > 0 for g in table["grad"])
    assert [math.isnan(v) for v in table["logit"]] == [not a for a in table["attention"]]


def test_watch_every_records_magnitudes_in_the_history():
    h = train(_model(), TASK, steps=6, lr=1e-3, batch_size=8, watch_every=3)
    assert h.watch_step == [3, 6] and len(h.sublayers) == 10
    assert all(len(r) == 10 and all(v > 0 for v in r) for r in h.act_max)
    assert len(h.logit_max) == 2 and h.logit_max[0][0] > 0
