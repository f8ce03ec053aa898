"""What a pip install carries for a reader with no checkout: tfx.runs.shipped."""
from __future__ import annotations

import dataclasses
import json
import lzma
import re
import shutil

import pytest
from hypothesis import given, strategies as st

from tfx.runs import results, shipped, sweep
from tfx.runs.experiment import Experiment

ROOT = shipped.checkout_root()


def test_ship_copies_experiments_and_book_and_full_results_thinned(tmp_path):
    src = tmp_path / "src"
    (src / "experiments").mkdir(parents=True)
    (src / "results").mkdir()
    (src / "experiments" / "a.toml").write_text("seeds = 1\n")
    (src / "results" / "a.book.jsonl").write_text('{"x": 1}\n')
    (src / "results" / "a.full.shard-0-of-2.jsonl").write_text('{"x": 2}\n{"torn":\n')
    (src / "results" / "a.quick.jsonl").write_text('{"x": 3}\n')  # made by the tests: not shipped
    sealed = src / "results" / "a.book.20261128T1030Z-0123abcd.jsonl.xz"
    history = {"step": [1, 2], "loss": [2.5, 0.1 + 0.2], "acc": [0.1, 0.2], "log_z_absmax": [7.6, 7.7]}
    sealed.write_bytes(lzma.compress(json.dumps({"x": 4, "history": history}).encode() + b"\n"))
    written = shipped.ship(src, tmp_path / "one")
    assert sorted(written) == ["experiments/a.toml", "results/a.book.20261128T1030Z-0123abcd.jsonl.xz",
                               "results/a.book.open.jsonl.xz", "results/a.full.shard-0-of-2.open.jsonl.xz"]
    out = tmp_path / "one" / "results"
    assert lzma.decompress((out / "a.book.open.jsonl.xz").read_bytes()) == b'{"x":1}\n'
    # a torn line stays, for the reader to skip and name
    assert lzma.decompress((out / "a.full.shard-0-of-2.open.jsonl.xz").read_bytes()) == b'{"x":2}\n{"torn":\n'
    # the unread per-step lists are left out; every other number is the same float
    thinned = json.loads(lzma.decompress((out / sealed.name).read_bytes()))
    assert thinned == {"x": 4, "history": {"step": [1, 2], "loss": [2.5, 0.1 + 0.2]}}
    (tmp_path / "two" / "results").mkdir(parents=True)
    (tmp_path / "two" / "results" / "a.book.jsonl.gz").write_bytes(b"an older build's file")
    shipped.ship(src, tmp_path / "two")  # deterministic: the same bytes again, nothing older left
    assert sorted(p.name for p in (tmp_path / "two" / "results").iterdir()) == sorted(
        p.name for p in out.iterdir())
    for p in out.iterdir():
        assert (tmp_path / "two" / "results" / p.name).read_bytes() == p.read_bytes()


def test_a_second_build_takes_each_thinned_batch_from_the_cache_and_a_changed_batch_is_thinned_again(
        tmp_path, monkeypatch):
    """The cache is keyed by what made a batch: the same batch is copied, not thinned (the same
    bytes as thinning gives), and a batch whose bytes changed is thinned again."""
    src, cache = tmp_path / "src", tmp_path / "cache"
    (src / "experiments").mkdir(parents=True)
    (src / "results").mkdir()
    (src / "results" / "a.book.jsonl").write_text('{"x": 1, "history": {"acc": [0.5]}}\n')
    (src / "results" / "b.book.jsonl").write_text('{"x": 2}\n')
    shipped.ship(src, tmp_path / "one", cache=cache)
    assert len(list(cache.iterdir())) == 2
    shipped.ship(src, tmp_path / "plain", cache=None)  # no cache: thinned afresh
    thinned = []
    real = shipped._thinned
    monkeypatch.setattr(shipped, "_thinned", lambda line: thinned.append(line) or real(line))
    (src / "results" / "b.book.jsonl").write_text('{"x": 3}\n')
    shipped.ship(src, tmp_path / "two", cache=cache)
    assert thinned == ['{"x": 3}\n']  # a's batch came from the cache
    out = {d: {p.name: p.read_bytes() for p in (tmp_path / d / "results").iterdir()} for d in ("one", "plain", "two")}
    assert out["one"] == out["plain"] and out["two"]["a.book.open.jsonl.xz"] == out["one"]["a.book.open.jsonl.xz"]
    assert lzma.decompress(out["two"]["b.book.open.jsonl.xz"]) == b'{"x":3}\n'
    assert len(list(cache.iterdir())) == 3 and not list(cache.glob("*.part"))


