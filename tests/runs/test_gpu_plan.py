"""The GPU half's plan on a CPU: the H100 cost model (tfx.runs.cost), `make gpu-plan` and its
total against the budget, and the full profiles it plans (sized to it, claim cells at ≥ 5 seeds)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tfx.nn.config import ModelConfig, TrainConfig
from tfx.nn.model import build_model
from tfx.runs import bench, cost, sweep
from tfx.runs.experiment import Experiment

ROOT = Path(__file__).resolve().parents[2]
SIX = dict(d_model=512, n_heads=8, d_ffn=2048, n_enc=6, n_dec=6)
SHAPES = dict(batch=64, src_len=64, tgt_len=64, vocab=8000)


def test_flops_per_step_is_what_torch_counts():
    """The cost model's FLOPs of a small encoder–decoder and LM step equal torch's flop counter's."""
    torch.manual_seed(0)
    for fields, src_len in ((dict(d_model=16, n_heads=2, d_ffn=48, n_enc=2, n_dec=1), 7),
                            (dict(d_model=16, n_heads=2, d_ffn=48, n_enc=0, n_dec=3), 0)):
        cfg = ModelConfig(src_vocab=50, tgt_vocab=50, max_len=12, **fields)
        model = build_model(cfg)
        src = torch.randint(4, 50, (3, src_len)) if src_len else None
        tgt = torch.randint(4, 50, (3, 9))
        counted = bench.step_flops(lambda: model.loss_and_accuracy(src, tgt, 0.0, accuracy=False, log_z=False)[0])
        # the model's inputs are the target shifted by one: 8 positions predicted
        assert cost.flops_per_step(fields, 3, src_len, 8, 50) == pytest.approx(counted, rel=1e-9)


def test_a_step_is_launch_bound_at_the_books_sizes_and_flop_bound_when_large():
    base = cost.bare_step_seconds(SIX, **SHAPES)
    assert base == pytest.approx(cost.LAUNCH_BASE_S + 30 * cost.LAUNCH_PER_SUBLAYER_S)
    assert cost.bare_step_seconds({**SIX, "d_model": 256, "d_ffn": 1024}, **SHAPES) == base  # width: no cheaper
    assert cost.bare_step_seconds({**SIX, "n_enc": 18, "n_dec": 18}, **SHAPES) > 2 * base  # depth: dearer
    big = {**SIX, "d_model": 4096, "d_ffn": 16384}
    assert cost.bare_step_seconds(big, **SHAPES) == cost.flops_per_step(big, 64, 64, 64, 8000) / cost.THROUGHPUT
    assert cost.sublayers({"n_enc": 0, "n_dec": 12}) == 24 and cost.sublayers({"n_enc": 6, "n_dec": 6}) == 30


@pytest.mark.parametrize("option, value", [("record_updates", True), ("probes", True), ("eval_every", 10),
                                           ("eval_batches", 8), ("bleu_sentences", 100), ("steps", 400)])
def test_every_training_option_the_model_reads_changes_the_estimate(option, value):
    """Each TrainConfig field the cost model reads makes a run dearer when it asks for more."""
    base = TrainConfig(steps=200, eval_every=0, eval_batches=2, bleu_sentences=0, record_updates=False, probes=False)
    other = base.replace(**{option: value})

    def run_s(tc):
        s = cost.step_seconds(SIX, tc, **SHAPES)
        return cost.run_seconds(tc.steps, s, cost.eval_step_equivalents(SIX, tc, 64, translation=True))

    assert run_s(other) > run_s(base)


def test_runs_side_by_side_each_take_longer_but_less_than_in_turn():
    assert cost.jobs_slowdown(1) == 1.0
    assert 1.5 <= cost.jobs_slowdown(8) <= 2.0
    assert cost.run_seconds(100, 0.1, 0, jobs=8) > cost.run_seconds(100, 0.1, 0)
    assert cost.run_seconds(100, 0.1, 0, jobs=8) < 8 * cost.run_seconds(100, 0.1, 0)
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="jobs="):
            cost.jobs_slowdown(bad)


def test_bad_model_fields_name_the_field():
    with pytest.raises(ValueError, match="n_dec"):
        cost.sublayers({"n_enc": 2, "n_dec": -1})
    with pytest.raises(ValueError, match="vocab"):
        cost.flops_per_step(SIX, 64, 64, 64, 0)


def test_the_makefiles_gpu_plan_is_the_cost_modules():
    text = (ROOT / "Makefile").read_text()
    block = re.search(r"^GPU_PLAN := (.*?)\n(?=\S)", text, re.S | re.M).group(1)
    assert tuple(p.removeprefix("experiments/") for p in block.replace("\\", " ").split()) == cost.GPU_PLAN


