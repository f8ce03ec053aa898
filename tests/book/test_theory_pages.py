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
from tfx.theory import fit, gradients  # noqa: E402

P = get_profile("quick")


def test_md_table_renders_a_header_a_rule_and_one_line_per_row():
    t = pages.md_table(("a", "b"), [(1, 2), (3, 4)])
    assert t.splitlines() == ["| a | b |", "|---|---|", "| 1 | 2 |", "| 3 | 4 |"]


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

    assert set(plot.OPTIMISERS_BESIDE_SCHEMES.values()).isdisjoint({plot.color("post"), plot.color("pre")})


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
        out = pages.anatomy_exercises(warm, [SimpleNamespace(label="p", config=cfg)], {"post": "p"})
    assert out["ex3-subs"] == 10 and out["ex1-status"] == "learned" and out["ex2-kmin"] == 26
    assert (out["ex3-post-norms"], out["ex3-pre-norms"]) == (10, 12)


def test_first_step_values_read_the_spreads_and_adams_smallest_step():
    adam = {"update_rms": {"a.q_proj.weight": 4.2e-4, "a.fc1.weight": 1e-3},
            "grad_rms": {"a.q_proj.weight": 2e-8, "a.fc1.weight": 1e-2}}
    steps = {pl: [{"output_norm": 4.0, "output_change": c}] for pl, c in (("post", 2.0), ("pre", 1.0))}
    out = pages.first_step_values(steps, adam, [1e-4, 1e-3, 1e-2], lambda pl, lr: lr, 1e-2, 10, 12, 1e-3)
    assert out["adam-min-frac"] == pytest.approx(0.42) and out["adam-min-name"] == "a.q_proj"
    assert out["adam-min-grad"] == 2e-8 and out["adam-eps"] > 0
    assert out["change-warm"] == pytest.approx(1e-3) and out["post-over-pre-small"] == 2.0
    assert out["grad-spread"] == pytest.approx(5e5) and out["n-mats"] == 2


def test_ln4_revised_verdict_on_fresh_seeds(monkeypatch):
    """The revised criterion holds when the finite-depth exponent is inside the fresh seeds'
    interval, and not otherwise."""
    seen = {}
    fake = lambda name, value, display=False: seen.setdefault(name, value)
    monkeypatch.setattr(notebook, "glue", fake)  # glue_all glues through tfx.book.notebook
    k = gradients.finite_depth_exponent([2, 6, 12, 18, 24], 1.5, 1.0)
    assert pages.glue_ln4_revised({"exponent": -0.35, "low": -0.42, "high": -0.28}, k, range(6, 12))
    assert seen["ln4_fresh_verdict"] == "inside" and seen["ln4_fresh_seeds"] == "6–11"
    seen.clear()
    assert not pages.glue_ln4_revised({"exponent": -0.5, "low": -0.55, "high": -0.45}, k, range(6, 12))
    assert seen["ln4_fresh_verdict"] == "outside"


def test_anatomy_run_reads_the_post_ln_run_as_measured(monkeypatch):
    """Chapter 2's words about its one Post-LN run come from that run: whether it came near
    chance, whether every loss was finite (on another CPU a chaotic run can end otherwise)."""
    from types import SimpleNamespace
    from unittest import mock

    glued = {}
    fake = lambda name, value, display=False: glued.__setitem__(name, value)
    monkeypatch.setattr(notebook, "glue", fake)  # glue_all glues through tfx.book.notebook

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
    assert stuck["an-post-status"] == "did not learn" and stuck["an-admin-vs-pre"] == "above"
    assert stuck["an-post-finite"].startswith("no:") and "came within 10 % of chance at step" in stuck["an-post-near-chance"]
    learned = run("learned", [3.3, 2.0, 1.0, 0.5, 0.2, 0.1])
    assert learned["an-post-near-chance"].startswith("came within 10 % of chance at step")
    far = run("did not learn", [5.0, 5.5, 6.0, 6.0, 6.5, 7.0])  # stuck, but far above chance
    assert far["an-post-near-chance"] == "never came within 10 % of chance"
    blown = run("diverged", [3.3, 5.0, float("nan"), float("nan"), float("nan"), float("nan")])
    assert blown["an-post-status"] == "diverged" and blown["an-post-finite"].startswith("yes:")
