"""``--executor ray``: a sweep's runs as Ray tasks, recorded by the driver alone.

One local Ray (two CPUs, no dashboard) serves the whole module; the tests that need it skip
where Ray is not installed (it is an optional extra, ``tfx-book[ray]``), the others run
everywhere."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfx.runs import results, sweep
# the sweep tests' tiny experiment
from tiny_sweep import ROOT, TINY, comparable as _comparable, sweep_env as _env, write_experiment as _write


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray for this module: its sweeps find it running and use it (ray.init takes seconds)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


def _ray_cmd(exp_path, res, *more):
    return [str(exp_path), "--profile", "quick", "--results", str(res), "--executor", "ray", *more]


def test_ray_records_equal_the_local_executors_and_a_rerun_trains_nothing(tmp_path, local_ray, capsys):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 5"))
    local = sweep.run_experiment(exp_path, "quick", tmp_path / "local", progress=False)
    on_ray = sweep.run_experiment(exp_path, "quick", tmp_path / "ray", progress=False, executor="ray")
    assert [_comparable(r) for r in on_ray] == [_comparable(r) for r in local]
    files = results.files_for(tmp_path / "ray", "tiny", "quick")
    assert [f.name.endswith(results.SEALED) for f in files] == [True]  # the Ray sweep ends as a local one: sealed
    assert [_comparable(r) for r in results.read(files)] == [_comparable(r) for r in local]
    left = [p.name for p in (tmp_path / "ray" / "checkpoints").rglob("*") if not p.name.endswith(".lock")]
    assert left == ["tiny.quick"], "no checkpoint and no driver mark left behind"

    capsys.readouterr()
    assert sweep.main(_ray_cmd(exp_path, tmp_path / "ray")) == 0  # the command line, a rerun
    assert "3 already recorded" in capsys.readouterr().err
    assert results.files_for(tmp_path / "ray", "tiny", "quick") == files
    assert len([line for _, line in results.lines(files[0])]) == 3  # the rerun trained and recorded nothing


def test_a_run_that_raises_on_a_worker_is_reported_and_the_others_are_recorded(tmp_path, local_ray):
    text = TINY.replace("steps = 200", "steps = 3").replace("b = { train.lr = 2e-3 }", "b = { model.max_len = 4 }")
    with pytest.raises(RuntimeError, match=r"1 run\(s\) raised and were not recorded: b seed 0"):
        sweep.run_experiment(_write(tmp_path, text), "quick", tmp_path / "r", progress=False, executor="ray")
    assert [r.label for r in results.read(tmp_path / "r" / "tiny.quick.jsonl")] == ["a", "c"]


def test_an_interrupted_sweep_resumes_on_ray_from_its_checkpoint(tmp_path, local_ray, capsys):
    """A sweep killed mid-run, then rerun with --executor ray on the same machine (a shared
    results folder): the half-done run continues from its checkpoint, and the records equal
    an uninterrupted sweep's."""
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 60").replace("checkpoint_every = 10",
                                                                                   "checkpoint_every = 5"))
    killed = tmp_path / "killed"
    ckpts = killed / "checkpoints" / "tiny.quick"
    local_sweep = [sys.executable, "-m", "tfx.sweep", str(exp_path), "--profile", "quick", "--results", str(killed)]
    proc = subprocess.Popen(local_sweep, cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not list(ckpts.glob("*.pt")):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the sweep never saved a checkpoint"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()

    capsys.readouterr()
    resumed = sweep.run_experiment(exp_path, "quick", killed, progress=False, executor="ray")
    assert "resumed from its checkpoint" in capsys.readouterr().err
    clean = sweep.run_experiment(exp_path, "quick", tmp_path / "clean", progress=False)
    assert [_comparable(r) for r in resumed] == [_comparable(r) for r in clean]
    assert not list(ckpts.glob("*.pt"))


def test_a_worker_that_does_not_share_the_results_folder_trains_without_checkpoints(tmp_path):
    """Where the driver's mark file is missing (another machine's disk), the worker trains the
    run from its start and leaves no checkpoint; the numbers are those of a checkpointed run.
    A worker with other training code than the driver's refuses the run."""
    text = TINY.replace("steps = 200", "steps = 12").replace("checkpoint_every = 10", "checkpoint_every = 5")
    job = sweep.plan(_write(tmp_path, text), "quick", tmp_path / "r")["todo"][0]
    here, _ = sweep.train_job(job)
    assert Path(job["checkpoint"]).exists()  # checkpointed here (the sweep removes it once recorded)
    Path(job["checkpoint"]).unlink()
    away = {**job, "driver_mark": str(tmp_path / "elsewhere" / ".driver-x"), "driver_code": sweep.code_version()}
    there, how = sweep.train_on_ray_worker(away)
    assert how == "trained" and not Path(job["checkpoint"]).exists()
    assert _comparable(there) == _comparable(here)
    with pytest.raises(RuntimeError, match="other training code .* install the same tfx-book on every machine"):
        sweep.train_on_ray_worker({**away, "driver_code": "0" * 16})


@pytest.mark.parametrize("more, message", [
    (["--gpus-per-task", "0.25"], "--gpus-per-task=0.25 is for Ray: give it with --executor=ray"),
    (["--ray-address", "auto"], "--ray-address='auto' is for Ray: give it with --executor=ray"),
    (["--executor", "ray", "--gpus-per-task", "-1"], "--gpus-per-task=-1.0 must be a share of one GPU from 0 to 1"),
    (["--executor", "ray", "--gpus-per-task", "2"], "--gpus-per-task=2.0 must be a share of one GPU from 0 to 1"),
    (["--executor", "ray", "--budget-minutes", "5"], "--budget-minutes measures step times on this machine"),
    (["--executor", "ray", "--jobs", "0"], "--jobs=0 must be an integer ≥ 1"),
])
def test_bad_options_name_the_option_and_what_is_allowed(tmp_path, capsys, more, message):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 3"))
    assert sweep.main([str(exp_path), "--profile", "quick", "--results", str(tmp_path / "r"), *more]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing ran
    with pytest.raises(ValueError, match="executor='dask' must be one of local, ray"):
        sweep.run_experiment(exp_path, "quick", tmp_path / "r", executor="dask")


def test_without_ray_the_error_names_the_extra_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 3"))
    assert sweep.main(_ray_cmd(exp_path, tmp_path / "r")) == 1
    assert 'pip install "tfx-book[ray]"' in capsys.readouterr().err


def test_a_cluster_without_gpus_refuses_gpus_per_task(tmp_path, local_ray, capsys):
    exp_path = _write(tmp_path, TINY.replace("steps = 200", "steps = 3"))
    assert sweep.main(_ray_cmd(exp_path, tmp_path / "r", "--gpus-per-task", "0.5")) == 1
    assert "--gpus-per-task 0.5: the Ray cluster has no GPU; give 0 to train on its CPUs" in capsys.readouterr().err
    assert sweep.main(_ray_cmd(exp_path, tmp_path / "r", "--threads", "3")) == 1
    assert "--threads 3: each run asks Ray for that many CPUs and the cluster has 2" in capsys.readouterr().err
