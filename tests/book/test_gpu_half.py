"""tfx.book.gpu_half: a chapter's GPU half (the registered comparisons read on the GPU records,
their size and card, the note on how many planned runs are in)."""
from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import pytest

matplotlib.use("Agg")

from test_training_pages import P, UP, _comparisons, _gpu_grid  # noqa: E402

from tfx.book import evidence, gpu_half, notebook  # noqa: E402
from tfx.runs import results  # noqa: E402


def test_gpu_section_says_the_gpu_runs_are_not_in_yet_and_shows_nothing(monkeypatch):
    glued = {}
    fake = lambda k, v, **_: glued.setdefault(k, v)
    for module in (gpu_half, notebook):  # glue_all glues through tfx.book.notebook
        monkeypatch.setattr(module, "glue", fake)
    assert gpu_half.section([], rows="fix", cols="lr", key="lg-gpu-note") is None
    assert "not in yet" in glued["lg-gpu-note"]


def test_gpu_section_says_how_many_of_the_planned_runs_are_in(monkeypatch):
    """The LM's GPU sweep, part-run (8 of its runs, as after the first H200 burst of 2026-11-30):
    the note counts them against the runs its experiment file plans; all of them in, it says
    nothing of the kind."""
    from tfx.runs.experiment import Experiment

    glued = {}
    fake = lambda k, v, **_: glued.__setitem__(k, v)
    for module in (gpu_half, notebook):  # glue_all glues through tfx.book.notebook
        monkeypatch.setattr(module, "glue", fake)
    recs = results.load("lm", "full")
    if not recs:
        pytest.skip("no GPU records of experiments/lm.toml")
    planned = len(Experiment.load("lm").runs("full"))
    gpu_half.section(recs[:8], rows="placement", cols="lr", key="lm-gpu-note")
    assert glued["lm-gpu-note"].endswith(f", 8 of its {planned} runs so far (the rest wait for a GPU):")
    gpu_half.section(recs[:8] * (planned // 8 + 1), rows="placement", cols="lr", key="lm-gpu-note")
    assert "so far" not in glued["lm-gpu-note"]


def test_gpu_edges_name_each_side_whose_best_rate_is_at_the_grid_edge(monkeypatch):
    own, _ = _comparisons(monkeypatch)
    gpu = {"gpu": _gpu_grid({"A": 1e-4, "B": 1e-3}, {"A": 2.0, "B": 1.0})}
    items = evidence.gpu_effects(gpu, claims=("AD-3",))
    assert gpu_half.edges(gpu, items) == ["A · 6: best at 1e-4, the lowest rate tried"]
    high = {"gpu": _gpu_grid({"A": 1e-3, "B": 1e-1}, {"A": 2.0, "B": 1.0})}
    assert gpu_half.edges(high, evidence.gpu_effects(high, claims=("AD-3",))) == [
        "B · 6: best at 1e-2, the highest rate tried"]
    bracketed = {"gpu": _gpu_grid({"A": 1e-3, "B": 1e-3}, {"A": 2.0, "B": 1.0})}
    assert gpu_half.edges(bracketed, evidence.gpu_effects(bracketed, claims=("AD-3",))) == []


def test_gpu_verdicts_markdown_puts_the_cpu_verdict_beside_the_gpu_one(monkeypatch):
    _comparisons(monkeypatch)
    gpu = {"gpu": _gpu_grid({"A": 1e-4, "B": 1e-3}, {"A": 2.0, "B": 1.0})}
    cpu = {"gpu": _gpu_grid({"A": 1e-3, "B": 1e-3}, {"A": 1.0, "B": 2.0})}
    items = evidence.gpu_effects(gpu, claims=("AD-3",))
    text = gpu_half.verdicts_markdown(gpu, items, cpu).splitlines()
    assert text[0].startswith("- **AD-3**, A at its best rate ends higher than B at its own. GPU: +1.00 nats")
    assert "**reproduces**" in text[0] and text[0].endswith("CPU: -1.00 nats (95 % CI -1.00 to -1.00; "
                                                            "0 of 5 seeds higher), reversed.")
    assert text[1].endswith("A · 6: best at 1e-4, the lowest rate tried.")
    assert "CPU" not in gpu_half.verdicts_markdown(gpu, items)
    assert gpu_half.verdicts_markdown(gpu, []).startswith("No registered comparison")


def test_gpu_scale_names_the_layers_width_precision_and_card():
    r = SimpleNamespace(config=SimpleNamespace(n_enc=6, n_dec=6, d_model=512), amp_dtype="bfloat16",
                        device="cuda", device_name="NVIDIA H200")
    assert gpu_half.scale([r]) == "6+6 layers, d 512, bfloat16 on NVIDIA H200"
    lm = SimpleNamespace(config=SimpleNamespace(n_enc=8, n_dec=0, d_model=256), amp_dtype=None,
                         device="cuda", device_name="")
    assert gpu_half.scale([lm]) == "8 layers, d 256, float32 on cuda"
    deep = SimpleNamespace(config=SimpleNamespace(n_enc=18, n_dec=18, d_model=512), amp_dtype="bfloat16",
                           device="cuda", device_name="NVIDIA H200")
    # every depth the records hold, not the first record's alone
    assert gpu_half.scale([deep, r, r]) == "6+6 and 18+18 layers, d 512, bfloat16 on NVIDIA H200"


def test_a_gpu_figure_is_stamped_with_its_records_profile_card_and_task_not_the_pages():
    from tfx.book import evidence

    c = evidence.Comparison("AD-3", "A ends higher than B", "gpu", "arch", "A", "B", "higher")
    r = SimpleNamespace(config=SimpleNamespace(n_enc=6, n_dec=6, d_model=512), amp_dtype="bfloat16",
                        device="cuda", device_name="NVIDIA H200", profile="full", task="big-corpus",
                        experiment="gpu")
    stamp = gpu_half.records_profile(P, [r])
    assert str(stamp) == "profile: full · device: NVIDIA H200 · task: big-corpus"
    fig = gpu_half.effects_figure(P, [(c, UP)], [r])
    texts = [t.get_text() for t in fig.texts]
    assert str(stamp) in texts and str(P) not in texts
    assert fig.axes[0].get_title().startswith("6+6 layers, d 512, bfloat16 on NVIDIA H200")
    empty = gpu_half.effects_figure(P, [], [])
    assert "not yet run on a GPU" in [t.get_text() for t in empty.axes[0].texts]


def test_gpu_parts_judge_the_gpu_records_half_by_half():
    """The committed GPU records (H200, 6+6, 250 steps): AD-3's failure comparisons reproduce as
    effects, but Post-LN's runs there are still learning, so the half reads 'behind at this
    budget' and the failure itself is not shown (not resolved, named); no claim without GPU
    comparisons reads anything."""
    from tfx.book import claims, synthesis
    from tfx.runs import results

    items = synthesis.gpu_verdicts()
    if not items:
        pytest.skip("no GPU records committed")
    gpu = {c.experiment: results.load(c.experiment, "full") for c, _ in items}
    line = gpu_half.parts(gpu, items, "AD-3")
    assert "behind at this budget: reproduces" in line
    assert line.endswith(f"failure: not resolved at this scale ({claims.UNSHOWN_FAILURE})")
    assert gpu_half.parts(gpu, items, "TF-2") == "none can be read yet"
