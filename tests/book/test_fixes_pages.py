"""The bookkeeping of chapters 8-10 (tfx.book.fixes_pages): effects in words and tables, the
learning-rate and forest figures, the sweep explorer."""
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
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


def test_effect_text_gives_the_mean_and_interval_without_a_verdict():
    e = _effect([-1.0, -1.2, -0.9, -1.1, -1.0])
    text = fp.effect_text(e)
    assert text.startswith(f"{e.mean:+.2f} nats (95 % interval {e.low:+.2f} to {e.high:+.2f})")
    assert e.verdict not in text
    assert "one seed" in fp.effect_text(_effect([-1.0]))


def test_lr_figure_never_goes_below_zero_marks_divergence_in_the_legend_and_draws_no_text(tfixup):
    recs, exp = tfixup
    schemes = [name for name, _ in exp.grid("book")["scheme"]]
    blown = ["Xavier, no LN", "T-Fixup, embeddings only"]
    fig = fp.lr_figure(P, recs, "scheme", {"bounded": [s for s in schemes if s not in blown],
                                           "blown": blown}, fp.TFIXUP_COLORS)
    left, right = fig.axes
    assert left.get_yscale() == "linear" and left.get_ylim()[0] == 0
    assert right.get_yscale() == "log" and right.get_ylim()[0] > 0  # losses far above chance
    for ax in (left, right):
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(lab.startswith("× diverged") for lab in labels)  # every panel has a diverged run
        assert not ax.texts  # no strings drawn on the axes
    finals = [x for r in recs for x in [r.final_loss] if math.isfinite(x)]
    assert max(finals) > fp.LOG_ABOVE * recs[0].history.chance_loss


def test_sweep_explorer_covers_the_grid_and_thins_the_training_loss(tfixup):
    recs, exp = tfixup
    e = fp.sweep_explorer(recs, exp, "book", "scheme", default={"scheme": "T-Fixup", "lr": "1e-3"})
    assert list(e.controls) == ["scheme", "lr"]
    assert len(e.states()) == len(e.controls["scheme"]) * len(e.controls["lr"])
    loss, held_out = e.panels(scheme="T-Fixup", lr="1e-3")
    seeds = [k for k in loss.lines if k.startswith("seed")]
    assert len(seeds) == 5
    for k in seeds:
        xs, ys = loss.lines[k]
        assert len(xs) <= fp.EXPLORER_POINTS and xs[-1] == 400  # the last step is kept
    assert len(fp.sweep_explorer(recs, exp, "book", "scheme", points=400)
               .panels(scheme="T-Fixup", lr="1e-3")[0].lines["seed 0"][0]) > fp.EXPLORER_POINTS
    assert held_out.lines["seed 0"][0][-1] == 400


def test_largest_rise_and_geometric_means():
    class H:
        loss = [3.0, 2.0, 2.5, 1.0, 1.8, 0.5]

    assert fp.largest_rise(H) == pytest.approx(0.8)
    rows = np.array([[1.0, 4.0], [2.0, np.inf], [np.nan, -1.0]])
    out = fp.geo_mean_rows(rows)
    assert out[0] == pytest.approx(2.0) and out[1] == pytest.approx(2.0) and np.isnan(out[2])


# ------------------------------------------------------------------ chapter 10
def test_deepnorm_table_shows_both_conventions_and_only_the_paper_keeps_the_balance():
    table, enc = fp.deepnorm_constants_table([(6, 6), (12, 0)])
    rows = table.splitlines()
    assert "κ, paper" in rows[0] and "κ, torchscale" in rows[0]
    assert len(rows) == 2 + 2 + 1  # 6+6: encoder and decoder; 12+0: encoder only
    assert enc["balance_paper"] == pytest.approx(1.0, abs=0.01)
    assert abs(enc["balance_torchscale"] - 1.0) > 0.5
    assert enc["kappa_torchscale"] / enc["kappa_paper"] == pytest.approx(1.15 / 0.87, rel=1e-3)


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
    table = fp.glue_diagnostics(diag, schemes, (2, 3))
    assert set(table) == set(schemes)
    assert fp.diagnostics_table(table).count("\n") == 1 + len(schemes)
    with pytest.raises(ValueError, match="schemes: the ratios need pre"):
        fp.glue_diagnostics(diag, ("post", "deepnorm"), (2, 3))


def test_the_interval_and_diagnostics_tables_render_exactly():
    from types import SimpleNamespace

    mc = {(-1, 1): {"u": {"over_paper": 0.28867}}, (0, 2.5): {"u": {"over_paper": 0.5}}}
    assert fp.interval_std_table(mc, [(-1, 1), (0, 2.5)], ["u"]) == (
        "| distribution | [-1, 1] | [0, 2.5] |\n|---|---|---|\n| u | 0.2887 | 0.5000 |")
    d = SimpleNamespace(rel_out_change=0.01234, rel_out_change_adam=1.2345e-4, sum_beta_diag_sq=3.14159,
                        grad_spread={"decoder": 12.345})
    assert fp.diagnostics_table({"post": d}) == (
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
        v = fp.warm_baseline_values(recs, recs, claim)
        for w in ("100", "300"):
            assert v[f"warmup-{w}"] == int(w)
            best, _ = effects.runs_at_best_rate(recs, scheme=f"Post-LN, warmup {w}")
            assert v[f"rate-{w}"] == best.variant
            c = next(c for c in evidence.BY_CLAIM[claim] if c.b == f"Post-LN, warmup {w}")
            assert v[f"vs-{w}-verdict"] == c.expected
            assert v[f"vs-{w}-mean"] == pytest.approx(c.effect(recs).mean)
        assert v[f"outcomes-{scheme}"].endswith(f"of {len({r.seed for r in recs})}")
        assert v["runs"] == len(recs)


def test_lr_figure_is_stamped_with_its_records_task_not_the_profiles():
    recs = results.load("warm-baselines", "quick")
    if not recs:
        pytest.skip("no recorded warm-baselines sweep in the quick profile")
    assert recs[0].task != P.task
    schemes = list(dict.fromkeys(r.point["scheme"] for r in recs))
    fig = fp.lr_figure(P, recs, "scheme", {"all": schemes}, fp.WARM_BASELINE_COLORS)
    texts = [t.get_text() for t in fig.texts]
    assert any(t.endswith(f"task: {recs[0].task}") for t in texts), texts
