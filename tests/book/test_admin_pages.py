"""tfx.book.admin_pages: the glue values, tables and figures of chapters 5–7, on small
made-up inputs (no notebook is executed)."""
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tfx.book import admin_pages as pages  # noqa: E402
from tfx.book import notebook  # noqa: E402
from tfx.runs.profiles import get_profile  # noqa: E402

P = get_profile("quick")


@pytest.fixture
def glued(monkeypatch):
    """Record what the module glues instead of handing it to myst-nb."""
    seen = {}

    def fake(name, value, display=False):
        seen[name] = value
        return value

    monkeypatch.setattr(pages, "glue", fake)
    monkeypatch.setattr(notebook, "glue", fake)  # glue_figure, shared by every page module
    return seen


def _profile(kinds, ratio):
    rel = np.array([ratio ** (len(kinds) - 1 - k) for k in range(len(kinds))])
    return {"relative": rel, "norm": 2 * rel, "kinds": kinds}


def test_table_and_figure_helpers(glued):
    assert pages.md_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---|\n| 1 | 2 |"
    import matplotlib.pyplot as plt

    fig = plt.figure()
    assert pages.glue_figure("fig-x", fig) == "fig-x" and glued["fig-x"] is fig
    assert not plt.fignum_exists(fig.number)  # closed after gluing


def test_gv1_figures(glued):
    enc, dec = ["self-attn", "ffn"] * 3, ["self-attn", "cross-attn", "ffn"] * 3
    prof = {"encoder": _profile(enc, 1.0), "decoder": _profile(dec, 0.5)}
    assert pages.sublayer_grads_figure(P, {"post": prof, "pre": prof}, 3) in glued
    pages.cross_drop_figure(P, [0.5, 0.5], [0.5, 0.25])
    assert "fig-05-cross-drop" in glued


