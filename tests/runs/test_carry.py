"""Records that carry forward (tfx.runs.carry): proven valid in the lineage ledger
(tfx.runs.lineage) only when retrained samples show the change of code changed no number;
otherwise named and left stale. No record is rewritten either way."""
import json
import shutil
from pathlib import Path

import pytest

import tfx
from tfx.runs import carry, lineage, results, sweep

TINY = """
description = "four tiny runs"
seeds = [0, 1]
model = { d_model = 16, n_heads = 2, d_ffn = 32, n_enc = 1, n_dec = 1, dropout = 0.1 }
train = { steps = 4, batch_size = 4, eval_batches = 1, eval_every = 2 }
task = "reverse"

[grid.lr]
a = { train.lr = 1e-3 }
b = { train.lr = 2e-3 }
"""


pytestmark = pytest.mark.long_file  # a minute or more: collected first (pytest.ini)


def _swept(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    exp = tmp_path / "tiny.toml"
    exp.write_text(TINY)
    res = tmp_path / "res"
    sweep.run_experiment(exp, "quick", res, progress=False, seal=False)  # open: _stamp edits it
    return exp, res, res / "tiny.quick.jsonl"


def _stamp(path, version, change=None):
    """Make the file's records look made by code ``version`` (and change their numbers)."""
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for d in lines:
        d["code_version"], d["key"] = version, "old-" + d["key"]
        if change:
            change(d)
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))


def test_records_of_a_neutral_code_change_are_carried_forward(tmp_path):
    exp, res, f = _swept(tmp_path)
    before = results.read(f)
    _stamp(f, "0123456789ab")
    assert len(sweep.plan(exp, "quick", res)["todo"]) == 4  # stale: a rerun would retrain them all
    text = f.read_text()
    assert len(lineage.stale(results.read(f), res, sweep.code_version())) == 4
    [report] = carry.carry_forward(exp, "quick", res, sample=2, log=lambda _: None)
    assert report["carried"] == 4 and not report["differ"] and len(report["checked"]) == 2
    assert sweep.plan(exp, "quick", res)["todo"] == []  # valid now: a rerun trains nothing
    assert f.read_text() == text  # no record rewritten: each keeps the version that made it
    after = results.read(f)
    assert [r.code_version for r in after] == ["0123456789ab"] * 4
    assert [r.history.loss for r in after] == [r.history.loss for r in before]  # numbers untouched
    assert lineage.stale(after, res, sweep.code_version()) == []
    [entry] = lineage.entries(res)
    assert entry["from"] == "0123456789ab" and entry["to"] == sweep.code_version() and entry["bit_identical"]
    assert entry["checked"] == report["checked"] and entry["records_device"] == "cpu"
    assert lineage.stale(after, res, "fedcba987654")  # proven for this code, not for another one
    assert carry.carry_forward(exp, "quick", res, sample=2, log=lambda _: None) == []  # nothing left to prove


def test_a_record_whose_numbers_are_not_reproduced_stays_stale_and_is_named(tmp_path):
    exp, res, f = _swept(tmp_path)

    def nudge(d):  # what a change of the trainer's arithmetic does to a record
        d["history"]["loss"][-1] = d["history"]["loss"][-1] * (1 + 1e-7)

    _stamp(f, "0123456789ab", nudge)
    text = f.read_text()
    [report] = carry.carry_forward(exp, "quick", res, sample=1, log=lambda _: None)
    assert report["carried"] == 0 and report["differ"]
    assert "loss[3]" in report["differ"][0] and "a seed 0" in report["differ"][0]
    assert f.read_text() == text  # nothing rewritten
    [entry] = lineage.entries(res)  # the failed check is written down, and proves nothing
    assert not entry["bit_identical"] and "loss[3]" in entry["how"]
    assert len(lineage.stale(results.read(f), res, sweep.code_version())) == 4
    assert len(sweep.plan(exp, "quick", res)["todo"]) == 4


def _reference(tmp_path, name, old, new):
    """A copy of tfx whose training code differs from this one by one edit."""
    ref = tmp_path / name
    shutil.copytree(Path(tfx.__file__).parent, ref / "tfx", ignore=shutil.ignore_patterns("__pycache__"))
    f = ref / "tfx" / "runs" / "train.py"
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    return ref


def test_a_reference_tells_a_change_of_machine_from_a_change_of_code(tmp_path):
    """Records from another machine differ here in the last bit even under their own code.
    With that code as a reference, a change of code that changes no number carries them
    forward; one that changes the arithmetic does not."""
    exp, res, f = _swept(tmp_path)
    neutral = _reference(tmp_path, "neutral", "DIVERGE_OVER_START = 3.0", "DIVERGE_OVER_START = 3.0 + 0.0")
    version = carry.reference_version(neutral)
    assert version != sweep.code_version()

    def other_machine(d):
        d["history"]["loss"][1] = d["history"]["loss"][1] * (1 + 1e-7)

    _stamp(f, version, other_machine)
    [report] = carry.carry_forward(exp, "quick", res, sample=1, log=lambda _: None)
    assert report["differ"] and "no --reference" in report["differ"][0]
    [report] = carry.carry_forward(exp, "quick", res, sample=1, references=[neutral], log=lambda _: None)
    assert report["carried"] == 4, report
    assert "old and new code bit-identical on this machine" in lineage.entries(res)[-1]["how"]

    exp2, res2, f2 = _swept(tmp_path / "second")
    changed = _reference(tmp_path, "changed", "        lr = lr_at(step, self.cfg)\n",
                         "        lr = lr_at(step, self.cfg) * 1.001\n")
    _stamp(f2, carry.reference_version(changed), other_machine)
    [report] = carry.carry_forward(exp2, "quick", res2, sample=1, references=[changed], log=lambda _: None)
    assert report["carried"] == 0 and "old code here vs new code here" in report["differ"][0]


