"""tfx.theory.change: Theorem 2's order (AM-2), the output change under a random perturbation or an
Adam step, and two models' largest output difference (AD-2)."""
import numpy as np
import pytest
import torch

import tfx
from tfx.theory import change, fit
from small_models import BATCH, SIZES, TASK, model as _model


def test_output_change_order():
    """Σ_i β²_{i,i} over L sub-layers: Post-LN L·v/(1+v); Pre-LN H_{L+1} − 1 (the embedding
    counted as piece 0, chapter 6's eq-am-corollaries)."""
    assert change.output_change_order("post", 12) == 6.0            # v = 1: half per sub-layer
    assert change.output_change_order("post", 12, v=0.5) == pytest.approx(4.0)
    assert change.output_change_order("pre", 1) == 0.5
    assert change.output_change_order("pre", 4) == pytest.approx(1 / 2 + 1 / 3 + 1 / 4 + 1 / 5)
    Ls = np.array([6, 12, 24, 48, 96, 192])   # H_{L+1} − 1 − ln L → γ − 1
    post = [change.output_change_order("post", n) for n in Ls]
    pre = [change.output_change_order("pre", n) for n in Ls]
    assert fit.fit_linear(Ls, post)[2] == pytest.approx(1.0)
    slope, _, r2 = fit.fit_linear(np.log(Ls), pre)  # ln(L+1) − 1/(2(L+1)) terms: slope 0.94 here
    assert slope == pytest.approx(1.0, abs=0.08) and r2 > 0.998
    assert change.output_change_order("admin", 10) == change.output_change_order("pre", 10)
    with pytest.raises(ValueError):
        change.output_change_order("pre", 0)


def test_perturb_random_scales_matrices_only():
    m = _model(n_enc=2, n_dec=0, placement="post")
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    new = change.perturb_random(m, scale=1e-2, seed=3)
    for n, p in m.named_parameters():
        assert torch.equal(p, before[n])  # the original is untouched
    for n, p in new.named_parameters():
        delta = p.detach() - before[n]
        if n.startswith("encoder.") and p.ndim == 2:
            rel = float(delta.std() / before[n].std())
            assert rel == pytest.approx(1e-2, rel=0.15), n
        else:  # vectors and embeddings (x_0 fixed) are left alone
            assert float(delta.abs().max()) == 0, n
    again = change.perturb_random(m, scale=1e-2, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(new.parameters(), again.parameters()))


def test_adam_step_moves_each_weight_by_lr():
    m = _model(n_enc=2, n_dec=0, placement="post")
    new = change.adam_step(m, BATCH, lr=1e-4)
    for (n, p), q in zip(m.named_parameters(), new.parameters()):
        step = (q - p).detach().abs()
        assert float(step.max()) <= 1e-4 * 1.001, n
        if not n.startswith("encoder."):
            assert float(step.max()) == 0, n
    w = dict(new.named_parameters())["encoder.layers.0.ffn.f.fc1.weight"]
    w0 = dict(m.named_parameters())["encoder.layers.0.ffn.f.fc1.weight"]
    assert float((w - w0).detach().abs().median()) == pytest.approx(1e-4, rel=0.05)  # ≈ lr · sign(g)


def test_output_change_is_quadratic_in_the_perturbation():
    """Small δ: ΔF is linear in δ, so ‖ΔF‖² scales with its square — for noise and for Adam."""
    m = _model(n_enc=2, n_dec=0, placement="post")
    assert change.output_change(m, BATCH, scale=0.0) == 0.0
    big, small = (change.output_change(m, BATCH, scale=s, seed=1) for s in (1e-2, 1e-3))
    assert big / small == pytest.approx(100, rel=0.1)
    big, small = (change.output_change(m, BATCH, "adam", lr=lr) for lr in (1e-5, 1e-6))
    assert big / small == pytest.approx(100, rel=0.1)
    with pytest.raises(ValueError, match="perturbation"):
        change.output_change(m, BATCH, "momentum")


def test_stack_output_and_sweep_shapes():
    m = _model(n_enc=2, n_dec=2)
    assert change.stack_output(m, BATCH).shape == (8, 7, 32)
    assert change.stack_output(m, BATCH, "decoder").shape == (8, 7, 32)
    with pytest.raises(ValueError, match="stack"):
        change.stack_output(_model(n_enc=2, n_dec=0), BATCH, "decoder")
    r = change.output_change_sweep(TASK, (1, 2), schemes=("post", "admin"), seeds=2, batch_size=8, **SIZES)
    assert r["post"].shape == (2, 2) and (r["admin"] > 0).all()


def test_max_output_difference():
    a = _model(n_enc=2, n_dec=2, placement="admin", init="admin")
    assert change.max_output_difference(a, a, BATCH) == 0.0
    b = tfx.reparameterize_admin(a)
    assert change.max_output_difference(a, b, BATCH) < 1e-5
    assert change.max_output_difference(a, _model(n_enc=2, n_dec=2, seed=1), BATCH) > 1e-2


