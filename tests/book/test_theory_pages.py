"""tfx.book.theory_pages: the bookkeeping of chapters 1–4, checked without a notebook."""
import math
import re

import numpy as np
import pytest
import torch

import matplotlib

matplotlib.use("Agg")

from tfx.book import notebook  # noqa: E402
from tfx.book import theory_pages as pages  # noqa: E402
from tfx.runs.profiles import get_profile  # noqa: E402
from tfx.theory import fit  # noqa: E402

P = get_profile("quick")


def test_md_table_renders_a_header_a_rule_and_one_line_per_row():
    t = pages.md_table(("a", "b"), [(1, 2), (3, 4)])
    assert t.splitlines() == ["| a | b |", "|---|---|", "| 1 | 2 |", "| 3 | 4 |"]


def test_v1_fade_matches_the_closed_form_and_refuses_bad_input():
    k, kmin, layers = pages.v1_layers_to_fade(1.2, 0.01)
    assert k == pytest.approx(math.log(100) / math.log(1.2))
    assert (kmin, layers) == (26, 13)
    assert 1.2 ** -kmin < 0.01 <= 1.2 ** -(kmin - 1)
    with pytest.raises(ValueError, match="sigma"):
        pages.v1_layers_to_fade(0.9)


def test_post_ln_sum_norm_is_lemma_2_at_r_1_and_falls_with_width():
    assert pages.post_ln_sum_norm(1) == pytest.approx(1.5)
    assert pages.post_ln_sum_norm(2) > pages.post_ln_sum_norm(8) > 1
    with pytest.raises(ValueError, match="r="):
        pages.post_ln_sum_norm(0)


def test_sgd_matching_lr_inverts_the_quadratic_rule():
    # change = a·η²: the SGD rate giving Adam's change c_A is √(c_A / a)
    a, c_adam = 7.0, 0.28
    eta = pages.sgd_matching_lr(1e-3, a * 1e-6, c_adam)
    assert a * eta ** 2 == pytest.approx(c_adam)
    with pytest.raises(ValueError, match="eta0"):
        pages.sgd_matching_lr(0.0, 1.0, 1.0)


def test_ln_exercises_answer_with_the_formulas():
    out = pages.ln_exercises()
    assert out["ln_ex1_centred"] == pytest.approx(1.0, rel=1e-8)
    assert out["ln_ex1_shifted"] == pytest.approx(1.0, rel=1e-6)
    assert out["ln_ex1_plain_bound"] < 0.02  # Lemma 3's plain norm is far off
    assert out["ln_ex2_rms_centred"] == pytest.approx(1.0, rel=1e-8)
    assert out["ln_ex2_rms_shifted"] == pytest.approx(out["ln_ex2_rms_formula"], rel=1e-6)
    assert out["ln_ex3_factor"] - 1e-9 <= out["ln_ex3_ratio"] <= 1 + 1e-9