def _plan_cmd(results_dir, *extra):
    return [sys.executable, "-m", "tfx.sweep", *(f"experiments/{n}" for n in cost.GPU_PLAN), "--profile", "full",
            "--results", str(results_dir), *extra]


def _gpu_plan(tmp_path, jobs):
    # the bench is done (results/gpu-bench.txt): a burst reading these results skips it, and so does the plan
    (tmp_path / "gpu-bench.txt").write_bytes((ROOT / "results" / "gpu-bench.txt").read_bytes())
    r = subprocess.run(_plan_cmd(tmp_path, "--plan", "--jobs", str(jobs)), cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_gpu_plan_lists_the_core_first_then_the_rest_within_its_budget_and_trains_nothing(tmp_path):
    out = _gpu_plan(tmp_path, cost.DEFAULT_JOBS)
    for name in cost.GPU_PLAN:  # each experiment, with its runs
        assert re.search(rf"^  {re.escape(name)} .* runs to do", out, re.M), name
    assert out.index("the core (ad3-deep;") < out.index("  ad3-deep (AD-3)") < out.index("the rest, in the order") \
        < out.index("  lr-sensitivity")
    assert "5 seeds ×  2000 steps  18+18, d 512" in out and "5 seeds ×  2000 steps  6+6, d 512" in out
    rest = float(re.search(r"^the rest ≈ ([\d.]+) H100-minutes more", out, re.M).group(1))
    assert 0 < rest <= cost.REST_BUDGET_MINUTES
    assert out.rstrip().splitlines()[-1].startswith("total ≈ ")  # it ends with the core's total
    assert "the bench 0.0 min (done: gpu-bench.txt)" in out
    assert [p.name for p in tmp_path.iterdir()] == ["gpu-bench.txt"]  # no record, no checkpoint
    # with one job at a time the same runs take longer: the --jobs option counts
    one = _gpu_plan(tmp_path, 1)
    assert _core_total(one) > _core_total(out)


def _core_total(out: str) -> float:
    return float(re.search(r"^total ≈ ([\d.]+) H100-minutes$", out, re.M).group(1))


@pytest.mark.xfail(strict=True, reason=(
    "Issue 42: by the cost model of single runs, 8 at once (fitted on the H200 bursts), the core is "
    "≈ 63 H100-minutes. It fits 25 only if ensembles (python -m tfx.sweep --ensemble 5: a grid point's "
    "5 seeds as one program) train ≥ 2.5× the runs per GPU-minute; the plan is re-sized from that "
    "throughput once a GPU has measured it (python -m tfx.bench --ensemble), never from a guess."))
def test_the_core_fits_its_budget(tmp_path):
    assert _core_total(_gpu_plan(tmp_path, cost.DEFAULT_JOBS)) <= cost.CORE_BUDGET_MINUTES


def test_plan_refuses_a_budget_and_jobs_below_one(tmp_path):
    for extra, match in ((("--plan", "--budget-minutes", "9"), "--plan trains nothing"), (("--plan", "--jobs", "0"),
                                                                                           "--jobs=0")):
        r = subprocess.run([sys.executable, "-m", "tfx.sweep", "experiments/warmup-fixes", "--profile", "full",
                            "--results", str(tmp_path), *extra], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and match in r.stderr, r.stderr


@pytest.mark.parametrize("name", cost.GPU_PLAN)
def test_the_planned_full_profiles_keep_five_seeds_and_no_checkpoints(name):
    """A lent GPU starts bare and gives back only its output folder: a checkpoint never outlives
    the burst, so the full profiles write none; every cell of the plan has ≥ 5 seeds."""
    exp = Experiment.load(ROOT / "experiments" / name)
    runs = exp.runs("full")
    assert len(exp.seeds("full")) >= 5
    assert all(exp.checkpoint_every("full", r.train.steps) > r.train.steps for r in runs)
    assert not any(r.train.record_updates for r in runs)  # the ‖Δθ‖ record costs ~30 % of a GPU step
    per_label = {}
    for r in runs:
        per_label[r.label] = per_label.get(r.label, 0) + 1
    assert min(per_label.values()) >= 5


def test_one_measured_step_time_serves_every_placement_of_a_size(tmp_path):
    todo = sweep.plan(Experiment.load("lr-sensitivity"), "full", tmp_path)["todo"]
    keys = {sweep._size_key(j) for j in todo}
    assert len(keys) == 1 < len({j["run"].label for j in todo})  # one size: measured once, not per label
