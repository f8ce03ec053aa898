"""tfx.theory.dependency: the layer dependency β_{i,j} (AM-1), Admin's β²_{i,i} = 1/i and ω (AD-1)."""
import numpy as np
import pytest
import torch

from tfx.nn import constants, hooks
from tfx.theory import change, dependency
from small_models import BATCH, model as _model


def test_admin_beta_diag_sq():
    """1/(i + 1) in the book's numbering (embedding = piece 0), the paper's 1/i with the
    embedding numbered 1; Σ_i of it is Theorem 2's Pre-LN / Admin sum."""
    assert dependency.admin_beta_diag_sq(4) == 0.2
    assert dependency.admin_beta_diag_sq(4, embedding=False) == 0.25
    assert sum(dependency.admin_beta_diag_sq(i) for i in range(1, 5)) == pytest.approx(change.output_change_order("admin", 4))


def test_admin_law_accepts_the_law_and_rejects_post_ln_and_a_shallow_slope():
    i = np.arange(1, 25)
    law = dependency.admin_law(1 / (i + 1))
    assert law["holds"] and law["slope"] == pytest.approx(-1) and law["level"] == pytest.approx(1)
    assert not dependency.admin_law(np.full(24, 0.5))["holds"]            # Post-LN: flat
    assert not dependency.admin_law((i + 1.0) ** -0.75)["holds"]          # the old "−0.75 passes"
    assert not dependency.admin_law(0.5 / (i + 1))["holds"]               # right slope, level ×2 off


def test_layer_dependency_residual_zero_for_pre_ln_and_large_when_ln_is_not_a_rescaling():
    """The decomposition x̂_i = Σ_j β_ij â_j is exact for Pre-LN (a plain sum) and fails for
    a Post-LN whose LayerNorm gains are far from a scalar (a counter-example to the bookkeeping)."""
    pre = dependency.layer_dependency(_model(n_enc=3, n_dec=0, placement="pre"), BATCH)["encoder"]
    assert np.all(pre["residual"] < 1e-10)
    m = _model(n_enc=3, n_dec=0, placement="post")
    ok = dependency.layer_dependency(m, BATCH)["encoder"]["residual"]
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _, r in m.stacks()["encoder"].residuals():
            r.norm.weight.copy_(torch.rand(r.norm.weight.shape, generator=g) * 4)
    bad = dependency.layer_dependency(m, BATCH)["encoder"]["residual"]
    assert ok[1:].max() < 0.25 and bad[1:].max() > 2 * ok[1:].max(), (ok, bad)


def test_layer_dependency_pre_ln_is_the_papers_formula():
    """Pre-LN: β_{i,j} = std(a_j) / std(x_i) with x_i = x_0 + Σ_{j≤i} a_j (Liu et al. §4.1)."""
    m = _model(n_enc=3, n_dec=0, placement="pre")
    out = dependency.layer_dependency(m, BATCH)["encoder"]
    beta = out["beta"]
    assert beta.shape == (7, 7)
    assert np.isnan(beta[np.triu_indices(7, 1)]).all()
    m.eval()
    with torch.no_grad(), hooks.record_branches(m) as rec:
        m.loss(BATCH)
    r = rec["encoder"]
    stds = [float(r[0]["x"].std())] + [float(x["f"].std()) for x in r]
    for i in range(1, 7):
        x_i = r[i]["x"] if i < 6 else r[5]["x"] + r[5]["f"]
        np.testing.assert_allclose(beta[i, : i + 1], np.array(stds[: i + 1]) / float(x_i.std()), rtol=1e-5)
    np.testing.assert_allclose(out["branch_var"], np.array(stds[1:]) ** 2, rtol=1e-4)


