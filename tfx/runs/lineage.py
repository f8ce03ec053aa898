"""Which code versions give the same numbers: a ledger of proofs, instead of re-stamping records.

A record keeps the code version that made it (:mod:`tfx.runs.codeversion`), for good. When the
training code changes, an experiment's older records stay valid only where the change changed
none of their numbers. :mod:`tfx.runs.carry` finds out by retraining a sample of them under the
new code, and writes what it found here, one JSON line per check, in ``results/LINEAGE.jsonl``::

    {"experiment": "lm", "profile": "book", "from": "1ae5163d19d8", "to": "7beb529fcb9e",
     "records_device": "cpu", "checked": ["Pre-LN · lr=1e-3 seed 0", …], "bit_identical": true,
     "how": "reproduced the record", "date": "2026-11-28", "device": "cpu", "torch": "2.13.0+cpu"}

A check whose retrained runs all matched their records bit for bit (``bit_identical``) proves
``from`` ≡ ``to`` for that experiment, profile and kind of device; one that found a difference is
kept too (what was tried, and that it failed), and proves nothing. A record is **valid** when its
version is the current one, or when proofs for its experiment, profile and device lead from its
version to the current one (:func:`valid`); otherwise it is **stale**, and
``tests/runs/test_lineage.py`` fails while a committed record is. Records re-stamped by the
carry-forward of earlier versions of tfx (their ``carried_from``) are current by their stamp.

Standard library only, like :mod:`tfx.runs.results`' reading side.
"""
from __future__ import annotations

import json
from pathlib import Path

LEDGER = "LINEAGE.jsonl"
FIELDS = ("experiment", "profile", "from", "to", "records_device", "checked", "bit_identical", "how",
          "date", "device", "torch")


def device_kind(device: str) -> str:
    """'cuda' for 'cuda:0', 'cpu' for 'cpu': proofs hold per kind of device."""
    return str(device).split(":")[0]


def ledger_path(results_dir) -> Path:
    return Path(results_dir) / LEDGER


def entries(results_dir) -> list[dict]:
    """Every check in the ledger of ``results_dir``, oldest first ([] without a ledger). A line
    missing a field raises ValueError naming the file, the line and the field."""
    path = ledger_path(results_dir)
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        d = json.loads(line)
        missing = [f for f in FIELDS if f not in d]
        if missing:
            raise ValueError(f"{path}:{n}: a lineage entry without {', '.join(missing)} (fields: {', '.join(FIELDS)})")
        out.append(d)
    return out


def add(results_dir, entry: dict) -> None:
    """Append one check to the ledger (atomically, as :func:`tfx.runs.results.append` appends)."""
    from .results import append

    missing = [f for f in FIELDS if f not in entry]
    if missing:
        raise ValueError(f"entry: missing {', '.join(missing)} (fields: {', '.join(FIELDS)})")
    append(ledger_path(results_dir), {f: entry[f] for f in FIELDS})


def proven(results_dir, experiment: str, profile: str, records_device: str, current: str,
           ledger: list[dict] | None = None) -> set[str]:
    """The code versions whose records of ``experiment`` in ``profile`` (made on a device of kind
    ``records_device``) are proven to give the numbers ``current`` gives: ``current`` itself and
    every version a chain of bit-identical checks leads from to it. ``ledger``: the entries,
    if already read."""
    edges = [(e["from"], e["to"]) for e in (entries(results_dir) if ledger is None else ledger)
             if e["bit_identical"] and e["experiment"] == experiment and e["profile"] == profile
             and e["records_device"] == records_device]
    good, grew = {current}, True
    while grew:
        new = {a for a, b in edges if b in good} - good
        good |= new
        grew = bool(new)
    return good


def valid(record, results_dir, current: str, ledger: list[dict] | None = None) -> bool:
    """Whether ``record`` (a Record or its dict) is current or proven equivalent to ``current``."""
    if _get(record, "code_version") == current:
        return True
    return _get(record, "code_version") in proven(results_dir, _get(record, "experiment"), _get(record, "profile"),
                                                   device_kind(_get(record, "device") or ""), current, ledger)


def stale(records, results_dir, current: str) -> list[str]:
    """'experiment.profile label seed s (code v, device d)' for every record of ``records``
    that is neither current nor proven equivalent: what a chapter must not read."""
    ledger = entries(results_dir)
    return [f"{_get(r, 'experiment')}.{_get(r, 'profile')} {_get(r, 'label')} seed {_get(r, 'seed')} "
            f"(code {_get(r, 'code_version')}, device {_get(r, 'device')})"
            for r in records if not valid(r, results_dir, current, ledger)]


def _get(r, k):
    return r.get(k) if isinstance(r, dict) else getattr(r, k, None)
