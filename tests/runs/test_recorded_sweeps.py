"""The recorded sweeps the book reads meet the standard of a training verdict
(book/method.md, "Evidence that can fail"): ≥ 5 seeds in every cell, and a
learning-rate grid that brackets each group's best rate (≥ 90 % of the groups of a sweep).

A sweep still being re-recorded is listed in PENDING with why; the test then checks that it
really is short (so the list cannot outlive the work), and fails once it is done: take it off."""
from __future__ import annotations

import collections
from pathlib import Path

import pytest

from tfx.runs import effects, results
from tfx.runs.effects import MIN_SEEDS

import pending_records  # tests/pending_records.py: the sweeps still being recorded

ROOT = Path(__file__).resolve().parents[2]
# every experiment with book records, in open batches (NAME.book.jsonl) or sealed ones
# (NAME.book.STAMP.jsonl.xz): tfx.runs.results.files_for reads both
RECORDED = sorted({p.name.split(".")[0] for p in (ROOT / "results").glob("*.book*.jsonl*")})
BRACKETED_SHARE = 0.9

PENDING_SEEDS = pending_records.SEEDS
PENDING_BRACKET = pending_records.BRACKET


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
    if name in RATES_FROM:
        pytest.skip(f"{name} runs rates picked from {RATES_FROM[name][0]}'s bracketed grid (tested below)")
    if name in FRESH_CELLS_OF:
        pytest.skip(f"{name} reruns cells of {FRESH_CELLS_OF[name]}'s grid on fresh seeds (tested below)")
    if name in RECIPE_RATE_FROM:
        pytest.skip(f"{name} runs its recipe's best rate from {RECIPE_RATE_FROM[name][0]}'s bracketed grid "
                    "and a multiple of it, not a grid (tested below)")
    groups = effects.groups(recs)
    edge = effects.unbracketed(recs)
    ok = 1 - len(edge) / len(groups)
    if name in PENDING_BRACKET:
        assert ok < BRACKETED_SHARE, f"{name} brackets {ok:.0%} of its groups now: take it off PENDING_BRACKET"
    else:
        assert ok >= BRACKETED_SHARE, f"results/{name}.book.jsonl: best rate at the grid's edge in {edge}"


@pytest.mark.parametrize("name", sorted(pending_records.UNRECORDED))
def test_a_sweep_listed_as_unrecorded_has_no_records(name):
    assert name not in RECORDED, f"results/{name}.book.jsonl exists now: take {name} off pending_records.UNRECORDED"


IN_PROGRESS = ROOT / "results" / "in-progress"


def _in_progress_files():
    return sorted(p for p in IN_PROGRESS.glob("*") if p.is_file()) if IN_PROGRESS.is_dir() else []


@pytest.mark.parametrize("path", _in_progress_files(), ids=lambda p: p.name)
def test_a_sweep_in_progress_is_a_pending_one_and_its_records_read(path):
    """results/in-progress/ (results/README.md) holds only the open batch of a book sweep
    tests/pending_records.py lists as unrecorded, whose records read (a torn last line is the
    one thing forgiven: a killed write)."""
    name, profile = path.name.split(".")[:2]
    assert profile == "book", f"{path}: only book sweeps are recorded in progress (quick ones take minutes)"
    assert name in pending_records.UNRECORDED, (
        f"{path}: {name} is not listed in tests/pending_records.py UNRECORDED: a finished sweep's sealed batch "
        "belongs in results/, an unfinished one is listed as pending")
    assert results.read([path]), f"{path}: holds no records"


def test_the_loader_never_reads_a_sweep_in_progress(tmp_path):
    """A record under results/in-progress/ stays out of results.load: a half-recorded sweep never
    reaches a page (the check fails if the loader ever reads subfolders)."""
    import shutil
    files = _in_progress_files() or pytest.skip("no sweep in progress")
    name = files[0].name.split(".")[0]
    (tmp_path / "in-progress").mkdir()
    shutil.copy(files[0], tmp_path / "in-progress" / files[0].name)
    assert results.load(name, "book", tmp_path) == []
    assert results.load(name, "book", tmp_path / "in-progress"), "the same file, read as a results folder, holds records"