def test_count_layer_norms_counts_modules():
    m = torch.nn.Sequential(torch.nn.LayerNorm(4), torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    assert pages.count_layer_norms(m) == 2


def test_figures_draw_and_name_their_panels():
    profiles = {k: {"act_rms": np.ones(4), "grad_rms": np.ones(3)} for k in pages.SIGNAL_NAMES}
    fig = pages.signal_figure(P, profiles)
    assert len(fig.axes) == 2 and fig.axes[0].get_title() == "forward: activations"
    fig = pages.map_figure(P)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "problems" in texts and "warmup" in texts
    assert not re.search(r"\b[A-Z]{2}-\d+\b", texts), "no claim ids on the map"


def test_map_draws_fixes_as_a_different_kind_of_edge():
    kinds = {k for *_, k in pages.MAP_EDGES}
    assert kinds == {"cause", "fix", "ruled out"}
    styles = [tuple(pages.EDGE_STYLE[k].values()) for k in kinds]
    assert len(set(styles)) == 3, "each kind of edge is drawn its own way"
    assert all(words for _, _, words, _ in pages.MAP_EDGES), "every arrow is labelled"
    assert all(kind == "fix" for a, _, _, kind in pages.MAP_EDGES
               if pages.MAP_NODES[a][3] == "fix")


def test_optimiser_colours_differ_from_the_placements():
    from tfx.book import plot

    assert set(pages.OPTIMISER_COLORS.values()).isdisjoint({plot.color("post"), plot.color("pre")})


def test_glue_profiles_table_has_one_row_per_placement():
    stats = {pl: {"spearman": 0.5, "last_over_first": 2.0} for pl in ("post", "pre")}
    iv = {pl: {"exponent": 0.1, "low": 0.0, "high": 0.2} for pl in ("post", "pre")}
    table = pages.glue_profiles(stats, iv, {"post": "rises", "pre": "falls"}, 6)
    assert len(table.splitlines()) == 4 and "Post-LN | rises" in table


def test_glue_last_grad_reads_the_interval():
    depths = [2, 4, 8]
    noise = np.random.default_rng(0).normal(1.0, 0.02, (3, 3))  # (depths, seeds)
    grad = {"post": [np.ones((3, n)) * noise[i][:, None] for i, n in enumerate(depths)],
            "pre": [np.ones((3, n)) * noise[i][:, None] / math.sqrt(n)
                    for i, n in enumerate(depths)]}
    expo = {pl: fit.exponent_interval(depths, np.array([g[:, -1] for g in grad[pl]]))
            for pl in grad}
    halves = pages.glue_last_grad(depths, grad, expo, 16, 3, 1.0, 1.0)
    assert halves == {"post": True, "pre": True}


def test_gradient_exercises_measure_the_wider_ffn():
    from tfx.runs.data import synthetic

    task = synthetic("reverse", length=P.seq_len)
    out = pages.gradient_exercises(P, task, seeds=2)
    assert out["ln3_ex3_r1_pred"] == pytest.approx(1.5)
    assert out["ln3_ex3_r8"] < out["ln3_ex3_r1"]
    assert out["ln4_ex2_lo"] <= out["ln4_ex2_k"] <= out["ln4_ex2_hi"]


def test_source_of_drops_the_docstring_and_comments():
    def f(x):
        """A docstring
        on two lines."""
        y = x + 1  # a comment
        return y

    assert pages.source_of(f) == "def f(x):\n    y = x + 1\n    return y"


def test_anatomy_exercises_count_pre_ln_final_norms():
    from types import SimpleNamespace

    from tfx.nn.config import ModelConfig
    from tfx.runs.data import synthetic

    task = synthetic("reverse", length=P.seq_len)
    cfg = ModelConfig.for_task(task, n_enc=2, n_dec=2, placement="post")
    warm = [SimpleNamespace(label="w", config=cfg, history=None)]
    from unittest import mock

    summary = {"w": {"verdicts": ["learned"], "losses": [0.1]}}
    with mock.patch.object(pages.sweep, "summary", return_value=summary):
        out = pages.glue_anatomy_exercises(warm, [SimpleNamespace(label="p", config=cfg)],
                                           {"post": "p"}, 2)
    assert out["an-ex3-subs"] == 10
    assert (out["an-ex3-post-norms"], out["an-ex3-pre-norms"]) == (10, 12)


def test_adams_smallest_step_names_the_matrix_whose_gradient_is_nearest_eps():
    adam = {"update_rms": {"a.q_proj.weight": 4.2e-4, "a.fc1.weight": 1e-3},
            "grad_rms": {"a.q_proj.weight": 2e-8, "a.fc1.weight": 1e-2}}
    out = pages.adam_smallest_step(adam, 1e-3)
    assert out["wh-adam-min-frac"] == pytest.approx(0.42) and out["wh-adam-min-name"] == "a.q_proj"
    assert out["wh-adam-min-grad"] == 2e-8 and out["wh-adam-eps"] > 0


def test_post_ln_sums_read_per_kind_and_give_the_gains_of_the_extremes(monkeypatch):
    fake = lambda name, value, display=False: value
    for module in (pages, notebook):  # glue_all glues through tfx.book.notebook
        monkeypatch.setattr(module, "glue", fake)
    sums = {"ffn": np.array([1.3, 1.4]), "self-attn": np.array([1.9, 2.0]), "cross-attn": np.array([2.0, 2.25])}
    out = pages.glue_post_ln_sums(sums, 6)
    assert out["ln_post_ffn"] == pytest.approx(1.35) and out["ln_post_cross"] == pytest.approx(2.125)
    assert out["ln_post_gain_lo"] == pytest.approx(1 / 1.5) and out["ln_post_gain_hi"] == pytest.approx(1 / 1.3 ** 0.5)


def test_ln4_finite_depth_exponent_and_its_fresh_seed_verdict(monkeypatch):
    """The embedding's offset e keeps the Pre-LN exponent above −1/2 at finite depth; with e = 0
    it is −1/2 exactly. The revised criterion holds when that exponent is inside the fresh
    seeds' interval, and not otherwise."""
    seen = {}
    fake = lambda name, value, display=False: seen.setdefault(name, value)
    for module in (pages, notebook):  # glue_all glues through tfx.book.notebook
        monkeypatch.setattr(module, "glue", fake)
    assert pages.finite_depth_exponent([2, 6, 24], 0.0, 1.0) == pytest.approx(-0.5)
    k = pages.finite_depth_exponent([2, 6, 12, 18, 24], 1.5, 1.0)
    assert -0.5 < k < -0.3
    assert pages.glue_ln4_revised({"exponent": -0.35, "low": -0.42, "high": -0.28}, k, range(6, 12))
    assert seen["ln4_fresh_verdict"] == "inside" and seen["ln4_fresh_seeds"] == "6–11"
    seen.clear()
    assert not pages.glue_ln4_revised({"exponent": -0.5, "low": -0.55, "high": -0.45}, k, range(6, 12))
    assert seen["ln4_fresh_verdict"] == "outside"


def test_anatomy_headline_says_what_the_one_run_shows_and_nothing_typed_against_it(monkeypatch):
    """Chapter 2's caption comes from the run's outcomes: the usual ordering only when Post-LN
    sits near chance and both others learned; otherwise each wiring's outcome, as measured (on
    another CPU a chaotic run can end otherwise)."""
    from types import SimpleNamespace
    from unittest import mock

    glued = {}
    fake = lambda name, value, display=False: glued.__setitem__(name, value)
    for module in (pages, notebook):  # glue_all glues through tfx.book.notebook
        monkeypatch.setattr(module, "glue", fake)

    def run(post_verdict, post_losses):
        hist = SimpleNamespace(loss=np.array(post_losses), chance_loss=3.2, step=list(range(1, len(post_losses) + 1)))
        good = SimpleNamespace(loss=np.array([3.2, 1.0, 0.5, 0.2, 0.1, 0.05]), chance_loss=3.2, step=list(range(1, 7)))
        summ = {lab: {"verdicts": [v], "losses": [post_losses[-1] if lab == "P" else 0.05], "wall_time": 1.0}
                for lab, v in (("P", post_verdict), ("R", "learned"), ("A", "learned"))}
        recs = [SimpleNamespace(history=hist)]
        with mock.patch.object(pages.sweep, "summary", return_value=summ), \
                mock.patch.object(pages.sweep, "histories", return_value={"P": hist, "R": good, "A": good}):
            pages.glue_anatomy_run(recs, {"post": "P", "pre": "R", "admin": "A"}, 6, 3e-3, 6, "reverse")
        return dict(glued)

    stuck = run("did not learn", [3.3, 3.4, 3.45, 3.42, 3.44, 3.45])
    assert stuck["an-headline"] == "Post-LN stalls near the chance loss while Pre-LN and Admin learn"
    assert stuck["an-post-finite"].startswith("no:") and "came within 10 % of chance at step" in stuck["an-post-near-chance"]
    learned = run("learned", [3.3, 2.0, 1.0, 0.5, 0.2, 0.1])
    assert learned["an-headline"] == "Post-LN learned; Pre-LN learned; Admin learned"
    assert learned["an-post-near-chance"].startswith("came within 10 % of chance at step")
    far = run("did not learn", [5.0, 5.5, 6.0, 6.0, 6.5, 7.0])  # stuck, but far above chance
    assert far["an-headline"] == "Post-LN did not learn; Pre-LN learned; Admin learned"
    assert far["an-post-near-chance"] == "never came within 10 % of chance"
    blown = run("diverged", [3.3, 5.0, float("nan"), float("nan"), float("nan"), float("nan")])
    assert blown["an-headline"].startswith("Post-LN diverged;") and blown["an-post-finite"].startswith("yes:")
