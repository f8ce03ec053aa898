"""tfx.theory.optimiser: the 1-D quadratic under GD and Adam (bai2025adamspikes), the
coordinate check (yang2022tp5) and the per-layer probes. Each test can fail."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

import tfx
from tfx.nn.config import TrainConfig
from tfx.nn.optim import make_optimizer, take_step
from tfx.theory import optimiser as O


def test_threshold_is_where_a_root_of_the_momentum_recursion_reaches_minus_one():
    """Derivation check: z² − (1 + β₁ − (1 − β₁) a h) z + β₁ has the root z = −1 exactly at
    a h = 2 (1 + β₁)/(1 − β₁)."""
    z, b1, ah = sp.symbols("z beta1 ah")
    poly = z**2 - (1 + b1 - (1 - b1) * ah) * z + b1
    root = sp.solve(poly.subs(z, -1), ah)[0]
    assert sp.simplify(root - 2 * (1 + b1) / (1 - b1)) == 0
    assert O.stability_threshold(0.9) == pytest.approx(38.0) and O.stability_threshold(0.0) == 2.0


@pytest.mark.parametrize("lr", [0.5, 1.5, 1.9])
def test_gd_below_two_over_h_converges_monotonically(lr):
    run = O.quadratic_run("gd", h=1.0, lr=lr, steps=60)
    assert np.all(np.diff(run.loss) <= 0) and run.loss[-1] < 1e-3 * run.loss[0]
    assert run.loss[0] < 0.5  # f(x₀) = ½: the first step lowered it too


def test_gd_above_two_over_h_diverges():
    run = O.quadratic_run("gd", h=1.0, lr=2.1, steps=60)
    assert run.loss[-1] > run.loss[0]


def test_adam_spikes_at_the_predicted_step():
    lr, betas = 0.01, (0.9, 0.95)
    run = O.quadratic_run("adam", lr=lr, steps=600, betas=betas)
    pred, t0 = O.predict_crossing(run, lr, betas=betas), O.decay_start(run)
    onset = O.spike_onset(run, after=t0)
    assert pred is not None and onset is not None
    assert abs(O.crossing(run, t0) - pred) <= 1  # the measured crossing: the prediction's own quantity
    assert abs(onset - pred) <= 0.03 * (pred - t0) + 1
    assert run.loss[onset:].max() > 1e6 * run.loss[onset - 1]  # a spike, not a wobble


def test_eps_above_the_threshold_scale_removes_the_spike():
    lr, betas, eps = 0.01, (0.9, 0.95), 1e-3  # η h/ε = 10 < 38
    run = O.quadratic_run("adam", lr=lr, steps=600, betas=betas, eps=eps)
    assert O.predict_crossing(run, lr, betas=betas, eps=eps) is None
    assert O.spike_onset(run, after=O.decay_start(run)) is None
    assert run.sharpness.max() <= lr / eps


def test_gradient_noise_caps_the_preconditioned_curvature():
    """OP-1's noise control: noise 0 is the noise-free run to the bit; noise changes the
    gradients (the option does something), the same seed repeats them, and noise at or above
    η h/threshold keeps a_t h below the threshold (no crossing) where the noise-free run crosses."""
    lr, betas = 0.01, (0.9, 0.95)
    quiet = O.quadratic_run("adam", lr=lr, steps=600, betas=betas)
    assert np.array_equal(O.quadratic_run("adam", lr=lr, steps=600, betas=betas, noise=0.0).x, quiet.x)
    assert O.crossing(quiet) is not None
    limit = lr / O.stability_threshold(betas[0])
    for seed in range(3):
        noisy = O.quadratic_run("adam", lr=lr, steps=600, betas=betas, noise=limit, seed=seed)
        assert not np.array_equal(noisy.grad, quiet.grad)
        assert O.crossing(noisy) is None and noisy.sharpness.max() < noisy.threshold
    again = O.quadratic_run("adam", lr=lr, steps=600, betas=betas, noise=limit, seed=2)
    assert np.array_equal(again.x, noisy.x)
    with pytest.raises(ValueError, match="noise="):
        O.quadratic_run("adam", noise=-1e-3)


def test_beta2_not_above_beta1_gives_no_prediction():
    run = O.quadratic_run("adam", lr=0.01, steps=300, betas=(0.9, 0.9))
    assert O.predict_crossing(run, 0.01, betas=(0.9, 0.9)) is None


def test_adam_atan2_runs_on_the_quadratic_without_eps():
    run = O.quadratic_run("adam-atan2", lr=0.01, steps=600, betas=(0.9, 0.95))
    assert np.isfinite(run.sharpness).all() and run.threshold == pytest.approx(38.0)
    with pytest.raises(ValueError, match="optimizer='lion'"):
        O.quadratic_run("lion")


# ------------------------------------------------------------------ coordinate check
TASK = tfx.synthetic("reverse", vocab=16, length=6)


def build(par):
    def b(d, seed):
        mup = {"parameterization": "mup", "base_width": 16} if par == "mup" else {}
        cfg = tfx.ModelConfig.for_task(TASK, n_enc=0, n_dec=1, placement="pre", d_model=d, n_heads=2,
                                       d_ffn=2 * d, **mup)
        return tfx.build_model(cfg, seed=seed)
    return b


def test_coordinate_check_is_flat_under_mup_and_grows_under_standard():
    std = O.coordinate_check(build("standard"), TASK, [16, 64, 128], steps=4, lr=2e-2, batch_size=8)
    mup = O.coordinate_check(build("mup"), TASK, [16, 64, 128], steps=4, lr=2e-2, batch_size=8)
    assert std.names == mup.names and std.names[-1] == "logits"
    assert std.slope.min() > 0.3
    assert np.abs(mup.slope).max() < 0.3


# ------------------------------------------------------------------ per-layer probes
def small_model():
    m = build("standard")(16, 0)
    return m, TASK.batch(0, 8)


def test_update_to_weight_and_gradient_rms():
    m, batch = small_model()
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    opt = make_optimizer(m, TrainConfig(lr=1e-2))
    take_step(opt, m.loss(batch)["loss"])
    ratios = O.update_to_weight(before, m)
    assert set(ratios) == set(before) and all(r >= 0 for r in ratios.values() if np.isfinite(r))
    assert max(ratios.values()) > 0
    rms = O.gradient_rms(m)
    flat = torch.cat([p.grad.flatten() for p in m.parameters() if p.grad is not None])
    assert rms["all"] == pytest.approx(float(flat.double().pow(2).mean().sqrt()))


def test_preconditioned_sharpness_matches_the_quadratic():
    """On f = h‖θ‖²/2 (H = h I) with v̂ the same everywhere, ηD⁻¹H = η h/(√v̂ + ε) I."""
    h, lr = 3.0, 0.1

    class Quad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.theta = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))

        def loss(self, batch):
            return {"loss": 0.5 * h * self.theta.pow(2).sum()}

    class B:
        def to(self, device):
            return self

    q = Quad()
    opt = make_optimizer([q.theta], TrainConfig(lr=lr, eps=1e-8))
    take_step(opt, q.loss(None)["loss"])
    out = O.preconditioned_sharpness(q, B(), opt, iters=5)
    s = opt.state[q.theta]
    expect = lr * h / (float((s["exp_avg_sq"][0] / (1 - 0.98)).sqrt()) + 1e-8)
    assert out["largest"] == pytest.approx(expect, rel=1e-6)
    assert out["update"] == pytest.approx(expect, rel=1e-6)


def test_preconditioned_sharpness_on_a_model():
    m, batch = small_model()
    opt = make_optimizer(m, TrainConfig(lr=1e-3))
    for _ in range(2):
        take_step(opt, m.loss(batch)["loss"])
    out = O.preconditioned_sharpness(m, batch, opt, iters=8)
    assert np.isfinite(out["largest"]) and out["largest"] > 0


def test_loss_spikes_are_onsets_above_the_running_median():
    """A spike is counted once, at its first step; noise below the 10 % rise is not a spike."""
    rng = np.random.default_rng(0)
    loss = 5 + 0.05 * rng.standard_normal(300)
    loss[100:104] = 6.0  # one spike, four steps long
    loss[200] = 5.4  # 8 % above: below the rise
    assert O.loss_spikes(loss) == [100]
    assert O.loss_spikes(loss, after=150) == []


def test_update_before_spikes_tells_a_led_spike_from_an_unannounced_one():
    """OP-1's language-model half reads whether the update norm rises in the steps before a
    loss spike: a spike led by three large updates gives a precursor far above the run's
    average; a spike with no change in the updates gives one at the average."""
    rng = np.random.default_rng(1)
    loss = 5 + 0.05 * rng.standard_normal(400)
    update = 1 + 0.05 * rng.standard_normal(400)
    for t in (150, 300):
        loss[t:t + 3] = 7.0
    led = update.copy()
    for t in (150, 300):
        led[t - 3:t] = 3.0
    before, overall, n = O.update_before_spikes(loss, led)
    assert n == 2 and before > 2 and 0.9 < overall < 1.2
    before, overall, n = O.update_before_spikes(loss, update)
    assert n == 2 and abs(before - overall) < 0.1
    assert np.isnan(O.update_before_spikes(np.full(400, 5.0), update)[0])  # no spike, no precursor


def test_onset_agreement_rule():
    assert O.onset_agrees(None, None, 100)
    assert not O.onset_agrees(500, None, 100) and not O.onset_agrees(None, 480, 100)
    assert O.onset_agrees(500, 488, 100)  # 12 ≤ 0.03·400 + 1 = 13
    assert not O.onset_agrees(500, 486, 100)


def test_grid_finds_a_spike_and_a_capped_run():
    rows = O.quadratic_grid([0.95], [1e-8, 1e-3], steps=600)
    assert [r["onset"] is not None for r in rows] == [True, False]
    assert all(r["agree"] for r in rows)
    s = O.grid_summary(rows)
    assert (s["runs"], s["spiked"], s["predicted"], s["agree"]) == (2, 1, 1, 2)


def test_noise_grid_counts_crossings_and_marks_the_noise_that_rules_them_out():
    rows = O.noise_grid([0.0, 1e-3], seeds=[0, 1], betas=(0.9, 0.95), steps=600)
    assert [(r["crossed"], r["ruled_out"]) for r in rows] == [(2, False), (0, True)]
    assert rows[0]["step"] is not None and rows[1]["step"] is None


def check(slopes):
    slopes = np.array(slopes, dtype=float)
    return O.CoordinateCheck([32, 64], ["a", "logits"], np.ones((len(slopes), 2, 2)), slopes)


def test_flat_and_growing_follow_the_intervals():
    flat = check([[0.05, -0.1], [0.0, -0.05], [0.1, -0.12]])
    assert O.is_flat(flat) and not O.grows(flat)
    steep = check([[1.0, 0.6], [1.1, 0.5], [0.9, 0.55]])
    assert O.grows(steep) and not O.is_flat(steep)
    tilted = check([[0.05, -0.35], [0.0, -0.35], [0.1, -0.32]])  # one mean outside ±0.3
    assert not O.is_flat(tilted) and not O.grows(tilted)
    name, mean, lo, hi = O.slope_intervals(steep)[0]
    assert mean == pytest.approx(1.0) and lo < 1.0 < hi