def test_reference_must_hold_a_tfx(tmp_path):
    with pytest.raises(ValueError, match="must be a folder holding an older tfx/"):
        carry.reference_version(tmp_path)


def test_spread_takes_first_last_and_between():
    assert carry.spread(list(range(10)), 3) == [0, 4, 9]  # round(4.5) is 4: Python rounds half to even
    assert carry.spread([1, 2], 5) == [1, 2]


def test_the_command_carries_forward(tmp_path):
    import os
    import subprocess
    import sys

    exp, res, f = _swept(tmp_path)
    _stamp(f, "0123456789ab")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "tfx.sweep", str(exp), "--profile", "quick", "--results", str(res),
                           "--carry-forward", "--sample", "1"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "4 records proven valid, 0 left stale" in done.stderr
    assert sweep.plan(exp, "quick", res)["todo"] == []


def test_records_of_another_device_are_proven_by_their_arithmetic_only_when_asked(tmp_path):
    """GPU records cannot be re-made on a CPU: without --arithmetic-steps they stay stale and
    nothing is written; with it (and the old code as a reference), their sampled runs' first K
    steps under old and new code here are compared, and the ledger names the proof for what
    it is. A change of arithmetic is caught the same way."""
    exp, res, f = _swept(tmp_path)
    neutral = _reference(tmp_path, "neutral", "DIVERGE_OVER_START = 3.0", "DIVERGE_OVER_START = 3.0 + 0.0")

    def on_a_gpu(d):
        d["device"] = "cuda:0"

    _stamp(f, carry.reference_version(neutral), on_a_gpu)
    [report] = carry.carry_forward(exp, "quick", res, sample=1, references=[neutral], log=lambda _: None)
    assert report["carried"] == 0 and "--arithmetic-steps" in report["why"] and lineage.entries(res) == []
    [report] = carry.carry_forward(exp, "quick", res, sample=1, references=[neutral], arithmetic_steps=2,
                                   log=lambda _: None)
    assert report["carried"] == 4, report
    [entry] = lineage.entries(res)
    assert entry["records_device"] == "cuda" and entry["device"] == "cpu" and entry["bit_identical"]
    assert "first 2 steps" in entry["how"] and "arithmetic proof" in entry["how"]
    assert lineage.stale(results.read(f), res, sweep.code_version()) == []

    exp2, res2, f2 = _swept(tmp_path / "second")
    changed = _reference(tmp_path, "changed", "        lr = lr_at(step, self.cfg)\n",
                         "        lr = lr_at(step, self.cfg) * 1.001\n")
    _stamp(f2, carry.reference_version(changed), on_a_gpu)
    [report] = carry.carry_forward(exp2, "quick", res2, sample=1, references=[changed], arithmetic_steps=2,
                                   log=lambda _: None)
    assert report["carried"] == 0 and "old code vs new code on cpu" in report["differ"][0]
    assert not lineage.entries(res2)[0]["bit_identical"]


def test_records_proven_equivalent_to_a_reference_are_checked_from_it(tmp_path):
    """Records of an older version (here made on another machine) that the ledger already proves
    equivalent to the reference's version need no reference of their own: one check, from the
    reference's version to this code, proves them through the chain."""
    exp, res, f = _swept(tmp_path)
    neutral = _reference(tmp_path, "neutral", "DIVERGE_OVER_START = 3.0", "DIVERGE_OVER_START = 3.0 + 0.0")
    version = carry.reference_version(neutral)

    def other_machine(d):
        d["history"]["loss"][1] = d["history"]["loss"][1] * (1 + 1e-7)

    _stamp(f, "0123456789ab", other_machine)
    [report] = carry.carry_forward(exp, "quick", res, sample=1, references=[neutral], log=lambda _: None)
    assert report["from"] == "0123456789ab" and report["carried"] == 0  # no chain yet: no reference for it
    lineage.add(res, {"experiment": "tiny", "profile": "quick", "from": "0123456789ab", "to": version,
                      "records_device": "cpu", "checked": ["a seed 0"], "bit_identical": True, "how": "a test",
                      "date": "2026-11-28", "device": "cpu", "torch": "test"})
    [report] = carry.carry_forward(exp, "quick", res, sample=1, references=[neutral], log=lambda _: None)
    assert report["from"] == version and report["carried"] == 4, report
    assert lineage.entries(res)[-1]["from"] == version
    assert lineage.stale(results.read(f), res, sweep.code_version()) == []
