"""tfx.theory.adam: RAdam's closed forms against sympy and against torch.optim.RAdam; Adam's first step."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfx
from tfx.theory import adam


def test_derivation_checks():
    d = adam.derive_radam()
    assert d.rho_t_matches and d.var_matches


def test_rho_limits_and_first_steps():
    assert adam.radam_rho_inf(0.98) == pytest.approx(99.0)
    assert adam.radam_rho(1, 0.98) == pytest.approx(1.0)  # one gradient is worth one gradient
    assert adam.radam_rho(10**5, 0.98) == pytest.approx(99.0)
    r = adam.radam_rectification(np.arange(1, 10**4), 0.98)
    assert np.all(r[:4] == 0) and np.all(np.diff(r[4:500]) > 0) and r[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("beta2", [0.95, 0.98, 0.999])
def test_rectification_is_torch_radam_over_adam(beta2):
    """With the same gradients, RAdam's step / Adam's step = r_t once ρ_t > 5 (PyTorch's threshold)."""
    g = torch.Generator().manual_seed(0)
    grads = torch.randn(60, 1, generator=g, dtype=torch.float64)
    steps = {}
    for name, cls in (("adam", torch.optim.Adam), ("radam", torch.optim.RAdam)):
        p = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        opt = cls([p], lr=1e-3, betas=(0.9, beta2), eps=0.0)
        out = []
        for gr in grads:
            before = p.detach().clone()
            p.grad = gr.clone()
            opt.step()
            out.append(float(p.detach() - before))
        steps[name] = np.array(out)
    t = np.arange(1, 61)
    live = adam.radam_rho(t, beta2) > 5
    np.testing.assert_allclose(steps["radam"][live] / steps["adam"][live],
                               adam.radam_rectification(t, beta2, threshold=5)[live], rtol=1e-6)


def test_first_adam_step_is_the_sign():
    g = torch.tensor([1e-1, -1e-4, 1e-6])
    assert torch.allclose(adam.first_adam_step(g, eps=0.0), torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64))


def test_variance_first_order_approaches_exact():
    rho = np.array([50.0, 500.0])
    exact, approx = adam.adaptive_lr_variance(rho, exact=True), adam.adaptive_lr_variance(rho)
    assert np.all(np.abs(approx / exact - 1) < [0.1, 0.01])
    assert np.isinf(adam.adaptive_lr_variance(4.0))


@pytest.mark.parametrize("bad", [0, 1, 1.5, "0.9", True])
def test_bad_beta2_names_the_field(bad):
    with pytest.raises(ValueError, match="beta2"):
        adam.radam_rho_inf(bad)


def test_first_steps_records_histograms():
    task = tfx.synthetic("reverse", length=8)
    model = tfx.build_model(tfx.ModelConfig.for_task(task, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1))
    fs = adam.first_steps(model, task, tfx.TrainConfig(lr=1e-3, batch_size=4), steps=6, every=3,
                          pooled=adam.embedding_and_matrices)
    assert fs.steps == [1, 3, 6] and fs.grad_hist.shape == (3, len(fs.bins) - 1) and len(fs.loss) == 6
    assert fs.update_hist.sum() > 0 and np.all(fs.update_median > 0)
    assert fs.pooled_update_hist.shape == fs.update_hist.shape
    # the pooled view holds every matrix besides the embedding: more coordinates
    assert fs.pooled_grad_hist.sum() > fs.grad_hist.sum()
    assert adam.first_steps(model, task, tfx.TrainConfig(batch_size=4), steps=1).pooled_grad_hist is None
    with pytest.raises(ValueError, match="steps"):
        adam.first_steps(model, task, tfx.TrainConfig(), steps=0)
    with pytest.raises(ValueError, match="select"):
        adam.first_steps(model, task, tfx.TrainConfig(), steps=1, select=lambda n, p: False)


def test_first_steps_divides_each_update_by_its_learning_rate():
    """Adam's step 1 is lr_1 · sign(g): per unit learning rate it is 1 for every coordinate that
    moved, with or without warmup, although a warmup of w steps makes the raw step w times smaller."""
    task = tfx.synthetic("reverse", length=8)
    model = tfx.build_model(tfx.ModelConfig.for_task(task, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1))
    for warmup in (0, 10):
        cfg = tfx.TrainConfig(lr=1e-3, batch_size=4, warmup=warmup, eps=1e-12)
        fs = adam.first_steps(model, task, cfg, steps=3, every=3)
        assert fs.lr[0] == pytest.approx(1e-3 / max(warmup, 1))
        assert fs.update_median[0] == pytest.approx(1.0, rel=1e-3)
        assert fs.update_median[1] < 1  # |m̂|/√v̂ < 1 once the gradients vary


def test_least_moved_names_the_matrix_whose_gradient_is_nearest_eps():
    step = {"update_rms": {"a.q_proj.weight": 4.2e-4, "a.fc1.weight": 1e-3},
            "grad_rms": {"a.q_proj.weight": 2e-8, "a.fc1.weight": 1e-2}}
    out = adam.least_moved(step, 1e-3)
    assert out["frac"] == pytest.approx(0.42) and out["name"] == "a.q_proj" and out["grad"] == 2e-8
