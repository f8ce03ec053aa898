"""tfx.nn.hooks: hooks are attached for a block and always detached, the model's mode is
restored, and record_branches sees x_{i-1} and f_i of every residual sub-layer."""
import pytest
import torch

import tfx
from tfx.nn import hooks

TASK = tfx.synthetic("reverse", length=6)
BATCH = TASK.batch(0, 4)


def _model(**kw):
    return tfx.build_model(n_enc=2, n_dec=1, d_model=16, n_heads=2, d_ffn=32,
                           src_vocab=TASK.src_vocab, tgt_vocab=TASK.tgt_vocab, **kw)


def _has_torch_hooks(module):
    return bool(module._forward_hooks or module._forward_pre_hooks)


@pytest.mark.parametrize("kind", hooks.HOOK_KINDS)
def test_attached_calls_every_hook_once_per_pass_and_detaches_even_on_error(kind):
    m = _model()
    res = [r for _, r in m.residuals()]
    calls = []
    fns = {"branch": lambda r, x, fx: calls.append(r),
           "forward": lambda mod, args, kwargs, out: calls.append(mod),
           "forward_pre": lambda mod, args, kwargs: calls.append(mod)}
    with pytest.raises(RuntimeError, match="inside"):
        with hooks.attached([(r, fns[kind]) for r in res], kind):
            hooks.loss_on(m, BATCH)
            assert calls == res  # forward order, one call each
            raise RuntimeError("inside the block")
    assert all(r.hook is None and not _has_torch_hooks(r) for r in res)
    hooks.loss_on(m, BATCH)
    assert len(calls) == len(res)  # nothing fires after the block
    with pytest.raises(ValueError, match="kind='backward'"):
        with hooks.attached([], "backward"):
            pass


def test_mode_sets_and_restores_training():
    m = _model()
    m.train()
    with hooks.mode(m):
        assert not m.training and not m.encoder.layers[0].ffn.training
    assert m.training
    m.eval()
    with pytest.raises(KeyError):
        with hooks.mode(m, training=True):
            assert m.training
            raise KeyError("x")
    assert not m.training


@torch.no_grad()
def test_record_branches_recombines_to_the_next_input():
    m = _model(placement="pre")
    with hooks.mode(m), hooks.record_branches(m) as rec:
        hooks.loss_on(m, BATCH)
    assert [r["name"] for r in rec["encoder"]] == ["layers.0.self_attn", "layers.0.ffn",
                                                   "layers.1.self_attn", "layers.1.ffn"]
    assert [r["name"] for r in rec["decoder"]] == ["layers.0.self_attn", "layers.0.cross_attn", "layers.0.ffn"]
    enc = rec["encoder"]
    for a, b in zip(enc, enc[1:]):  # Pre-LN: x_i = x_{i-1} + f_i is the next sub-layer's input
        torch.testing.assert_close(a["x"] + a["f"], b["x"])
    assert all(r.hook is None for _, r in m.residuals())


def test_stack_name_and_sublayer_labels():
    m = _model()
    assert hooks.stack_name(m, None) == "decoder" and hooks.stack_name(m, "encoder") == "encoder"
    with pytest.raises(ValueError, match="stack='middle'"):
        hooks.stack_name(m, "middle")
    d = hooks.sublayer_labels(["layers.0.self_attn", "layers.2.cross_attn", "layers.2.ffn"])
    assert d["kinds"] == ["self-attn", "cross-attn", "ffn"] and list(d["layer"]) == [1, 3, 3]
