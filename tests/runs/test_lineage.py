"""The lineage ledger (tfx.runs.lineage): every committed record a chapter reads is made by the
current code or by a version proven to give its numbers; a record that is neither is stale."""
import json
from pathlib import Path

import pytest

from tfx.runs import lineage, results
from tfx.runs.codeversion import code_version

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


def _committed():
    """(experiment, profile) of every results file in the checkout."""
    names = set()
    for f in RESULTS.glob("*.jsonl*"):
        if f.name == lineage.LEDGER:
            continue
        experiment, profile = f.name.split(".")[:2]
        names.add((experiment, profile))
    return sorted(names)


@pytest.mark.parametrize("experiment, profile", _committed())
def test_every_committed_record_is_current_or_proven(experiment, profile):
    recs = results.load(experiment, profile, RESULTS)  # what a chapter reads: one record per run
    bad = lineage.stale(recs, RESULTS, code_version())
    assert not bad, (f"{len(bad)} of {len(recs)} records are neither made by the current code ({code_version()}) "
                     f"nor proven equivalent in results/{lineage.LEDGER}: prove them (python -m tfx.sweep "
                     f"experiments/{experiment} --profile {profile} --carry-forward) or rerun the sweep. "
                     f"First: {bad[:3]}")


def _record(version="0123456789ab", device="cpu"):
    return {"experiment": "e", "profile": "book", "label": "a", "seed": 0, "code_version": version,
            "device": device}


def _proof(**kw):
    entry = {"experiment": "e", "profile": "book", "from": "0123456789ab", "to": "bbbbbbbbbbbb",
             "records_device": "cpu", "checked": ["a seed 0"], "bit_identical": True,
             "how": "reproduced the record", "date": "2026-11-28", "device": "cpu", "torch": "2.13.0+cpu"}
    return {**entry, **kw}


def test_a_record_of_unproven_older_code_is_stale_and_a_proof_makes_it_valid(tmp_path):
    rec = _record()
    assert lineage.valid(_record("bbbbbbbbbbbb"), tmp_path, "bbbbbbbbbbbb")  # current
    assert lineage.stale([rec], tmp_path, "bbbbbbbbbbbb") == ["e.book a seed 0 (code 0123456789ab, device cpu)"]
    lineage.add(tmp_path, _proof(bit_identical=False, how="loss[3] differs"))  # a failed check proves nothing
    assert not lineage.valid(rec, tmp_path, "bbbbbbbbbbbb")
    lineage.add(tmp_path, _proof())
    assert lineage.valid(rec, tmp_path, "bbbbbbbbbbbb")
    assert not lineage.valid(rec, tmp_path, "cccccccccccc")  # not for the next code: that needs its own proof
    lineage.add(tmp_path, _proof(**{"from": "bbbbbbbbbbbb", "to": "cccccccccccc"}))
    assert lineage.valid(rec, tmp_path, "cccccccccccc")  # proofs chain
    assert not lineage.valid(_record(device="cuda:0"), tmp_path, "bbbbbbbbbbbb")  # per kind of device
    assert not lineage.valid({**rec, "profile": "full"}, tmp_path, "bbbbbbbbbbbb")  # per profile
    assert not lineage.valid({**rec, "experiment": "f"}, tmp_path, "bbbbbbbbbbbb")  # per experiment


def test_a_bad_ledger_line_is_named(tmp_path):
    with pytest.raises(ValueError, match="missing how"):
        lineage.add(tmp_path, {k: v for k, v in _proof().items() if k != "how"})
    (tmp_path / lineage.LEDGER).write_text(json.dumps({"experiment": "e"}) + "\n")
    with pytest.raises(ValueError, match=f"{lineage.LEDGER}:1: a lineage entry without profile"):
        lineage.entries(tmp_path)


def test_the_committed_check_fails_on_a_constructed_stale_record(tmp_path):
    """The test above can fail: a committed record re-labelled with a version nothing proves."""
    experiment, profile = _committed()[0]
    rec = results.load(experiment, profile, RESULTS)[0]
    rec.code_version = "000000000000"
    assert lineage.stale([rec], RESULTS, code_version())