def _gains(n=4):
    kinds = ["self-attn", "ffn"] * (n // 2)
    return {"kinds": kinds, "forward_gain": np.full(n, 0.5), "backward_gain": np.array(
        [0.2 if k == "self-attn" else 0.5 for k in kinds]), "common_mode": np.full(n, 0.3),
        "predicted": np.full(n - 1, 0.81), "measured": np.full(n - 1, 0.64)}


def test_encoder_alone_table(glued):
    runs = [(np.array([0.6, 0.8, 1.0, 1.0]), _gains()), (np.array([0.8, 0.9, 1.0, 1.0]), _gains())]
    out, table = pages.glue_encoder_alone({"alone": runs, "with a decoder": runs})
    assert glued["nv_alone_bottom"] == pytest.approx(0.7) and "nv_encdec_common" in glued
    assert "nv_encdec_pred" not in glued  # only what the prose reads
    assert glued["nv_alone_seeds"] == 2
    assert table.count("\n") == 3 and "encoder alone" in table and "0.73 / 0.51" in table
    pages.encoder_alone_figure(P, {"alone": runs, "with a decoder": runs})
    assert "fig-05-encoder-alone" in glued


def _balance(spread_update, names=("a", "b", "c", "d")):
    grad = np.logspace(0, 3, len(names))
    return {"names": list(names), "grad": grad, "update": np.logspace(0, spread_update, len(names)),
            "coord_grad": grad, "coord_update": grad, "loss": np.linspace(2, 1, 20)}


def test_gv3_spreads_and_the_equalising_verdict(glued):
    sizes = {"adam": _balance(0.1), "sgd": _balance(3.0)}
    spread, table = pages.glue_gv3(sizes, sizes, (10, 20))
    assert spread[("adam", "grad")] > 1 and spread[("adam", "update")] < 0.5
    assert str(glued["nv_gv3_equalises_adam"].data) == "equalises"
    assert str(glued["nv_gv3_equalises_sgd"].data) == "does not equalise"
    assert (glued["nv_gv3_a"], glued["nv_gv3_b"], glued["nv_gv3_n"]) == (10, 20, 4)
    assert "steps 10→20" in table
    pages.update_balance_figure(P, sizes, (10, 20))
    assert "fig-05-update-balance" in glued


def _history(status, loss):
    return SimpleNamespace(status=status, eval_loss=[3.0, loss], loss=[3.0, loss], step=[0, 1],
                           chance_loss=3.0)


@pytest.mark.parametrize("hybrid, verdict", [("did not learn", "fails"), ("learned", "trains")])
def test_gv2_reads_the_outcome_rule(glued, hybrid, verdict):
    runs = {"Post/Post": _history("did not learn", 2.9), "Post/Pre": _history(hybrid, 1.0),
            "Pre/Pre": _history("learned", 0.5)}
    trained, table = pages.glue_gv2(runs, 3.0, "reverse")
    assert trained["Pre/Pre"] and trained["Post/Pre"] == (hybrid == "learned")
    assert verdict in str(glued["nv_gv2_verdict"].data)
    assert glued["nv_post_pre_loss"] == 1.0 and "`learned`" in table
    assert str(glued["nv_post_pre_status"].data) == f"`{hybrid}`"
    # the caption and the failure mode say what these runs did, not what one machine's did
    assert glued["nv_gv2_headline"] == ("removing the vanishing gradient is not what makes a model train"
                                        if hybrid != "learned" else "the hybrid, with no vanishing gradient, trains")
    assert "stalls near chance" in str(glued["nv_fail_mode"].data)


def test_gv2_says_how_the_failing_runs_failed(glued):
    runs = {"Post/Post": _history("diverged", 9.0), "Post/Pre": _history("did not learn", 2.9),
            "Pre/Pre": _history("did not learn", 2.9)}
    pages.glue_gv2(runs, 3.0, "reverse")
    assert glued["nv_gv2_headline"] == "neither the hybrid nor Pre/Pre trains in this budget"
    assert str(glued["nv_fail_mode"].data) == "Here Post/Post diverged, Post/Pre did not learn."


def test_dependency_figure(glued):
    deps = {(pl, when): np.tril(np.full((13, 13), 0.3)) for pl in ("post", "pre") for when in ("init", "trained")}
    pages.dependency_figure(P, deps, 5)
    assert "fig-06-dependency" in glued


def _sweep(N, k_post, k_pre, seeds=3, rng=np.random.default_rng(0)):
    noise = lambda: np.exp(0.01 * rng.standard_normal((len(N), seeds)))  # noqa: E731
    post, pre = np.outer(N ** k_post, np.ones(seeds)) * noise(), np.outer(N ** k_pre, np.ones(seeds)) * noise()
    return {"post": post, "pre": pre, "sum_beta_sq": {"post": post / 2, "pre": pre / 2}}


def test_am2_laws_hold_and_fail_by_the_exponent_interval(glued):
    N = np.array([2.0, 4.0, 8.0, 16.0])
    kh = pages.fit.fit_loglog(N, [pages.change.output_change_order("pre", 2 * int(n)) for n in N])[0]
    sweeps = {"random": _sweep(N, 1.0, kh), "adam": _sweep(N, 2.0, 1.5)}
    am2, table = pages.glue_am2(N, sweeps, {"random": 3, "adam": 3})
    assert am2["k_harmonic"] == pytest.approx(kh)
    assert str(glued["am_law_random_post"].data) == "holds"
    assert str(glued["am_law_random_pre"].data) == "holds"
    assert "not" in str(glued["am_law_adam_post"].data)
    assert str(glued["am_thm2_exp"].data) == "is met for both"
    assert glued["am_depths"] == "2, 4, 8, 16" and table.count("\n") == 5
    assert glued["am_ratio_adam"] == pytest.approx(16 ** 0.5, rel=0.05)
    th = pages.change.theorem2_fit(sweeps["random"])
    pages.output_change_figure(P, N, sweeps, am2["fits"], 1e-5)
    pages.theorem2_figure(P, th, (2, 4, 8, 16))
    assert {"fig-06-output-change", "fig-06-theorem2"} <= set(glued)


def test_admin_law_and_output_change(glued):
    i = np.arange(1, 13)
    law_rows = [1 / (i + 1) * (1 + 0.01 * s) for s in range(3)]
    b2s = {"admin": law_rows, "pre": law_rows, "post": [np.full(12, 0.5)] * 3,
           "admin-profiling-free": [np.full(12, 0.1)] * 3}
    out = pages.glue_admin_law(b2s, {"level": 1.0, "holds": True}, [0.01, 0.03], 6)
    assert out["slope"]["admin"] == pytest.approx(-1, abs=0.01)
    assert out["slope"]["post"] == pytest.approx(0, abs=1e-9)
    assert glued["ad_refined_err"] == pytest.approx(3.0) and glued["ad_seeds"] == 3
    assert str(glued["ad_law"].data) == "holds"
    pages.admin_beta_figure(P, out["b2"])
    N = np.array([2.0, 4.0, 8.0])
    sw = _sweep(N, 1.0, 0.3)
    sweeps = {k: {**sw, "admin": sw["pre"] * 1.1, "admin-profiling-free": sw["pre"] * 1.2}
              for k in ("random", "adam")}
    schemes = ("post", "pre", "admin", "admin-profiling-free")
    expo = {s: pages.fit.exponent_interval(N, sweeps["random"][s]) for s in schemes}
    table = pages.glue_admin_change(N, sweeps, expo)
    assert glued["ad_admin_over_pre_random"] == pytest.approx(1.1)
    assert glued["ad_exp_post"] == pytest.approx(1.0, abs=0.05)
    assert "ad_exp_admin_hi" in glued and table.count("\n") == 5
    pages.admin_change_figure(P, N, sweeps, schemes, lr=1e-5)
    assert {"fig-07-beta", "fig-07-output-change"} <= set(glued)


def test_profiling_readings(glued):
    om = {"encoder": np.array([1.0, 1.5, 2.0]), "decoder": np.array([1.0, 1.6, 2.2])}
    train = {s: v * np.array([1.0, 1.5, 1.4]) for s, v in om.items()}
    out = pages.glue_profiling({"train": train, "eval": om}, om,
                               {"dropout": 0.3, "attn_dropout": 0.1})
    assert out["same"] and out["ratio_max_encoder"] == pytest.approx(1.5)
    assert glued["ad_prof_ratio_argmax_encoder"] == 2  # sub-layers count from 1
    assert str(glued["ad_prof_vs_single"].data) == "more than"  # 1.5 > 0.7^-1/2 ≈ 1.195
    pages.profiling_figure(P, {"train": train, "eval": om}, om)
    b2 = {"train": np.array([0.5, 0.1, 0.1]), "eval": np.array([0.5, 0.2, 0.2])}
    oc = {k: {"train": np.array([1.0, 2.0]), "eval": np.array([2.0, 4.0])} for k in ("random", "adam")}
    eff = pages.glue_profiling_effect(b2, oc)
    assert eff["share"] == pytest.approx(0.5) and eff["every_seed"]
    assert str(glued["ad_prof_change_verdict"].data) == "smaller, for every seed"
    pages.profiling_effect_figure(P, b2, oc, lr=1e-5)
    assert {"fig-07-profiling", "fig-07-profiling-effect"} <= set(glued)


def test_admin_in_training_is_read_from_ad3s_recorded_comparisons(glued):
    """Chapter 7's advice reads chapter 12's runs: Post-LN's gap to Pre-LN and to Admin (the
    failure half) and Admin against Pre-LN (the quality half), each with the claims page's
    verdict; nothing is trained."""
    from tfx.book import evidence

    got = pages.glue_admin_in_training()
    assert set(got) == {"post_pre", "post_admin", "admin_pre", "admin_pre_mt"}
    assert glued["ad_train_closed"] == pytest.approx(
        got["post_admin"][0].mean / got["post_pre"][0].mean)
    assert glued["ad_train_depth"].count("+") == 1
    judged = {(c.part, c.experiment, c.a, c.b): v for c, _, v in evidence.verdicts("AD-3")}
    assert glued["ad_train_admin_pre_verdict"] == judged[
        ("quality", "lr-sensitivity", "Admin", "Pre-LN")]
    assert glued["ad_train_post_admin"].startswith(("+", "-"))


def test_random_signs_effect_reads_aligned_minus_random_exponents(glued):
    """AM-2's control: aligned steps grow with exponent 2, random-sign ones with 1 (Post-LN);
    the paired effect on the exponent is +1, predicted higher: reproduces. Equal growth: not."""
    N = np.array([2.0, 4.0, 8.0, 16.0])
    seeds = np.array([1.0, 1.1, 0.9, 1.05, 0.95])
    aligned = {"depths": N, "post": np.outer(N ** 2, seeds), "pre": np.outer(N, seeds)}
    signs = {"depths": N, "post": np.outer(N, seeds * 1.3), "pre": np.outer(N, seeds * 0.7)}
    out = pages.glue_random_signs(N, aligned, signs)
    assert out["post"].mean == pytest.approx(1.0) and out["post"].verdict == "reproduces"
    assert glued["am_signs_k_post"] == pytest.approx(1.0) and glued["am_signs_verdict_post"] == "reproduces"
    assert out["pre"].mean == pytest.approx(0.0, abs=1e-9) and out["pre"].verdict != "reproduces"


def test_admin_law_by_depth_table_counts_the_depths_it_holds_at(glued):
    laws = {6: {"slope": -0.75, "level": 0.71, "holds": False},
            24: {"slope": -0.87, "level": 0.87, "holds": True}}
    assert pages.glue_admin_law_by_depth(laws, range(5, 10)) == {6: False, 24: True}
    assert glued["ad_law_held"] == "1 of 2" and glued["ad_fresh_seeds"] == "5–9" and glued["ad_fresh_n"] == 5
    table = str(glued["ad-law-by-depth"].data)
    assert "| 6 | -0.75 | 0.71 | does not hold |" in table and "| 24 | -0.87 | 0.87 | holds |" in table
