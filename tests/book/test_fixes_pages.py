"""The bookkeeping of chapters 8-10 (tfx.book.fixes_pages): the parts of an effect a page reads,
the sweeps' values and the tables."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from tfx.book import fixes_pages as fp  # noqa: E402
from tfx.runs import effects, results  # noqa: E402
from tfx.runs.experiment import Experiment  # noqa: E402
from tfx.runs.profiles import get_profile  # noqa: E402

P = get_profile("quick", check_task=False)


def _effect(diffs, expect="lower", margin=0.0, unit="nats"):
    return effects.paired({s: d for s, d in enumerate(diffs)}, {s: 0.0 for s in range(len(diffs))},
                          expect, "a", "b", unit=unit, margin=margin)


@pytest.fixture(scope="module")
def tfixup():
    recs = results.load("t-fixup", "book")
    if not recs:
        pytest.skip("no recorded t-fixup sweep in the book profile")
    return recs, Experiment.load("t-fixup")


def test_effect_values_give_the_parts_a_page_reads():
    e = _effect([-1.0, -1.2, -0.9, -1.1, -1.0])
    text = fp.effect_text(e)
    assert fp.effect_values(e) == {"": text, "_mean": e.mean, "_low": e.low, "_high": e.high,
                                   "_verdict": e.verdict}
    assert fp.effect_values(e, "", "_verdict") == {"": text, "_verdict": e.verdict}


# ------------------------------------------------------------------ chapter 10
def test_deepnorm_table_shows_both_conventions():
    from tfx.theory import scaling

    rows = fp.deepnorm_constants_table(scaling.deepnorm_conventions([(6, 6), (12, 0)])).splitlines()
    assert "κ, paper" in rows[0] and "κ, torchscale" in rows[0]
    assert len(rows) == 2 + 2 + 1  # 6+6: encoder and decoder; 12+0: encoder only


def test_every_panel_of_the_diagnostics_figure_says_which_scheme_is_which():
    import tfx
    from tfx.theory import scaling

    task = tfx.synthetic("reverse", length=8)
    batch = task.batch(0, 4)
    schemes = ("post", "pre", "deepnorm")
    diag = scaling.init_diagnostics_grid(schemes, (2, 3), task, batch, d_model=16, n_heads=2, d_ffn=32)
    fig = fp.diagnostics_figure(P, diag, schemes, 3)
    left, middle, right = fig.axes
    assert left.get_legend() is not None and right.get_legend() is not None
    assert len(right.get_legend().get_texts()) == len(schemes)
    assert fp.diagnostics_table(diag, 3).count("\n") == 1 + len(schemes)


def test_the_interval_and_diagnostics_tables_render_exactly():
    from types import SimpleNamespace

    mc = {(-1, 1): {"u": {"over_paper": 0.28867}}, (0, 2.5): {"u": {"over_paper": 0.5}}}
    assert fp.interval_std_table(mc, [(-1, 1), (0, 2.5)], ["u"]) == (
        "| distribution | [-1, 1] | [0, 2.5] |\n|---|---|---|\n| u | 0.2887 | 0.5000 |")
    d = SimpleNamespace(rel_out_change=0.01234, rel_out_change_adam=1.2345e-4, sum_beta_diag_sq=3.14159,
                        grad_spread={"decoder": 12.345})
    assert fp.diagnostics_table({("post", 3): [d], ("post", 2): [None]}, 3) == (
        "| scheme | rel. ‖ΔF‖², random δ | rel. ‖ΔF‖², one Adam step | Σβ²_ii "
        "| decoder gradient, bottom/top |\n"
        "|---|---|---|---|---|\n| Post-LN (Xavier) | 0.0123 | 0.000123 | 3.14 | 12.3 |")


def test_warm_baseline_values_read_each_schemes_best_rate_and_the_registered_verdicts():
    """Chapters 8 and 9's numbers for experiments/warm-baselines.toml: each scheme's best rate
    and outcomes there, each Post-LN warmup's length from its records, and each registered
    comparison's verdict as the registry declares it."""
    from tfx.book import evidence

    recs = results.load("warm-baselines", "book")
    if not recs:
        pytest.skip("no recorded warm-baselines sweep in the book profile")
    for claim, scheme in (("TF-2", "T-Fixup"), ("LP-3", "Lipschitz")):
        parent = recs[:2]
        v = fp.warm_baseline_values(recs, recs, claim, parent)
        assert v["parent-steps"] == parent[0].train_config.steps and v["depth"] == recs[0].config.n_enc
        for w in ("100", "300"):
            assert v[f"warmup-{w}"] == int(w)
            best, _ = effects.runs_at_best_rate(recs, scheme=f"Post-LN, warmup {w}")
            assert v[f"rate-{w}"] == best.variant
            c = next(c for c in evidence.BY_CLAIM[claim] if c.b == f"Post-LN, warmup {w}")
            assert v[f"vs-{w}-verdict"] == c.expected
            assert v[f"vs-{w}-mean"] == pytest.approx(c.effect(recs).mean)
        assert v[f"outcomes-{scheme}"].endswith(f"of {len({r.seed for r in recs})}")
        assert v["runs"] == len(recs)


def test_sweep_values_read_each_variants_own_best_rate_and_the_sweeps_sizes(tfixup):
    recs, _ = tfixup
    keys = {"T-Fixup": "tfixup", "Post-LN, warmup": "postwarm"}
    v, best = fp.sweep_values(recs, "scheme", keys, "Post-LN, warmup", outcomes=True)
    assert set(best) == set(keys)
    assert v["best_tfixup"] == effects.best_rate(recs, scheme="T-Fixup").variant == best["T-Fixup"].variant
    assert v["seeds"] == len({r.seed for r in recs}) and v["deep"] == recs[0].config.n_enc
    assert v["warmup"] == results.select(recs, scheme="Post-LN, warmup")[0].train_config.warmup
    assert v["outcomes_tfixup"].split()[0] in ("learned", "still", "did", "diverged")


def test_schemes_sweep_values_state_every_scheme():
    recs = results.load("schemes", "book")
    if not recs:
        pytest.skip("no recorded schemes sweep in the book profile")
    schemes = list(dict.fromkeys(r.point["scheme"] for r in recs))
    v = fp.schemes_sweep_values(recs, schemes)
    for s in schemes:
        k = s.lower().replace("-", "")
        assert v[f"best_{k}"] == effects.best_rate(recs, scheme=s).variant
        assert 0 <= v[f"win_{k}"] <= v["rates"]
    assert v["runs"] == len(recs) and v["post_best_outcomes"].endswith(f"of {v['seeds']}")
