"""tfx.runs.sweep: a grid of runs, each recorded with config, seed, code version, device, time, status."""
import json
import math
from pathlib import Path

import pytest

import tfx
from tfx.runs import sweep
from tfx.runs.outcome import OUTCOMES


@pytest.fixture(scope="module")
def task():
    return tfx.synthetic("reverse", vocab=8, length=4)


def _cfg(task, **kw):
    return tfx.ModelConfig.for_task(task, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1, **kw)


@pytest.fixture(scope="module")
def records(task):
    configs = {"Post-LN": _cfg(task, placement="post"),
               "Admin": _cfg(task, placement="admin", init="admin")}
    return sweep.run_grid(configs, task, tfx.TrainConfig(steps=3, batch_size=4, lr=1e-3), seeds=[0, 1])


def test_grid_order_and_fields(records):
    assert [(r.label, r.seed) for r in records] == [("Post-LN", 0), ("Post-LN", 1), ("Admin", 0), ("Admin", 1)]
    for r in records:
        assert r.status in OUTCOMES
        assert r.status == r.history.status == r["status"]
        assert r.train_config.seed == r.seed
        assert r.history.steps_done == 3 and len(r.history.loss) == 3
        assert r.wall_time > 0 and r.device == "cpu" and r.device_name == ""  # a CPU names no card
        assert r.code_version and isinstance(r.code_version, str)
        d = r.to_dict()
        assert {"label", "config", "train_config", "seed", "code_version", "device", "amp_dtype",
                "wall_time", "status", "reason", "history", "bleu", "task"} <= set(d)
        assert d["amp_dtype"] == "float32" and d["task"] == "reverse-v8-l4" and d["bleu"] is None
        back = sweep.Record.from_dict(json.loads(json.dumps(d))).to_dict()
        assert json.dumps(back) == json.dumps(d)  # a record survives its JSON line


def test_same_seed_same_numbers(task, records):
    again = sweep.run_one("Post-LN", _cfg(task, placement="post"), task,
                          tfx.TrainConfig(steps=3, batch_size=4, lr=1e-3), seed=0)
    assert again.history.loss == records[0].history.loss
    assert records[0].history.loss != records[1].history.loss  # another seed, other weights


def test_admin_gets_a_profiling_batch(records):
    # init="admin" needs a batch: run_grid supplies one, and ω is no longer all ones
    assert all(r.status in ("learned", "did not learn") for r in records if r.label == "Admin")


def test_helpers(records):
    assert list(sweep.by_label(records)) == ["Post-LN", "Admin"]
    h = sweep.histories(records, seed=1)
    assert h["Admin"] is records[3].history
    s = sweep.summary(records)
    assert s["Post-LN"]["n"] == 2 and len(s["Post-LN"]["verdicts"]) == 2 == sum(s["Post-LN"]["counts"].values())
    assert math.isfinite(s["Admin"]["median"]) and s["Admin"]["describe"].startswith(("learned", "did not"))


def test_per_label_train_configs(task):
    cfgs = {"a": _cfg(task), "b": _cfg(task)}
    tcs = {"a": tfx.TrainConfig(steps=2, batch_size=4), "b": tfx.TrainConfig(steps=3, batch_size=4, warmup=2)}
    recs = sweep.run_grid(cfgs, task, tcs, seeds=1)
    assert [r.history.steps_done for r in recs] == [2, 3]
    assert recs[1].history.lr[0] == pytest.approx(tcs["b"].lr / 2)


def test_bad_arguments(task):
    with pytest.raises(ValueError, match="empty"):
        sweep.run_grid({}, task, tfx.TrainConfig(steps=1))
    with pytest.raises(ValueError, match="seeds"):
        sweep.run_grid({"a": _cfg(task)}, task, tfx.TrainConfig(steps=1), seeds=[])
    with pytest.raises(ValueError, match="not a ModelConfig"):
        sweep.run_grid({"a": {"placement": "post"}}, task, tfx.TrainConfig(steps=1))
    with pytest.raises(ValueError, match="no TrainConfig"):
        sweep.run_grid({"a": _cfg(task)}, task, {"b": tfx.TrainConfig(steps=1)})


def test_code_version_is_the_training_code_hash():
    v = sweep.code_version()
    assert v == sweep.code_hash() and len(v) == 12 and int(v, 16) >= 0