@pytest.mark.parametrize("placement", ["peri-ln", "output-norm", "sub-ln"])
def test_layer_dependency_additive_placements_follow_the_stream(placement):
    """Peri-LN, the output norm and Sub-LN add their branch to the stream (their norms sit
    inside the branch), so β_{i,j} = std(a_j) / std(x_i) as for Pre-LN, with a_j the
    branch after its norms; a Post-LN reading (a norm on the sum) would be wrong."""
    m = _model(n_enc=3, n_dec=0, placement=placement)
    beta = dependency.layer_dependency(m, BATCH)["encoder"]["beta"]
    m.eval()
    with torch.no_grad(), hooks.record_branches(m) as rec:
        m.loss(BATCH)
    r = rec["encoder"]
    stds = [float(r[0]["x"].std())] + [float(x["f"].std()) for x in r]
    x_last = r[5]["x"] + r[5]["f"]
    np.testing.assert_allclose(beta[6], np.array(stds) / float(x_last.std()), rtol=1e-5)


def test_layer_dependency_post_ln_first_row():
    """Post-LN: x_1 = LN(x_0 + a_1), so β_{1,j} = std(piece j)/std(x_0 + a_1) (LN rescales
    both pieces by the same factor, which cancels)."""
    m = _model(n_enc=2, n_dec=0, placement="post")
    beta = dependency.layer_dependency(m, BATCH)["encoder"]["beta"]
    m.eval()
    with torch.no_grad(), hooks.record_branches(m) as rec:
        m.loss(BATCH)
    x0, a1 = rec["encoder"][0]["x"], rec["encoder"][0]["f"]
    z = float((x0 + a1).std())
    np.testing.assert_allclose(beta[1, :2], [float(x0.std()) / z, float(a1.std()) / z], rtol=1e-4)
    # rows are (nearly) unit vectors when the pieces are uncorrelated
    rows = np.nansum(beta**2, axis=1)
    assert np.all(np.abs(rows - 1) < 0.35), rows


def test_layer_dependency_decoder_and_rezero():
    m = _model(n_enc=2, n_dec=2, placement="pre")
    d = dependency.layer_dependency(m, BATCH)
    assert d["decoder"]["beta"].shape == (7, 7) and d["decoder"]["kinds"][1] == "cross-attn"
    rz = dependency.layer_dependency(_model(n_enc=2, n_dec=0, placement="rezero", init="rezero"), BATCH)["encoder"]
    # ReZero at init: α = 0, the network is the identity, every branch weight is 0
    np.testing.assert_allclose(rz["beta"][1:, 0], 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.diag(rz["beta"])[1:], 0.0, atol=1e-7)


def test_effective_depth_sums_the_diagonal_and_orders_the_placements():
    """Σ β²_ii: the diagonal of layer_dependency. Doubling the depth about doubles Post-LN's
    (every sub-layer's own branch keeps a fixed share) but adds only about ln 2 to Pre-LN's
    (Σ 1/(i+1) ≈ ln L); ReZero's is 0 at initialisation."""
    pre = _model(n_enc=4, n_dec=2, placement="pre")
    ed, d = dependency.effective_depth(pre, BATCH), dependency.layer_dependency(pre, BATCH)
    assert set(ed) == {"encoder", "decoder"}
    for s in ed:
        assert ed[s] == pytest.approx(float(np.sum(np.diag(d[s]["beta"])[1:] ** 2)))
    enc = {(p, n): dependency.effective_depth(_model(n_enc=n, n_dec=0, placement=p), BATCH)["encoder"]
           for p in ("post", "pre") for n in (4, 8)}
    assert enc["post", 8] / enc["post", 4] > 1.7
    assert enc["pre", 8] - enc["pre", 4] < 1.0 and enc["pre", 8] < enc["post", 4]
    rz = dependency.effective_depth(_model(n_enc=2, n_dec=0, placement="rezero", init="rezero"), BATCH)
    assert rz["encoder"] == pytest.approx(0.0, abs=1e-12)


def test_admin_omegas():
    pf = _model(n_enc=2, n_dec=2, placement="admin", init="admin-profiling-free")
    om = dependency.admin_omegas(pf)
    np.testing.assert_allclose(om["encoder"], constants.admin_omega_profiling_free(4), rtol=1e-6)
    np.testing.assert_allclose(om["decoder"], constants.admin_omega_profiling_free(6), rtol=1e-6)
    prof = dependency.admin_omegas(_model(n_enc=3, n_dec=0, placement="admin", init="admin"))["encoder"]
    assert prof[0] == 1.0 and np.all(np.diff(prof) > 0)  # ω_i² = 1 + Σ_{j<i} Var f_j grows
    assert np.isnan(dependency.admin_omegas(_model(placement="post"))["encoder"]).all()


