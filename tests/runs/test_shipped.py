"""What a pip install carries for a reader with no checkout: tfx.runs.shipped."""
from __future__ import annotations

import gzip
import lzma

import pytest

from tfx.runs import results, shipped, sweep
from tfx.runs.experiment import Experiment

ROOT = shipped.checkout_root()


def test_ship_copies_experiments_and_book_and_full_results_compressed(tmp_path):
    src = tmp_path / "src"
    (src / "experiments").mkdir(parents=True)
    (src / "results").mkdir()
    (src / "experiments" / "a.toml").write_text("seeds = 1\n")
    (src / "results" / "a.book.jsonl").write_text('{"x": 1}\n')
    (src / "results" / "a.full.shard-0-of-2.jsonl").write_text('{"x": 2}\n')
    (src / "results" / "a.quick.jsonl").write_text('{"x": 3}\n')  # made by the tests: not shipped
    sealed = src / "results" / "a.book.20261128T1030Z-0123abcd.jsonl.xz"
    sealed.write_bytes(lzma.compress(b'{"x": 4}\n'))
    written = shipped.ship(src, tmp_path / "one")
    assert sorted(written) == ["experiments/a.toml", "results/a.book.20261128T1030Z-0123abcd.jsonl.xz",
                               "results/a.book.open.jsonl.gz", "results/a.full.shard-0-of-2.open.jsonl.gz"]
    assert gzip.decompress((tmp_path / "one/results/a.book.open.jsonl.gz").read_bytes()) == b'{"x": 1}\n'
    assert (tmp_path / "one/results" / sealed.name).read_bytes() == sealed.read_bytes()  # as it is
    (tmp_path / "two" / "results").mkdir(parents=True)
    (tmp_path / "two" / "results" / "a.book.jsonl.gz").write_bytes(b"an older build's file")
    shipped.ship(src, tmp_path / "two")  # deterministic: the same bytes again, nothing older left
    assert sorted(p.name for p in (tmp_path / "two" / "results").iterdir()) == sorted(
        p.name for p in (tmp_path / "one" / "results").iterdir())
    for name in ("a.book.open.jsonl.gz", "SHA256SUMS"):
        assert (tmp_path / "one/results" / name).read_bytes() == (tmp_path / "two/results" / name).read_bytes()


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """This checkout's experiments and results shipped into a folder, read as an install
    with no checkout would read them."""
    dest = tmp_path / "shipped"
    shipped.ship(ROOT, dest)
    monkeypatch.setattr(shipped, "SHIPPED", dest)
    monkeypatch.setattr(shipped, "checkout_root", lambda: None)
    monkeypatch.chdir(tmp_path)  # ./results does not exist here
    monkeypatch.delenv("TFX_RESULTS", raising=False)
    return dest


def test_an_install_reads_the_shipped_experiments_and_results(installed, tmp_path):
    assert results.default_dir() == tmp_path / "results"
    exp = Experiment.load("warmup")
    assert exp.path == str(installed / "experiments" / "warmup.toml")
    recs = results.load("warmup", "book")
    assert recs and recs == results.read(results.files_for(ROOT / "results", "warmup", "book"))
    assert sweep.load_or_run("warmup", "book") == recs  # read, not run


def test_a_local_results_folder_wins_over_the_shipped_one(installed, tmp_path):
    (tmp_path / "results").mkdir()
    one = next(results.lines(results.files_for(ROOT / "results", "warmup", "book")[0]))[1].strip()
    (tmp_path / "results" / "warmup.book.jsonl").write_text(one + "\n")
    assert len(results.load("warmup", "book")) == 1


def test_a_damaged_shipped_file_is_named(installed):
    f = shipped.shipped_results("warmup", "book")[0]
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(shipped.ShippedDataError, match=str(f)):
        results.load("warmup", "book")


def test_an_unknown_experiment_names_both_places(installed):
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        Experiment.load("nope")
