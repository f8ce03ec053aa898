"""tfx.runs.results helpers the training chapters use: load_or_run, select, table, provenance;
and tfx.runs.sweep.first_step_below."""
from __future__ import annotations

import dataclasses
import math

from tfx.runs import results, sweep
from tfx.runs.sweep import first_step_below


def test_load_or_run_runs_a_missing_cpu_profile_and_never_full(tmp_path):
    assert sweep.load_or_run("warmup-fixes", "full", results_dir=tmp_path) == []  # full: a GPU's job
    assert sweep.load_or_run("warmup-fixes", "quick", run_missing=False, results_dir=tmp_path) == []
    recs = sweep.load_or_run("warmup-fixes", "quick", results_dir=tmp_path)
    assert [r.point["fix"] for r in recs] == ["Pre-LN, Adam", "Post-LN, RAdam", "Pre-LN, Adam, warmup",
                                              "Post-LN, Adam, warmup"]
    assert [f.name.endswith(results.SEALED) for f in results.files_for(tmp_path, "warmup-fixes", "quick")] == [True]
    again = sweep.load_or_run("warmup-fixes", "quick", results_dir=tmp_path)  # read back, not rerun
    assert [r.key for r in again] == [r.key for r in recs]

    assert results.select(recs, fix="Post-LN, RAdam")[0].train_config.optimizer == "radam"
    assert results.select(recs, fix="nothing") == []
    table = results.table(recs, rows="fix", cols="fix").splitlines()
    assert table[0] == "| fix | Pre-LN, Adam | Post-LN, RAdam | Pre-LN, Adam, warmup | Post-LN, Adam, warmup |"
    assert len(table) == 6
    assert table[2].count("—") == 3  # a row has no run in the other rows' columns
    pre = results.select(recs, fix="Pre-LN, Adam")[0]
    assert f"{pre.history.eval_loss[-1]:.2f}" in table[2]  # by default the held-out loss
    by_train = results.table(recs, rows="fix", cols="fix", fmt="{:.4f}", value=lambda r: r.final_loss).splitlines()
    assert f"{pre.final_loss:.4f}" in by_train[2] and by_train[2] != table[2]
    outcomes = ("learned", "still learning", "did not learn")
    marked = results.table([dataclasses.replace(pre, status=s) for s in outcomes], rows="fix", cols="fix")
    loss = f"{pre.history.eval_loss[-1]:.2f}"
    assert marked.splitlines()[2] == f"| Pre-LN, Adam | {loss} / {loss} (still learning) / {loss} (did not learn) |"
    one_axis = results.table(recs, rows="fix", cols=None).splitlines()  # a sweep of one axis: one column
    assert one_axis[0] == "| fix | every seed |" and len(one_axis) == 6 and "—" not in "".join(one_axis)
    alike = results.table([dataclasses.replace(pre, status="still learning")] * 3, rows="fix", cols="fix")
    assert alike.splitlines()[2] == f"| Pre-LN, Adam | {loss} / {loss} / {loss} (all 3: still learning) |"
    dotted = [dataclasses.replace(pre, point={"train.warmup": f"warmup={w}"}) for w in (0, 50)]
    assert results.table(dotted, rows="train.warmup", cols=None).splitlines()[0] == "| warmup | every seed |"
    prov = results.provenance(recs)
    assert prov.startswith("device cpu · code ") and recs[0].finished_at[:10] in prov
    gpu = [dataclasses.replace(r, device="cuda", device_name="NVIDIA H200") for r in recs]
    assert results.provenance(gpu).startswith("device cuda (NVIDIA H200) · code ")  # a GPU result names its card


def test_first_step_below():
    steps, values = [10, 20, 30, 40], [3.0, math.nan, 1.0, 0.5]
    assert first_step_below(steps, values, 1.0) == 30
    assert first_step_below(steps, values, 0.1) is None
    assert first_step_below(steps, values, 5.0) == 10
