"""File-backed sweeps: experiment files, results files, skip and resume, jobs and shards.

The kill test runs a real sweep in a subprocess, SIGKILLs it in the middle of a run,
reruns it, and checks the records equal those of a sweep that was never interrupted."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tfx.runs import cost, results, sweep
from tfx.runs.outcome import OUTCOMES
from tfx.runs.experiment import Experiment
from tiny_sweep import ROOT, TINY, comparable as _comparable, sweep_env as _env, write_experiment as _write


pytestmark = pytest.mark.long_file  # a minute or more: collected first (pytest.ini)


def _sweep_cmd(exp_path, res):
    return [sys.executable, "-m", "tfx.runs.sweep", str(exp_path), "--profile", "quick", "--results", str(res)]


@pytest.mark.parametrize("leftover", ["intact", "empty", "garbage"])
def test_kill_9_mid_sweep_then_rerun_equals_an_uninterrupted_sweep(tmp_path, leftover):
    """After ``kill -9`` the rerun resumes the half-done run from its checkpoint; if that
    leftover cannot be read (empty, or another file's bytes), the rerun moves it aside to
    ``….corrupt``, says so, and restarts that run. Either way the records equal an
    uninterrupted sweep's."""
    exp_path = _write(tmp_path)
    exp = Experiment.load(exp_path)
    runs = exp.runs("quick")
    key_b = sweep.run_key(exp.name, "quick", "reverse", runs[1], sweep.code_version())
    killed = tmp_path / "killed"
    ckpt_b = killed / "checkpoints" / "tiny.quick" / f"{key_b}.pt"
    out = killed / "tiny.quick.jsonl"

    proc = subprocess.Popen(_sweep_cmd(exp_path, killed), cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not ckpt_b.exists():  # run a recorded, run b under way
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the sweep never reached run b"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    n_recorded = len(out.read_text().splitlines())
    in_flight = list(ckpt_b.parent.glob("*.pt"))
    # killed in the middle of run b (or, on a very busy machine, of run c): a run recorded, one half done
    assert n_recorded in (1, 2) and len(in_flight) == 1
    if leftover == "empty":
        in_flight[0].write_bytes(b"")
    elif leftover == "garbage":
        in_flight[0].write_bytes(b"not a checkpoint\n" * 10)
    damaged = in_flight[0].read_bytes()

    rerun = subprocess.run(_sweep_cmd(exp_path, killed), cwd=ROOT, env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{n_recorded} already recorded" in rerun.stderr
    assert not list(ckpt_b.parent.glob("*.pt"))  # a finished run's checkpoint is removed
    if leftover == "intact":
        assert "resumed from its checkpoint" in rerun.stderr
    else:
        aside = in_flight[0].with_name(in_flight[0].name + ".corrupt")
        assert f"checkpoint {in_flight[0]}" in rerun.stderr and f"Moved it to {aside}" in rerun.stderr
        assert aside.read_bytes() == damaged  # set aside, not deleted
        assert "resumed from its checkpoint" not in rerun.stderr

    clean = sweep.run_experiment(exp, "quick", tmp_path / "clean", progress=False)
    assert not out.exists()  # every run recorded: the open batch was sealed
    resumed = results.read(results.files_for(killed, "tiny", "quick"))
    assert [r.label for r in resumed] == ["a", "b", "c"]
    assert [_comparable(r) for r in resumed] == [_comparable(r) for r in clean]
    assert all(r.history.steps_done == 200 for r in resumed)


def test_rerun_skips_recorded_runs_and_records_hold_everything(tmp_path):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 5"))
    first = sweep.run_experiment(exp_path, "quick", tmp_path / "r", progress=False)
    again = sweep.run_experiment(exp_path, "quick", tmp_path / "r", progress=False)
    files = results.files_for(tmp_path / "r", "tiny", "quick")
    assert [f.name.endswith(results.SEALED) for f in files] == [True]  # one batch, sealed; nothing new
    lines = [line for _, line in results.lines(files[0])]
    assert len(lines) == 3  # the rerun recorded nothing new
    assert [_comparable(r) for r in again] == [_comparable(r) for r in first]
    d = json.loads(lines[0])
    for k in ("label", "config", "train_config", "seed", "code_version", "profile", "device", "amp_dtype",
              "wall_time", "status", "reason", "history", "bleu", "task", "point", "experiment", "key"):
        assert k in d, k
    assert d["experiment"] == "tiny" and d["profile"] == "quick" and d["task"].startswith("reverse")
    assert d["point"] == {"lr": "a"} and d["amp_dtype"] == "float32" and d["device"] == "cpu"
    assert d["train_config"]["checkpoint_path"] is None  # bookkeeping is not part of what ran
    assert d["history"]["steps_done"] == 5 and d["status"] in OUTCOMES


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 3"))
    recs = sweep.run_experiment(exp_path, "quick", tmp_path / "r", progress=False, seal=False)
    f = tmp_path / "r" / "tiny.quick.jsonl"
    whole = f.read_text()
    f.write_text(whole + whole.splitlines()[1][:100])  # a half-written line at the end
    with pytest.warns(UserWarning, match=r"tiny.quick.jsonl:4: skipping a line that is not whole JSON"):
        back = results.read(f)
    assert [_comparable(r) for r in back] == [_comparable(r) for r in recs]


@pytest.mark.parametrize("damage", ["drop config", "history not a dict", "unknown placement"])
def test_a_whole_line_that_is_not_a_record_raises_naming_file_and_line(tmp_path, damage):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 3"))
    sweep.run_experiment(exp_path, "quick", tmp_path / "r", progress=False, seal=False)
    f = tmp_path / "r" / "tiny.quick.jsonl"
    lines = f.read_text().splitlines()
    d = json.loads(lines[1])
    if damage == "drop config":
        del d["config"]
    elif damage == "history not a dict":
        d["history"] = [1, 2]
    else:
        d["config"]["placement"] = "sideways"
    lines[1] = json.dumps(d)
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(results.RecordError, match=r"tiny.quick.jsonl:2: a whole JSON line that is not a valid record"):
        results.read(f)


def test_shards_partition_the_runs_and_merge_back(tmp_path):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 4"))
    whole = sweep.run_experiment(exp_path, "quick", tmp_path / "whole", progress=False, seal=False)
    parts = [sweep.run_experiment(exp_path, "quick", tmp_path / "sh", shard=f"{i}/2", progress=False, seal=False)
             for i in range(2)]
    assert [r.label for r in parts[0]] == ["a", "c"] and [r.label for r in parts[1]] == ["b"]
    files = results.files_for(tmp_path / "sh", "tiny", "quick")
    assert [f.name for f in files] == ["tiny.quick.shard-0-of-2.jsonl", "tiny.quick.shard-1-of-2.jsonl"]
    merged = results.load("tiny", "quick", tmp_path / "sh")
    assert [_comparable(r) for r in merged] == [_comparable(r) for r in whole]
    # the same runs recorded twice (a shard rerun into another file) still read once
    (tmp_path / "sh" / "tiny.quick.jsonl").write_text((tmp_path / "whole" / "tiny.quick.jsonl").read_text())
    assert len(results.load("tiny", "quick", tmp_path / "sh")) == 3
    with pytest.raises(ValueError, match="shard='2/2'"):
        sweep.parse_shard("2/2")
    with pytest.raises(ValueError, match="shard='x'"):
        sweep.parse_shard("x")


def test_jobs_run_in_processes_with_the_same_numbers(tmp_path):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 6"))
    one = sweep.run_experiment(exp_path, "quick", tmp_path / "one", progress=False)
    two = sweep.run_experiment(exp_path, "quick", tmp_path / "two", jobs=2, progress=False)
    assert [_comparable(r) for r in two] == [_comparable(r) for r in one]


def test_the_quick_experiments_run_end_to_end(tmp_path):
    for name, n in (("warmup", 6), ("depth", 14)):
        recs = sweep.run_experiment(ROOT / "experiments" / name, "quick", tmp_path, progress=False)
        assert len(recs) == n and all(r.status in OUTCOMES for r in recs)
        assert len(results.load(name, "quick", tmp_path)) == n
    labels = [r.label for r in results.load("depth", "quick", tmp_path)]
    assert labels[:2] == ["Post-LN · 1 layer", "Post-LN · 2 layers"]
    admin = [r for r in results.load("depth", "quick", tmp_path) if r.point["architecture"] == "Admin"]
    assert all(r.config.init == "admin" and r.config.admin_profiling == "train" for r in admin)
    assert sweep.summary(recs)  # the in-process helpers read file records too


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "experiments").glob("*.toml")))
def test_every_experiment_file_is_valid_in_every_profile(name):
    exp = Experiment.load(ROOT / "experiments" / name)  # checks every profile's runs
    sizes = {p: len(exp.runs(p)) for p in ("quick", "book", "full")}
    assert sizes["quick"] < sizes["book"]
    if name in cost.GPU_PLAN:  # sized to the GPU half's budget (tests/runs/test_gpu_plan.py): fewer cells, ≥ 5 seeds
        assert len(exp.seeds("full")) >= 5
    else:
        assert sizes["book"] <= sizes["full"]
    assert exp.description