def test_the_cache_folder_is_the_checkouts_build_folder_unless_the_environment_names_one(tmp_path, monkeypatch):
    monkeypatch.delenv("TFX_SHIPPED_CACHE", raising=False)
    assert shipped.cache_folder(tmp_path) == tmp_path / "build" / "shipped-cache"
    monkeypatch.setenv("TFX_SHIPPED_CACHE", str(tmp_path / "elsewhere"))
    assert shipped.cache_folder(tmp_path) == tmp_path / "elsewhere"
    monkeypatch.setenv("TFX_SHIPPED_CACHE", "off")
    assert shipped.cache_folder(tmp_path) is None


def test_no_module_or_chapter_reads_what_the_wheel_leaves_out():
    """UNREAD_HISTORY is safe to leave out only while nothing reads it: a module or chapter
    that names one of these lists (``"acc"``, ``'acc'`` or ``.acc``; outside the code that
    records them) fails here."""
    recorders = {"tfx/runs/train.py", "tfx/nn/model.py", "tfx/runs/ensemble.py", "tfx/runs/shipped.py"}
    sources = [p for p in (ROOT / "tfx").rglob("*.py") if p.relative_to(ROOT).as_posix() not in recorders]
    sources += list((ROOT / "book").rglob("*.ipynb")) + list((ROOT / "book").rglob("*.md"))
    for name in shipped.UNREAD_HISTORY:
        pattern = re.compile(rf"(?<=[\"'.]){re.escape(name)}(?!\w)")
        readers = [p.relative_to(ROOT).as_posix() for p in sources if pattern.search(p.read_text(encoding="utf-8"))]
        assert not readers, f"{readers} name history.{name}, which the wheel does not ship: " \
                            "read it from results/ or take it out of shipped.UNREAD_HISTORY"


@pytest.fixture(scope="module")
def shipped_once(tmp_path_factory):
    """This checkout's experiments and its warmup records (what the tests below read) shipped
    once, as a wheel build ships them all (shipping every record takes about a minute)."""
    src = tmp_path_factory.mktemp("checkout")
    shutil.copytree(ROOT / "experiments", src / "experiments")
    (src / "results").mkdir()
    for f in (ROOT / "results").glob("warmup.*"):
        shutil.copyfile(f, src / "results" / f.name)
    dest = tmp_path_factory.mktemp("build") / "shipped"
    shipped.ship(src, dest)
    return dest


@pytest.fixture
def installed(shipped_once, tmp_path, monkeypatch):
    """That shipped folder (a copy each test may damage), read as an install with no
    checkout would read it."""
    dest = tmp_path / "shipped"
    shutil.copytree(shipped_once, dest)
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
    thinned = {name: [] for name in shipped.UNREAD_HISTORY}
    assert recs and recs == [dataclasses.replace(r, history=dataclasses.replace(r.history, **thinned))
                             for r in results.read(results.files_for(ROOT / "results", "warmup", "book"))]
    assert any(r.history.acc for r in results.read(results.files_for(ROOT / "results", "warmup", "book")))
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


def test_float32_lists_ship_short_and_read_back_bit_for_bit():
    """short_floats writes a list whose every float is a float32 value in float32's shortest
    form, and restore_floats rounds it back to the very same numbers; a list with one double that
    is not a float32 (an lr of 1e-3), or with anything but numbers, is left as it is."""
    import struct

    f32 = [struct.unpack("<f", struct.pack("<f", x))[0] for x in (0.6402783393859863, 1e-3, 3.1, 2.0 ** -140)]
    history = {"loss": f32 + [float("nan")], "stream_var": [[f32[0], f32[1]], [f32[2]]], "step": [1, 2],
               "lr": [1e-3, 2e-3], "reason": ["x"], "grad_norm": []}
    line = shipped._thinned(json.dumps({"history": dict(history)}))
    shipped_history = json.loads(line)["history"]
    assert shipped_history[shipped.F32_MARK] == ["loss", "stream_var"]
    assert shipped_history["loss"][0] == 0.64027834 and shipped_history["lr"] == [1e-3, 2e-3]
    assert len(line) < len(json.dumps({"history": history}, separators=(",", ":")))
    back = shipped.restore_floats(json.loads(line))["history"]
    assert set(back) == set(history)
    for name, v in history.items():
        assert json.dumps(back[name]) == json.dumps(v), name  # the same bits (NaN included)
    assert shipped.restore_floats({"history": {"loss": [0.1]}}) == {"history": {"loss": [0.1]}}  # unmarked: as is


@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1))
def test_every_float32_survives_the_short_form(values):
    line = shipped._thinned(json.dumps({"history": {"loss": values}}))
    assert shipped.restore_floats(json.loads(line))["history"]["loss"] == values