# A sweep that is not a learning-rate search: it reruns a few rates picked from another
# sweep's bracketed grid (longer, or at another size). Its bracket is its source's: the rates it
# runs must hold the source's best rate of the architecture it asks about.
# Sweeps that rerun some cells of another sweep's book grid on fresh seeds (the cells a
# registered comparison reads, at its fixed rate: experiments/*-fresh.toml): no grid of their
# own to bracket. The test below checks that each run is one of its parent's cells, seeds aside.
FRESH_CELLS_OF = {"logits-fresh": "logits", "placements-fresh": "placements"}


@pytest.mark.parametrize("name", sorted(FRESH_CELLS_OF))
def test_a_sweep_of_fresh_cells_reruns_its_parents_cells_on_new_seeds(name):
    recs = results.load(name, "book", ROOT / "results")
    if not recs:
        pytest.skip(f"results/{name}.book.jsonl is not recorded yet")
    parent = results.load(FRESH_CELLS_OF[name], "book", ROOT / "results")
    assert not {r.seed for r in recs} & {r.seed for r in parent}, "fresh seeds must be new seeds"
    for r in recs:
        cell = [p for p in parent if p.point == r.point]
        assert cell, f"{name}: {r.point} is not a cell of {FRESH_CELLS_OF[name]}'s book grid"
        assert cell[0].config == r.config, (r.point, "model configs differ")
        assert cell[0].train_config.replace(seed=r.seed) == r.train_config, (r.point, "train configs differ")


RATES_FROM = {
    # 3× longer at 6+6: does Post-LN recover (slow) or plateau (failed)? (chapter 12)
    "long-runs": ("lr-sensitivity", {"depth": "6 layers"}, "Post-LN"),
}


@pytest.mark.parametrize("name", sorted(RATES_FROM))
def test_a_sweep_of_picked_rates_holds_its_sources_best_rate(name):
    source, point, arch = RATES_FROM[name]
    recs = results.load(name, "book", ROOT / "results")
    if not recs:
        pytest.skip(f"results/{name}.book.jsonl is not recorded yet")
    src = results.load(source, "book", ROOT / "results")
    lr_of = lambda rs: {r.train_config.lr for r in rs}  # noqa: E731
    for warmup in sorted({r.point["warmup"] for r in recs}):
        best = effects.best_rate(src, architecture=arch, warmup=warmup, **point)
        assert best.bracketed, f"{source}: {arch}, {warmup}: its best rate is at the grid's edge"
        want = best.lr
        assert want in lr_of(results.select(recs, architecture=arch, warmup=warmup)), (
            f"{name}: {arch}, {warmup}: runs {sorted(lr_of(recs))}, not {source}'s best rate {want}")


# sweeps that run one recipe at its best rate from another sweep's bracketed grid and at a
# multiple of it (the spike zoo: where a spike costs more), not a grid that seeks a best rate
RECIPE_RATE_FROM = {
    "spike-zoo": ("op-warmup-decay", {"recipe": "warmup 40"}),  # chapter 21, SZ-1..3
}


@pytest.mark.parametrize("name", sorted(RECIPE_RATE_FROM))
def test_a_sweep_at_its_recipes_best_rate_runs_that_rate_as_its_lowest(name):
    source, point = RECIPE_RATE_FROM[name]
    recs = results.load(name, "book", ROOT / "results")
    if not recs:
        pytest.skip(f"results/{name}.book.jsonl is not recorded yet")
    best = effects.best_rate(results.load(source, "book", ROOT / "results"), **point)
    assert best.bracketed, f"{source} {point}: its best rate is at the grid's edge"
    assert min(r.train_config.lr for r in recs) == best.lr, (
        f"{name}: lowest rate {min(r.train_config.lr for r in recs)}, not {source}'s best {best.lr}")