def _copy(tmp_path, name="tfx"):
    import shutil

    pkg = tmp_path / name / "tfx"
    shutil.copytree(Path(sweep.__file__).resolve().parents[1], pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


def _edit(pkg, rel, old, new):
    f = pkg / rel
    text = f.read_text()
    assert old in text, f"{rel} no longer has {old!r}: update this test"
    f.write_text(text.replace(old, new, 1))


def test_run_keys_survive_a_commit_that_does_not_touch_the_trainer(tmp_path):
    """Copy the package, change what a commit to a chapter, a plot, the sweep or a docstring
    changes: the hash (and so every run key) stays. Change the trainer's arithmetic: it moves."""
    pkg = _copy(tmp_path)
    before = sweep.code_hash(pkg)
    assert before == sweep.code_hash()  # the copy hashes like the original
    for f in ("theory/adam.py", "book/plot.py", "runs/results.py", "runs/sweep.py", "theory/norms.py"):
        (pkg / f).write_text((pkg / f).read_text() + "\nX_NOT_TRAINING = 1\n")  # code outside the closure
    _edit(pkg, "runs/train.py", '"""The training loop:', '"""The training loop (reworded):')  # a docstring
    _edit(pkg, "nn/optim.py", "    if lr is not None:\n", "    # a new comment\n\n    if lr is not None:  # why\n")
    assert sweep.code_hash(pkg) == before
    for rel, old, new in (("runs/train.py", "DIVERGE_OVER_START = 3.0", "DIVERGE_OVER_START = 3.5"),
                          ("nn/optim.py", "set_lr(opt, lr)", "set_lr(opt, 2 * lr)"),
                          ("nn/blocks.py", "return torch.tanh(alpha * x).abs() > threshold",
                           "return torch.tanh(alpha * x).abs() >= threshold"),
                          ("runs/data.py", "import", "import os\nimport")):
        changed = _copy(tmp_path, f"changed-{rel.replace('/', '-')}")
        _edit(changed, rel, old, new)
        assert sweep.code_hash(changed) != before, f"a change to {rel}'s code must change the hash"


def test_the_outcome_rule_is_judged_on_reading_not_hashed(tmp_path):
    """The trainer imports the outcome rule, but a record's numbers do not depend on it and
    every record is judged again when read: a changed rule (here the learned line) keeps every
    run key, and without the leave-out it would not."""
    from tfx.runs import codeversion as code

    pkg = _copy(tmp_path)
    before = code.code_hash(pkg)
    assert "runs/outcome.py" not in [f.relative_to(pkg).as_posix() for f in code.training_files(pkg)]
    _edit(pkg, "runs/outcome.py", "LEARNED_SHARE = 0.25", "LEARNED_SHARE = 0.3")
    assert code.code_hash(pkg) == before
    graph = code.import_graph(pkg)
    assert "tfx.runs.outcome" in code.closure(["tfx.runs.train"], graph)  # imported, left out by name
    assert "tfx.runs.outcome" not in code.closure(["tfx.runs.train"], graph, leave_out=code.JUDGED_ON_READING)


def test_a_module_the_trainer_starts_to_import_joins_the_hash(tmp_path):
    from tfx.runs import codeversion as code

    pkg = _copy(tmp_path)
    before = code.code_hash(pkg)
    assert "runs/helper_new.py" not in [f.relative_to(pkg).as_posix() for f in code.training_files(pkg)]
    (pkg / "runs" / "helper_new.py").write_text("FACTOR = 1.0\n")
    assert code.code_hash(pkg) == before  # nothing imports it yet
    _edit(pkg, "runs/train.py", "def _record(hist,", "def _uses_helper():\n    from .helper_new import FACTOR\n"
          "    return FACTOR\n\n\ndef _record(hist,")
    assert "runs/helper_new.py" in [f.relative_to(pkg).as_posix() for f in code.training_files(pkg)]
    after = code.code_hash(pkg)
    (pkg / "runs" / "helper_new.py").write_text("FACTOR = 2.0\n")
    assert code.code_hash(pkg) not in (before, after)


def test_code_text_drops_comments_docstrings_and_blank_lines_only():
    from tfx.runs.codeversion import code_text

    src = ('"""Module doc."""\nimport math  # why\n\n\nclass A:\n    """Doc\n    on lines."""\n\n'
           '    x = "not a doc"  # c\n\n    def f(self):\n        \'\'\'doc\'\'\'\n        return "#no" + f"{1}"\n')
    assert code_text(src) == ('import math\nclass A:\n    x = "not a doc"\n    def f(self):\n'
                              '        return "#no" + f"{1}"\n')


def test_steps_to_loss():
    h = tfx.History(step=[1, 2, 3, 4, 5], loss=[4.0, 3.0, 2.0, 1.0, 0.5])
    assert sweep.steps_to_loss(h, 2.6, smooth=2) == 3  # (3 + 2) / 2 = 2.5
    assert sweep.steps_to_loss(h, 0.1, smooth=2) is None
    assert sweep.steps_to_loss(tfx.History(step=[1, 2], loss=[float("nan"), 0.1]), 1.0, smooth=2) is None


def test_a_cuda_record_names_its_card_and_a_cpu_record_names_none(monkeypatch):
    import torch

    assert sweep._device_name("cpu") == ""
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: f"card of {device}")
    assert sweep._device_name("cuda:1") == "card of cuda:1"


def test_source_of_drops_the_docstring_and_comments():
    from tfx.runs.codeversion import source_of

    def f(x):
        """A docstring
        on two lines."""
        y = x + 1  # a comment
        return y

    assert source_of(f) == "def f(x):\n    y = x + 1\n    return y"
