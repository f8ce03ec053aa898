"""Records that carry forward: keep a sweep's records valid across a change of the code that
trains, when the change leaves their numbers as they were, without rewriting a record.

A record is current when its ``code_version`` is this code's (:func:`tfx.runs.codeversion.code_version`);
a rerun of the sweep retrains every other. Many changes to the training code change no
number (a refactor, a new option that is off, a faster kernel doing the same arithmetic), and
retraining a whole sweep to find that out costs hours. So for each experiment, profile and
older code version in its records, :func:`carry_forward` retrains a sample of that version's
runs under the current code and compares each with its record, every number of the history
included, and writes what it found to the lineage ledger (:mod:`tfx.runs.lineage`):

* all match bit for bit: a proof that the old version gives the current numbers; its records
  are valid as they stand (a chapter's provenance line names the versions);
* one differs: the check is written down as failed, the runs that differ are named with their
  first differing field, and the records stay stale until the sweep reruns them.

A sample can only vouch for what it exercises, so it is drawn per experiment (whose runs share
a task, a model family and a recipe) and spread over its records.

Two CPUs can disagree in the last bit (their matrix kernels sum in another order), so a record
made on another machine may not be reproduced here even by the code that made it. Given a
copy of that code (``--reference DIR``, a folder holding its ``tfx/``: ``git archive COMMIT
tfx``), each sampled run is also retrained here under it: when the old and the current code
give bit-identical histories on this machine, the change of code changed no number, and the
proof says so ("how"). Records made on another kind of device (a GPU's, checked on a CPU) cannot
be retrained here; with ``--reference`` and ``--arithmetic-steps K``, their sampled runs are
retrained here on this device for their first K steps under the old and the new code, and
bit-identical histories prove that the change left the arithmetic of those runs as it was (the
proof's "how" says it is one of arithmetic, not a re-made record). Records whose version is
already proven equivalent to one given as a reference are checked from that one: one check
from it to the current code proves them all (the ledger's chain does the rest). Only the numbers the record
holds are compared: a field the current trainer adds (a new probe) stays absent from an old
record.

    python -m tfx.sweep experiments/lm experiments/logits --carry-forward --sample 2 \
        --reference /tmp/code-5ac45931cc80
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

from . import lineage, results
from .codeversion import code_version
from .results import Record

# what may differ between a record and its retrained copy: when and how fast it ran, and
# the bookkeeping that names the code
_VOLATILE = ("wall_time", "finished_at", "code_version", "key", "carried_from")


def comparable(d: dict) -> str:
    """A record dict as the reader sees it, without :data:`_VOLATILE` fields, as canonical
    JSON text (floats written exactly, NaN as NaN): equal texts are bit-identical records."""
    r = Record.from_dict(d).to_dict()
    for k in _VOLATILE:
        r.pop(k, None)
    r["history"] = {k: v for k, v in r["history"].items() if k != "wall_time"}
    return json.dumps(r, sort_keys=True, default=str)


_NOT_NUMBERS = ("wall_time", "model_config", "train_config", "status", "reason")


def _numbers(history: dict, fields=None) -> dict:
    """What a history measured (every list and number), on ``fields`` (default: its own)."""
    keys = fields if fields is not None else history
    return {k: history.get(k) for k in keys if k not in _NOT_NUMBERS}


def same_numbers(a: dict, b: dict, fields=None) -> bool:
    """Two histories bit-identical on ``fields`` (default: ``a``'s): the same floats, NaN
    where NaN (compared as exact JSON text)."""
    fields = fields if fields is not None else a
    return json.dumps(_numbers(a, fields), sort_keys=True) == json.dumps(_numbers(b, fields), sort_keys=True)


def first_difference(a: dict, b: dict, fields=None) -> str:
    """The first field (``loss[17]``-style) where two histories differ, for a reader."""
    fields = fields if fields is not None else a
    x, y = json.loads(json.dumps(_numbers(a, fields))), json.loads(json.dumps(_numbers(b, fields)))

    def walk(u, v, where):
        if isinstance(u, dict) and isinstance(v, dict):
            for k in sorted(set(u) | set(v)):
                w = walk(u.get(k), v.get(k), f"{where}.{k}" if where else k)
                if w:
                    return w
        elif isinstance(u, list) and isinstance(v, list):
            if len(u) != len(v):
                return f"{where} (length {len(u)} recorded, {len(v)} now)"
            for i, (p, q) in enumerate(zip(u, v)):
                w = walk(p, q, f"{where}[{i}]")
                if w:
                    return w
        elif u != v and not (isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v)):
            return f"{where}: {u!r} recorded, {v!r} now"
        return ""

    return walk(x, y, "") or "(no difference)"


def retrain_here(d: dict) -> dict:
    """The history the current code trains for record ``d`` (:mod:`tfx.runs.retrain`)."""
    from .retrain import retrain

    return json.loads(json.dumps(retrain(d)))


def retrain_under(reference, d: dict) -> dict:
    """The history the copy of tfx in ``reference`` trains for record ``d``, in a subprocess
    (a copy of this retrain module run as a script, with that copy of tfx on ``sys.path``)."""
    with tempfile.TemporaryDirectory(prefix="tfx-carry-") as tmp:
        src, out, script = Path(tmp) / "record.json", Path(tmp) / "history.json", Path(tmp) / "retrain.py"
        src.write_text(json.dumps(d))
        script.write_text(Path(__file__).with_name("retrain.py").read_text())  # run beside nothing of ours
        env = dict(os.environ, PYTHONPATH=str(Path(reference).resolve()))
        subprocess.run([sys.executable, str(script), str(src), str(out)],
                       cwd=tmp, env=env, check=True, capture_output=True, text=True)
        return json.loads(out.read_text())


def reference_version(reference) -> str:
    """The code version an older copy of tfx (a folder holding ``tfx/``) stamps on its records,
    as that copy computes it."""
    ref = Path(reference)
    if not (ref / "tfx" / "__init__.py").exists():
        raise ValueError(f"reference={str(reference)!r} must be a folder holding an older tfx/ "
                         "(e.g. made by: git archive COMMIT tfx | tar -x -C FOLDER)")
    code = "from tfx.runs import sweep; print(sweep.code_version())"
    env = dict(os.environ, PYTHONPATH=str(ref.resolve()))
    done = subprocess.run([sys.executable, "-c", code], cwd=tempfile.gettempdir(), env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


def spread(items: list, k: int) -> list:
    """``k`` items spread evenly over ``items`` (first and last included), in order."""
    if k >= len(items):
        return list(items)
    if k == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


def _device_kind(device: str) -> str:
    return str(device).split(":")[0]


def carry_forward(experiment, profile=None, results_dir=None, sample: int = 2, references=(), log=None,
                  arithmetic_steps: int | None = None) -> list[dict]:
    """Check the stale records of ``experiment`` in ``profile`` (module docstring) and write each
    check to the lineage ledger of ``results_dir``.

    Returns one report per (older code version, kind of device of its records): ``{"file"
    (the ledger), "from", "records", "checked" (labels and seeds retrained), "carried" (records
    made valid, 0 if not), "differ" (['label seed s: field …'])}``, and ``"why"`` when nothing
    could be checked. ``references``: folders holding older copies of tfx (module docstring);
    ``arithmetic_steps``: for records made on another kind of device, retrain that many steps
    of each sampled run here under the old and the new code (needs the old one's reference)."""
    from .experiment import Experiment
    from .sweep import plan

    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample={sample!r} must be an integer ≥ 1")
    if arithmetic_steps is not None and (isinstance(arithmetic_steps, bool) or not isinstance(arithmetic_steps, int)
                                         or arithmetic_steps < 1):
        raise ValueError(f"arithmetic_steps={arithmetic_steps!r} must be an integer ≥ 1 (or None)")
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    exp = experiment if isinstance(experiment, Experiment) else Experiment.load(experiment)
    now = code_version()
    refs = {reference_version(r): Path(r) for r in references}
    reports = []
    p = plan(exp, profile, results_dir)
    folder = Path(p["out"]).parent
    ledger = lineage.entries(folder)
    names = {(run.label, run.seed) for run in exp.runs(p["profile"])}  # the runs the experiment still has
    lines = [json.loads(x) for f in results.files_for(folder, p["experiment"], p["profile"])
             for _, x in results.lines(f) if results.is_whole(x)]
    stale = [d for d in lines if not lineage.valid(d, folder, now, ledger)]

    def kind_of(d):
        return lineage.device_kind(d.get("device", ""))

    def via(old: str, kind: str) -> str:
        """The version the check starts from: ``old``, or a version with a reference whose proofs
        already cover ``old`` (then one check, from it, proves the records of every version
        chained to it: 1ae5… → 070e… proven, and 070e… → now checked, makes 1ae5… valid)."""
        if old in refs:
            return old
        return next((v for v in sorted(refs)
                     if old in lineage.proven(folder, p["experiment"], p["profile"], kind, v, ledger)), old)

    start = {(d["code_version"], kind_of(d)): via(d["code_version"], kind_of(d)) for d in stale}
    for old, kind in sorted({(start[d["code_version"], kind_of(d)], kind_of(d)) for d in stale}):
        group = sorted((d for d in stale if start[d["code_version"], kind_of(d)] == old and kind_of(d) == kind),
                       key=lambda d: (bool(d.get("fixture")), d.get("index", 0)))
        reports.append(_carry_group(folder, p, old, kind, group, names, sample, now, refs.get(old), log,
                                    arithmetic_steps))
    return reports


def _name(d: dict) -> tuple:
    """What names a run in its experiment: its label and seed."""
    return d.get("label"), d.get("seed")


def _truncated(d: dict, steps: int, device: str) -> dict:
    """Record ``d`` as a run of its first ``steps`` steps on ``device``: what an arithmetic proof retrains."""
    tc = {**d["train_config"], "steps": min(steps, d["train_config"]["steps"]), "device": device}
    return {**d, "train_config": tc}


def _carry_group(folder, p, old, kind, group, names, sample, now, reference, log, arithmetic_steps=None) -> dict:
    import torch

    ledger = lineage.ledger_path(folder)
    report = {"file": str(ledger), "from": old, "records": len(group), "checked": [], "carried": 0, "differ": []}
    here = "cuda" if _cuda() else "cpu"
    arithmetic = kind != here
    checkable = [d for d in group if _name(d) in names]
    if arithmetic and (reference is None or arithmetic_steps is None):
        checkable = []
    if not checkable:
        report["why"] = (f"none of its {len(group)} records can be retrained here: made on {kind}, this machine has "
                         f"{here} (an arithmetic proof needs --reference for code {old} and --arithmetic-steps), "
                         "or their runs are no longer in the experiment" if arithmetic else
                         f"none of its {len(group)} records' runs are in the experiment any more")
        log(f"{p['experiment']}.{p['profile']}: code {old} ({kind}): {report['why']}; left stale")
        return report
    how = set()
    for d in spread(checkable, sample):
        name = f"{d['label']} seed {d['seed']}"
        report["checked"].append(name)
        if arithmetic:
            log(f"{p['experiment']}.{p['profile']}: code {old} → {now}: {name}, first {arithmetic_steps} steps on "
                f"{here} under both ...")
            t = _truncated(d, arithmetic_steps, here)
            new, ref = retrain_here(t), retrain_under(reference, t)
            if same_numbers(ref, new):
                how.add(f"old and new code bit-identical on {here} over the first {arithmetic_steps} steps of the "
                        f"sampled runs (an arithmetic proof: the records, made on {kind}, were not re-made)")
            else:
                report["differ"].append(f"{name}: old code vs new code on {here}: {first_difference(ref, new)}")
            continue
        log(f"{p['experiment']}.{p['profile']}: code {old} → {now}: retraining {name} ...")
        new = retrain_here(d)
        if same_numbers(d["history"], new):
            how.add("reproduced the record")
            continue
        if reference is None:
            report["differ"].append(f"{name}: {first_difference(d['history'], new)} (no --reference for code {old} "
                                    "to tell a change of code from a change of machine)")
            continue
        ref = retrain_under(reference, d)
        if same_numbers(ref, new, fields=d["history"]):  # the change of code changed no number
            how.add("reproduced the record" if same_numbers(d["history"], ref) else
                    "old and new code bit-identical on this machine, whose kernels differ in the last bit "
                    "from the recording machine's")
        else:
            report["differ"].append(f"{name}: old code here vs new code here: "
                                    f"{first_difference(ref, new, fields=d['history'])}")
    ok = not report["differ"]
    lineage.add(folder, {
        "experiment": p["experiment"], "profile": p["profile"], "from": old, "to": now, "records_device": kind,
        "checked": report["checked"], "bit_identical": ok,
        "how": " / ".join(sorted(how)) if ok else "; ".join(report["differ"]),
        "date": date.today().isoformat(), "device": here, "torch": torch.__version__,
        })
    if not ok:
        log(f"{p['experiment']}.{p['profile']}: code {old}: {len(report['differ'])} of {len(report['checked'])} "
            f"retrained runs differ, so its {len(group)} records stay stale: " + "; ".join(report["differ"]))
        return report
    report["carried"], report["how"] = len(group), " / ".join(sorted(how))
    log(f"{p['experiment']}.{p['profile']}: code {old} → {now}: {len(report['checked'])} retrained runs "
        f"bit-identical ({report['how']}); {len(group)} records proven valid ({ledger.name})")
    return report


def main(argv=None) -> int:
    """``python -m tfx.sweep experiments/NAME [NAME …] --carry-forward [--profile P] [--results DIR]
    [--sample K] [--reference DIR …]``: exit 1 when a retrained run differs from its record."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tfx.sweep … --carry-forward", description=__doc__.split("\n")[0])
    ap.add_argument("experiments", nargs="+", metavar="experiment", help="experiments/NAME or its .toml")
    ap.add_argument("--carry-forward", action="store_true", help="this command (how tfx.sweep hands it over)")
    ap.add_argument("--profile", choices=("quick", "book", "full"), default=None,
                    help="default: $TFX_PROFILE, else full with CUDA, book without")
    ap.add_argument("--results", default=None, help="results folder (default: results/ of the checkout)")
    ap.add_argument("--sample", type=int, default=2, help="runs retrained per results file and older code version")
    ap.add_argument("--reference", action="append", default=[], metavar="DIR",
                    help="a folder holding the older tfx/ that made some records (git archive COMMIT tfx | "
                         "tar -x -C DIR), to tell a change of code from a change of machine; repeatable")
    ap.add_argument("--arithmetic-steps", type=int, default=None, metavar="K",
                    help="records made on another kind of device: retrain K steps of the sampled runs here under "
                         "the old (--reference) and the new code, and compare them")
    args = ap.parse_args(argv)
    try:
        reports = [r for exp in args.experiments
                   for r in carry_forward(exp, args.profile, args.results, args.sample, args.reference,
                                          arithmetic_steps=args.arithmetic_steps)]
    except (ValueError, FileNotFoundError, subprocess.CalledProcessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stale = [r for r in reports if not r["carried"]]
    print(f"carry-forward: {sum(r['carried'] for r in reports)} records proven valid, "
          f"{sum(r['records'] for r in stale)} left stale", file=sys.stderr)
    return 1 if any(r["differ"] for r in reports) else 0


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