@pytest.mark.parametrize("text, match", [
    ("colour = 1", "colour is not a field here"),
    ("[model]\nplacment = 'post'", "model.placment is not a ModelConfig field"),
    ("[train]\nseed = 3", "train.seed is set by the sweep runner .use `seeds`"),
    ("[train]\ncheckpoint_path = 'x'", "train.checkpoint_path is set by the sweep runner"),
    ("[train]\ncheckpoint_every = 5", "use the top-level `checkpoint_every`"),
    ("checkpoint_every = 0", "checkpoint_every=0 .profile quick. must be an integer ≥ 1"),
    ("seeds = 0", "seeds .profile quick. = 0"),
    ("seeds = [1, 1]", "repeats a seed"),
    ("[grid]\ntrain.lr = []", "grid.train.lr must be a non-empty list"),
    ("[grid.arch]\nx = { modle = {} }", "grid.arch.x.modle is not a field here"),
    ("[grid.arch]\nx = { model = { placement = 'middle' } }", "run 'x' .profile quick.: placement='middle'"),
    ("[profiles.huge]\nseeds = 1", "profiles.huge is not a profile"),
    ("[profiles.book]\ngrid.train.lr = [-1.0]", "run 'lr=-1.0' .profile book.: lr=-1.0"),
    ("task = 'wmt'", "task='wmt'"),
    ("description = ", "not valid TOML"),
    ("budget_cpu_hours = 0", "budget_cpu_hours=0 must be a number of CPU-hours > 0"),
    ("budget_cpu_hours = 'six'", "budget_cpu_hours='six' must be a number"),
    ("budget_cpu_hours = true", "budget_cpu_hours=True must be a number"),
    ("budget_cpu_hours = 500.0", "budget_cpu_hours=500 is more than a few days .* pending"),
    ("pending = 'too dear'", "pending needs budget_cpu_hours"),
    ("budget_cpu_hours = 500.0\npending = ''", "pending='' must be a sentence"),
])
def test_bad_experiment_files_name_the_field(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        Experiment.load(_write(tmp_path, text, name="bad"))


def test_a_budget_and_pending_are_read_and_a_dear_design_may_be_listed_pending(tmp_path):
    exp = Experiment.load(_write(tmp_path, "budget_cpu_hours = 500\npending = 'costs a week'", name="dear"))
    assert exp.budget_cpu_hours == 500.0 and exp.pending == "costs a week"
    plain = Experiment.load(_write(tmp_path, name="plain"))
    assert plain.budget_cpu_hours is None and plain.pending == ""


def test_cli_plans_cpu_hours_from_recorded_wall_times(tmp_path, capsys):
    """--plan-cpu trains nothing: each experiment's runs to do and their CPU-hours at the
    recorded seconds a step of the same size (here none recorded: counted as unknown)."""
    path = _write(tmp_path, "budget_cpu_hours = 0.5\n" + TINY, name="budgeted")
    assert sweep.main([str(path), "--profile", "quick", "--plan-cpu", "--results", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "budgeted" in out and "3 of 3" in out and "budget 0.5 h" in out and "unknown" in out
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").rglob("*.jsonl"))


def test_cli_lists_runs_and_reports_bad_files(tmp_path, capsys):
    assert sweep.main([str(_write(tmp_path)), "--profile", "quick", "--list", "--shard", "1/2"]) == 0
    assert capsys.readouterr().out.split() == ["1", "b", "seed", "0"]
    assert sweep.main(["experiments/warmup-fixes", "experiments/warmup", "--profile", "quick", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()  # several experiments: each line names its own
    assert listed[0].split()[:2] == ["warmup-fixes", "0"] and listed[-1].split()[0] == "warmup"
    assert sweep.main([str(tmp_path / "missing"), "--profile", "quick"]) == 1
    assert "no experiment file" in capsys.readouterr().err


def test_the_format_example_in_the_docstring_is_a_valid_experiment():
    import textwrap
    import tomllib

    from tfx.runs import experiment

    doc = experiment.__doc__
    text = textwrap.dedent(doc[doc.index("    # experiments/warmup.toml"):doc.index("Each run's settings")])
    exp = Experiment.from_dict(tomllib.loads(text), name="example")
    quick = exp.runs("quick")
    assert [r.label for r in quick] == ["warmup=0 · Adam", "warmup=0 · SGD", "warmup=20 · Adam", "warmup=20 · SGD"]
    assert quick[1].train.optimizer == "sgd" and quick[1].train.lr == 0.1 and quick[0].train.steps == 60
    assert len(exp.runs("book")) == 2 * 2 * 3  # the file's grid and seeds outside quick


def test_a_run_that_raises_is_reported_and_the_others_are_recorded(tmp_path):
    text = TINY.replace("steps = 200", "steps = 3").replace("b = { train.lr = 2e-3 }", "b = { model.max_len = 4 }")
    with pytest.raises(RuntimeError, match=r"1 run\(s\) raised and were not recorded: b seed 0"):
        sweep.run_experiment(_write(tmp_path, text), "quick", tmp_path / "r", progress=False)
    assert [r.label for r in results.read(tmp_path / "r" / "tiny.quick.jsonl")] == ["a", "c"]


def test_two_sweeps_started_together_into_one_folder_both_finish_with_the_records_of_one(tmp_path):
    """A user who launches the same sweep twice, two shards given the same index, a GPU burst
    started while the last still runs: each run is trained once (a claim per run), both
    commands exit 0, and the folder holds the records one sweep would have written."""
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 60").replace("checkpoint_every = 10",
                                                                                   "checkpoint_every = 5"))
    both = tmp_path / "both"
    procs = [subprocess.Popen(_sweep_cmd(exp_path, both), cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    lines = [line for f in results.files_for(both, "tiny", "quick") for _, line in results.lines(f)]
    assert len(lines) == 3, "each run recorded once"
    assert any("recorded by another sweep" in err or "another sweep is training it" in err for _, err in outs)
    one = tmp_path / "one"
    subprocess.run(_sweep_cmd(exp_path, one), cwd=ROOT, env=_env(), check=True, capture_output=True)
    got = [_comparable(r) for r in results.read(results.files_for(both, "tiny", "quick"))]
    want = [_comparable(r) for r in results.read(results.files_for(one, "tiny", "quick"))]
    assert got == want
    assert not list((both / "checkpoints").rglob("*.pt")) and not list((both / "checkpoints").rglob("*.tmp"))


def test_translations_quick_profile_keeps_two_rates_while_the_book_brackets_with_four():
    """experiments/translation.toml's [profiles.quick.grid.lr] keeps the smoke test at the two
    rates it had; without it the quick profile would inherit the book's four."""
    exp = Experiment.load("translation")
    assert [n for n, _ in exp.grid("quick")["lr"]] == ["1e-3", "4e-3"]
    assert [n for n, _ in exp.grid("book")["lr"]] == ["3e-4", "1e-3", "4e-3", "1e-2"]
    assert len(exp.runs("quick")) == 3 * 2 * 2 and len(exp.runs("book")) == 3 * 2 * 4 * 5


def test_skip_leaves_out_the_points_it_names_and_rejects_names_the_grid_lacks():
    raw = {"seeds": 2, "grid": {"arch": {"post": {"model": {"placement": "post"}},
                                         "pre": {"model": {"placement": "pre"}}},
                                "lr": {"1e-4": {"train": {"lr": 1e-4}}, "1e-3": {"train": {"lr": 1e-3}}}}}
    whole = Experiment.from_dict(raw, name="x").runs("quick")
    assert len(whole) == 2 * 2 * 2
    kept = Experiment.from_dict(raw | {"skip": [{"arch": "pre", "lr": "1e-4"}]}, name="x").runs("quick")
    assert [r.label for r in kept][::2] == ["post · 1e-4", "post · 1e-3", "pre · 1e-3"]
    assert {r.label for r in whole} - {r.label for r in kept} == {"pre · 1e-4"}
    # the runs kept are the same runs (same configs) as in the whole grid
    same = {(r.label, r.seed): r.train for r in whole}
    assert all(same[(r.label, r.seed)] == r.train for r in kept)
    for bad, says in (([{"depth": "6"}], "axis 'depth' is not in the grid"),
                      ([{"arch": "admin"}], "arch = 'admin' is not a variant"),
                      ([{}], "non-empty table"), ({"arch": "pre"}, "must be a list")):
        with pytest.raises(ValueError, match=says):
            Experiment.from_dict(raw | {"skip": bad}, name="x")