def test_admin_law_by_depth_judges_every_depth_on_the_seeds_asked_for():
    """AD-1 re-judged on fresh seeds at each depth (issue 40): one law per depth, and the seeds
    are the ones asked for (fresh seeds give other β², hence another slope)."""
    import tfx

    task = tfx.synthetic("reverse", length=8)
    batch, held_out = task.batch(0, 8), task.batch(1, 8)
    kw = dict(d_model=16, n_heads=2, d_ffn=32)
    laws = dependency.admin_law_by_depth(task, (2, 4), batch, held_out, seeds=2, **kw)
    assert set(laws) == {2, 4} and all(set(v) == {"slope", "level", "holds"} for v in laws.values())
    fresh = dependency.admin_law_by_depth(task, (4,), batch, held_out, seeds=2, first_seed=7, **kw)
    assert fresh[4]["slope"] != pytest.approx(laws[4]["slope"], abs=1e-9)


def test_last_row_reading():
    L = 12
    pre = np.tril(np.full((L + 1, L + 1), 1 / np.sqrt(L + 1)))
    post = np.tril(np.ones((L + 1, L + 1)) * 0.01)
    post[L, L] = post[L, L - 1] = 0.6
    deps = {("post", "init"): post, ("pre", "init"): pre,
            ("post", "trained"): post, ("pre", "trained"): pre}
    v = dependency.last_row_reading(deps, {"post": np.linspace(0.2, 0.0, L + 1), "pre": np.zeros(L + 1)})
    assert v["pre_row_cv"] == pytest.approx(0) and v["uniform"] == pytest.approx(pre[L, 0])
    assert v["post_last_two"] == pytest.approx(0.6 * np.sqrt(2))
    assert v["resid_post"] == pytest.approx(0.2) and v["resid_post_top"] < 0.2
    assert "diag_post_trained" in v


def test_beta_diag_slopes_and_the_attention_share():
    i = np.arange(1, 13)
    law = [1 / (i + 1) * (1 + 0.01 * s) for s in range(3)]
    r = dependency.beta_diag_slopes({"admin": law, "post": [np.full(12, 0.5)] * 3})
    assert r["slope"]["admin"] == pytest.approx(-1, abs=0.01)
    assert r["slope"]["post"] == pytest.approx(0, abs=1e-9)
    assert r["slope_lo"] == pytest.approx(r["slope_hi"]) == pytest.approx(-1, abs=0.01)
    assert r["attn_over_ffn"] > 1  # β² falls with i: each attention sub-layer's above the FFN's after it


def test_profiling_modes_and_effect():
    om = {"encoder": np.array([1.0, 1.5, 2.0]), "decoder": np.array([1.0, 1.6, 2.2])}
    train = {s: v * np.array([1.0, 1.5, 1.4]) for s, v in om.items()}
    v = dependency.profiling_modes({"train": train, "eval": om}, om, 0.3)
    assert v["same"] and v["ratio_max_encoder"] == pytest.approx(1.5)
    assert v["ratio_argmax_encoder"] == 2 and v["top_train_decoder"] == pytest.approx(3.08)
    assert v["single"] == pytest.approx(0.7 ** -0.5)
    b2 = {"train": np.array([0.5, 0.1, 0.1]), "eval": np.array([0.5, 0.2, 0.2])}
    oc = {k: {"train": np.array([1.0, 2.0]), "eval": np.array([2.0, 4.0])} for k in ("random", "adam")}
    e = dependency.profiling_effect(b2, oc)
    assert e["share"] == pytest.approx(0.5) and e["every_seed"] and e["seeds"] == 2
    assert e["change_random"] == e["change_adam"] == pytest.approx(0.5)