def test_output_change_sweep_of_decoder_only_models():
    """``stack="decoder"`` builds decoder-only LMs (no encoder, causal), so the numbers differ
    from the encoders' of the same depth and seed; a bad stack is refused by name."""
    dec = change.output_change_sweep(TASK, (1, 2), schemes=("post",), seeds=1, batch_size=8, stack="decoder", **SIZES)
    enc = change.output_change_sweep(TASK, (1, 2), schemes=("post",), seeds=1, batch_size=8, **SIZES)
    assert dec["post"].shape == (2, 1) and (dec["post"] > 0).all()
    assert not np.allclose(dec["post"], enc["post"]) and not np.allclose(dec["sum_beta_sq"]["post"],
                                                                          enc["sum_beta_sq"]["post"])
    with pytest.raises(ValueError, match="stack='both'"):
        change.output_change_sweep(TASK, (1,), stack="both", **SIZES)


def test_perturbation_seed_is_the_init_seed_plus_a_fixed_offset():
    """The random δ of a model from seed s comes from seed 1000 + s (every AM-2, DN-1, PL-1 sweep)."""
    assert change.PERTURBATION_SEED == 1000
    assert [change.perturbation_seed(s) for s in (0, 1, 7)] == [1000, 1001, 1007]


def test_depth_laws_hold_for_theorem_2s_shapes_and_fail_otherwise():
    """Post-LN's change linear in N and Pre-LN's linear in ln N: the laws hold; swap the
    two, or make Post-LN's no larger than Pre-LN's, and they do not."""
    N = np.array([2.0, 4.0, 8.0, 16.0])
    lin, log = (0.01 * N)[:, None], (0.01 * (1 + np.log(N)))[:, None]
    good = change.depth_laws({"depths": N, "post": lin, "pre": log})
    assert good["holds"] and good["r2_post_n"] == pytest.approx(1.0) and good["r2_pre_log"] == pytest.approx(1.0)
    assert good["ratio"] == pytest.approx(16 / (1 + np.log(16)))
    assert not change.depth_laws({"depths": N, "post": log, "pre": lin})["holds"]
    assert not change.depth_laws({"depths": N, "post": lin, "pre": lin})["holds"]  # ratio 1
    # Pre-LN's linear in N but slower (ratio 4): R² against ln N is high, but N fits better
    slow = change.depth_laws({"depths": N, "post": lin, "pre": lin / 4})
    assert slow["r2_pre_log"] >= change.LAW_R2 and slow["r2_pre_n"] > slow["r2_pre_log"]
    assert slow["parts"] == {"Post-LN grows like N": True, "Pre-LN grows like ln N": False,
                             "Post-LN over 3× Pre-LN at the deepest N": True}
    assert not slow["holds"]


def test_depth_exponents_per_seed():
    """Per-seed log-log slopes of the output change against depth; a seed overflowing at the
    deepest N is fitted over the rest (their paired effect: tests/book/test_evidence.py)."""
    N = np.array([2.0, 4.0, 8.0, 16.0])
    jitter = np.array([1.0, 1.1, 0.9, 1.05, 0.95])
    res = {"depths": N,
           "flat": np.outer(np.ones_like(N), jitter) * N[:, None] ** 0.02 * 1e-3,
           "grows": np.outer(N ** 2.0, jitter),
           "overflows": np.outer(N ** 3.0, jitter)}
    res["overflows"][-1, 0] = np.nan
    e = change.depth_exponents(res, "grows")
    assert list(e) == [0, 1, 2, 3, 4] and all(v == pytest.approx(2.0) for v in e.values())
    assert change.depth_exponents(res, "overflows")[0] == pytest.approx(3.0)
    # measured on models: the sweep's shape, without Theorem 2's Σβ² when it is not asked for
    r = change.output_change_sweep(TASK, (1, 2), schemes=("post",), seeds=2, perturbation="adam",
                                   with_beta=False, **SIZES)
    assert r["post"].shape == (2, 2) and np.isnan(r["sum_beta_sq"]["post"]).all()
    assert set(change.depth_exponents(r, "post")) == {0, 1}


