"""The GPU half's plumbing on a CPU: the plan command's estimate, its budget stop, fixtures."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfx.runs import cost, results, sweep
from tfx.runs.experiment import Experiment

ROOT = Path(__file__).resolve().parents[2]


def test_no_run_starts_that_cannot_finish_before_the_deadline(tmp_path, capsys):
    exp = Experiment.load("warmup-fixes")
    todo = sweep.plan(exp, "quick", tmp_path)["todo"]
    slow = {sweep._size_key(j): 3600.0 for j in todo}  # an hour a step: nothing fits in a minute
    got = sweep.run_experiment(exp, "quick", tmp_path, progress=False, deadline=time.monotonic() + 60,
                               step_seconds=slow)
    assert got == [] and not (tmp_path / "warmup-fixes.quick.jsonl").exists()
    assert f"{len(todo)} run(s) of warmup-fixes would not finish in time" in capsys.readouterr().err
    fast = {k: 1e-6 for k in slow}
    got = sweep.run_experiment(exp, "quick", tmp_path, progress=False, deadline=time.monotonic() + 60,
                               step_seconds=fast)
    assert [r.label for r in got] == [j["run"].label for j in todo]  # the next call fills in the rest
    assert sweep.plan(exp, "quick", tmp_path)["todo"] == []


def test_the_estimate_is_steps_times_the_measured_step_time(tmp_path):
    job = sweep.plan(Experiment.load("warmup-fixes"), "quick", tmp_path)["todo"][0]
    s = sweep.measure_step_seconds(job)
    assert 0 < s < 5
    est = sweep.estimate_seconds(job, {sweep._size_key(job): s})
    extra = cost.eval_step_equivalents(job["run"].model, job["run"].train, sweep._batch_shapes(sweep._task(job), 8)[1],
                                       translation=False)
    assert est == cost.run_seconds(job["run"].train.steps, s, extra) == s * (1.1 * job["run"].train.steps + extra) + 3.0
    assert sweep.estimate_seconds(job, {sweep._size_key(job): 2 * s}) > est  # the measured time is the one used


def test_the_plan_command_prints_its_plan_and_stops_at_the_budget(tmp_path):
    cmd = [sys.executable, "-m", "tfx.sweep", "experiments/warmup-fixes", "experiments/warmup", "--profile", "quick",
           "--results", str(tmp_path), "--budget-minutes", "0.001"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "plan (profile quick" in r.stderr and "warmup-fixes" in r.stderr and "estimated" in r.stderr
    assert "run(s) left: run the same command again" in r.stderr  # 0.06 s: no run fits


def test_fixture_runs_are_tiny_and_labelled(tmp_path):
    recs = sweep.run_experiment("warmup-fixes", "full", tmp_path, progress=False, fixture=True)
    assert recs and all(r.fixture and r.config.d_model == sweep.FIXTURE_MODEL["d_model"] for r in recs)
    assert all(r.history.steps_done == sweep.FIXTURE_TRAIN["steps"] for r in recs)
    assert results.provenance(recs).startswith("FIXTURES")
    assert not results.provenance(results.load("warmup-fixes", "book")).startswith("FIXTURES")


def test_the_budget_also_holds_with_several_jobs(tmp_path, capsys):
    exp = Experiment.load("warmup-fixes")
    todo = sweep.plan(exp, "quick", tmp_path)["todo"]
    slow = {sweep._size_key(j): 3600.0 for j in todo}
    got = sweep.run_experiment(exp, "quick", tmp_path, jobs=2, progress=False, deadline=time.monotonic() + 60,
                               step_seconds=slow)
    assert got == [] and f"{len(todo)} run(s) of warmup-fixes would not finish in time" in capsys.readouterr().err


def test_the_step_time_leaves_out_the_device_start(monkeypatch, tmp_path):
    """The first run in a process pays for starting the device (on the H200 bursts it swamped
    the difference of a 2-step and a 6-step run, so the measure clamped near zero and the plan
    was about 7× optimistic): it is thrown away, and what remains is the steady step."""
    job = sweep.plan(Experiment.load("warmup-fixes"), "quick", tmp_path)["todo"][0]
    clock = {"t": 0.0, "runs": 0}

    def fake_train(model, task, tc):  # 30 s to start the device once, then 0.05 s a step + 1 s of evaluation
        clock["t"] += (30.0 if clock["runs"] == 0 else 0.0) + 1.0 + 0.05 * tc.steps
        clock["runs"] += 1

    monkeypatch.setattr(sweep, "train", fake_train)
    monkeypatch.setattr(sweep, "build_for_run", lambda *a, **k: None)
    monkeypatch.setattr(sweep.time, "perf_counter", lambda: clock["t"])
    assert sweep.measure_step_seconds(job) == pytest.approx(0.05)
