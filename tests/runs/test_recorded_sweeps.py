"""The recorded sweeps the book reads meet the standard of a training verdict
(../shared/claims.md, "How a training claim is checked"): ≥ 5 seeds in every cell, and a
learning-rate grid that brackets each group's best rate (≥ 90 % of the groups of a sweep).

A sweep still being re-recorded is listed in PENDING with why; the test then checks that it
really is short (so the list cannot outlive the work), and fails once it is done: take it off."""
from __future__ import annotations

import collections
from pathlib import Path

import pytest

from tfx.runs import effects, results
from tfx.runs.effects import MIN_SEEDS

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted(p.name.split(".")[0] for p in (ROOT / "results").glob("*.book.jsonl"))
BRACKETED_SHARE = 0.9

# experiment -> why it is not yet at the standard (seeds, bracket)
PENDING_SEEDS = {
    "lr-sensitivity": "seeds 3 and 4 being recorded",
    "warmup-axis": "seeds 3 and 4 queued",
    "lm": "seeds 3 and 4 and the 3e-4 column queued",
    "logits": "seeds 3 and 4 queued",
    "norms": "seeds 3 and 4 and DY-1's controls queued",
    "placements": "seeds 3 and 4 queued",
    "translation": "seeds 3 and 4 queued behind the cheaper sweeps (≈ 100 s a run)",
}
PENDING_BRACKET = {
    "lm": "Post-LN's best rate is the grid's lowest; 3e-4 queued",
    "placements": "Peri-LN's and the output norm's best rate is the highest, Post-LN's the lowest; "
                  "1e-1 and 3e-4 not yet added",
    "translation": "two rates only: every group's best sits at an edge; a wider grid not yet added",
}


def _cells(recs) -> dict:
    out = collections.defaultdict(set)
    for r in recs:
        out[tuple(sorted(r.point.items()))].add(r.seed)
    return out


@pytest.mark.parametrize("name", RECORDED)
def test_every_cell_has_at_least_five_seeds(name):
    cells = _cells(results.load(name, "book", ROOT / "results"))
    short = {k: len(v) for k, v in cells.items() if len(v) < MIN_SEEDS}
    if name in PENDING_SEEDS:
        assert short, f"{name} has ≥ {MIN_SEEDS} seeds in every cell now: take it off PENDING_SEEDS"
    else:
        assert not short, f"results/{name}.book.jsonl: cells with fewer than {MIN_SEEDS} seeds: {short}"


@pytest.mark.parametrize("name", RECORDED)
def test_learning_rate_grids_bracket_each_groups_best_rate(name):
    recs = results.load(name, "book", ROOT / "results")
    axes = {k for r in recs for k in r.point}
    if not axes & {"lr", "train.lr"}:
        pytest.skip(f"{name} has no learning-rate axis")
    groups = effects.groups(recs)
    edge = effects.unbracketed(recs)
    ok = 1 - len(edge) / len(groups)
    if name in PENDING_BRACKET:
        assert ok < BRACKETED_SHARE, f"{name} brackets {ok:.0%} of its groups now: take it off PENDING_BRACKET"
    else:
        assert ok >= BRACKETED_SHARE, f"results/{name}.book.jsonl: best rate at the grid's edge in {edge}"