def test_sgd_step_follows_the_gradient_and_is_quadratic_in_lr():
    """One plain gradient step: W* − W = −lr·∇W exactly, so the output change grows as lr²
    (Adam's first step, ±lr per coordinate, does not follow the gradient's size)."""
    m = _model(n_enc=2, n_dec=0, placement="post")
    stepped = change.sgd_step(m, BATCH, lr=1e-3)
    m.zero_grad()
    from tfx.nn.hooks import loss_on, mode
    with mode(m):  # dropout off, as in the step
        loss_on(m, BATCH)["loss"].backward()
    for (name, p), (_, q) in zip(change._selected(m, "layers"), change._selected(stepped, "layers")):
        # atol: W + Δ rounds in float32
        torch.testing.assert_close(q - p, -1e-3 * p.grad, rtol=1e-3, atol=1e-7, msg=name)
    m.zero_grad(set_to_none=True)
    small = change.output_change(m, BATCH, "sgd", lr=1e-5)
    large = change.output_change(m, BATCH, "sgd", lr=1e-4)
    assert large / small == pytest.approx(100, rel=0.05)
    assert small != pytest.approx(change.output_change(m, BATCH, "adam", lr=1e-5), rel=0.1)
    with pytest.raises(ValueError, match="perturbation='sdg'"):
        change.output_change(m, BATCH, "sdg")


def test_random_signs_keep_adams_step_sizes_and_drop_their_alignment():
    """AM-2's control: every coordinate moves as far as under Adam's first step, in a random
    direction; the output then moves less than under the aligned step."""
    m = _model(n_enc=3, n_dec=0, placement="post")
    adam = change.adam_step(m, BATCH, lr=1e-4)
    rand = change.with_random_signs(m, adam, seed=3)
    flips = total = 0
    for (name, p), (_, a), (_, r) in zip(change._selected(m, "layers"), change._selected(adam, "layers"),
                                         change._selected(rand, "layers")):
        torch.testing.assert_close((r - p).abs(), (a - p).abs(), rtol=1e-3, atol=1e-7, msg=name)
        moved = (a - p).abs() > 0
        flips += int(((r - p).sign() != (a - p).sign())[moved].sum())
        total += int(moved.sum())
    assert 0.4 < flips / total < 0.6
    aligned = change.output_change(m, BATCH, "adam", lr=1e-4)
    shuffled = change.output_change(m, BATCH, "adam-random-signs", lr=1e-4, seed=3)
    assert shuffled < aligned


def _sweep(N, k_post, k_pre, seeds=3, rng=np.random.default_rng(0)):
    noise = lambda: np.exp(0.01 * rng.standard_normal((len(N), seeds)))  # noqa: E731
    post, pre = np.outer(N ** k_post, np.ones(seeds)) * noise(), np.outer(N ** k_pre, np.ones(seeds)) * noise()
    return {"post": post, "pre": pre, "sum_beta_sq": {"post": post / 2, "pre": pre / 2}}


def test_growth_fits_and_theorem2_fit():
    N = np.array([2.0, 4.0, 8.0, 16.0])
    sweeps = {"random": _sweep(N, 1.0, 0.3), "adam": _sweep(N, 2.0, 1.5)}
    g = change.growth_fits(N, sweeps)
    assert g["expo"]["random", "post"]["exponent"] == pytest.approx(1.0, abs=0.02)
    assert g["expo_sb"]["pre"]["exponent"] == pytest.approx(0.3, abs=0.02)
    assert g["fits"]["adam", "post", "power"][0] == pytest.approx(2.0, abs=0.02)
    assert g["law"]["random", "post"] and not g["law"]["adam", "post"]  # exponent 1; 2
    assert g["thm2"] == {"post": True, "pre": True}  # Σβ² = change / 2: the same exponents
    assert g["ratio"]["adam"][-1] == pytest.approx(16 ** 0.5, rel=0.05)
    assert g["k_harmonic"] == pytest.approx(
        fit.fit_loglog(N, [change.output_change_order("pre", 2 * int(n)) for n in N])[0])
    th = change.theorem2_fit(sweeps["random"])  # change = 2 Σβ² for both: one C
    assert th["c_ratio"] == pytest.approx(1.0, rel=0.05) and th["slope"] == pytest.approx(2.0, rel=0.05)
    assert set(th["points"]) == {"post", "pre"}


def test_admin_change_reading_ratios_at_the_deepest_n():
    N = np.array([2.0, 4.0, 8.0])
    sw = _sweep(N, 1.0, 0.3)
    sweeps = {k: {**sw, "admin": sw["pre"] * 1.1, "admin-profiling-free": sw["pre"] * 1.2}
              for k in ("random", "adam")}
    v = change.admin_change_reading(sweeps)
    assert v["admin_over_pre_random"] == pytest.approx(1.1)
    assert v["post_over_admin_random"] == pytest.approx(sw["post"].mean(1)[-1] / (1.1 * sw["pre"].mean(1)[-1]))


def test_sgd_matching_lr_inverts_the_quadratic_rule():
    # change = a·η²: the SGD rate giving Adam's change c_A is √(c_A / a)
    a, c_adam = 7.0, 0.28
    eta = change.sgd_matching_lr(1e-3, a * 1e-6, c_adam)
    assert a * eta ** 2 == pytest.approx(c_adam)
    with pytest.raises(ValueError, match="eta0"):
        change.sgd_matching_lr(0.0, 1.0, 1.0)
