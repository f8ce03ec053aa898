"""tfx.book.toy: the chapter-1 demonstrations behave as the text says."""
import pytest
import torch

import tfx
from tfx.book import toy


def _profile(kind, depth=24):
    return toy.signal_profile(toy.ffn_stack(depth, 32, kind), torch.randn(64, 32, generator=torch.Generator().manual_seed(1)))


def test_plain_stack_vanishes_residual_explodes_post_ln_is_flat():
    plain, res, post = _profile("plain"), _profile("residual"), _profile("post")
    assert plain["act_rms"][-1] < 1e-6 * plain["act_rms"][0]
    assert res["act_rms"][-1] > 10 * res["act_rms"][0]
    assert max(post["act_rms"][1:]) / min(post["act_rms"][1:]) < 1.01
    assert len(post["grad_rms"]) == 24 and len(post["act_rms"]) == 25


def test_stack_arguments():
    with pytest.raises(ValueError, match="kind"):
        toy.ffn_stack(2, 8, "sideways")
    with pytest.raises(ValueError, match="depth"):
        toy.ffn_stack(0, 8, "post")


def test_first_step_adam_evens_out_updates_and_leaves_model_alone():
    task = tfx.synthetic("reverse", vocab=8, length=4)
    model = tfx.build_model(tfx.ModelConfig.for_task(task, d_model=16, n_heads=2, d_ffn=32, n_enc=2, n_dec=2))
    w0 = model.out_proj.weight.detach().clone()
    b = task.batch(0, 8)
    adam, sgd = toy.first_step(model, b, 1e-3), toy.first_step(model, b, 1e-3, optimizer="sgd")
    assert torch.equal(model.out_proj.weight, w0)
    spread = lambda d: max(d.values()) / min(d.values())  # noqa: E731
    assert spread(adam["update_rms"]) < 2 < spread(adam["grad_rms"])
    assert spread(sgd["update_rms"]) == pytest.approx(spread(sgd["grad_rms"]), rel=1e-3)
    small = toy.first_step(model, b, 1e-5)
    assert 0 < small["output_change"] < adam["output_change"]
    with pytest.raises(ValueError, match="optimizer"):
        toy.first_step(model, b, 1e-3, optimizer="lion")
