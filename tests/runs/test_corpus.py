"""Tests of tfx.runs.corpus: the shipped LibreOffice corpus, BPE, batching, IWSLT parsing, BLEU.

Offline: nothing here downloads (the IWSLT loader is tested on a fixture Parquet file).
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

from tfx.runs.corpus import (IWSLT14_NAME, CorpusChecksumError, TranslationTask, bleu, corpus_dir, load_corpus,
                        load_iwslt14, load_iwslt14_task, parse_iwslt_parquet, read_pairs, verify_corpus)
from tfx.nn.batch import BOS, EOS, PAD
from tfx.runs.lm import CHECKSUMS

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "iwslt14_tiny.parquet"
SPLITS = ("train", "valid", "test")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("tfx-cache")


@pytest.fixture(scope="module")
def task(cache) -> TranslationTask:
    return load_corpus(cache_dir=cache)


# --------------------------------------------------------------------------- shipped files
def _listed(d: Path) -> dict:
    """{file name: SHA-256} as the directory's SHA256SUMS lists them."""
    return {name: digest for digest, name in
            (line.split() for line in (d / "SHA256SUMS").read_text(encoding="utf-8").splitlines())}


@pytest.mark.parametrize("name", ["libreoffice-de-en", "libreoffice-de-en-large"])
def test_checksums_are_the_files(name):
    """Every data file is listed, its SHA-256 is the one listed, and verify_corpus returns the
    SHA-256 of SHA256SUMS: the value tfx.runs.lm keys its BPE cache by."""
    d = corpus_dir(name)
    listed = _listed(d)
    assert set(listed) == {f.name for f in d.glob("*.tsv*")}
    for f, digest in listed.items():
        assert hashlib.sha256((d / f).read_bytes()).hexdigest() == digest, f
    whole = hashlib.sha256((d / "SHA256SUMS").read_bytes()).hexdigest()
    assert verify_corpus(d) == whole == CHECKSUMS[d.name]


@pytest.mark.parametrize("name", sorted(_listed(corpus_dir())))
def test_checksum_mismatch_is_reported(tmp_path, name):
    """One byte changed in a copy of one file: the copy verified before, now it fails, naming the file."""
    d = tmp_path / "corpus"
    shutil.copytree(corpus_dir(), d)
    assert verify_corpus(d) == verify_corpus()
    f = d / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01
    f.write_bytes(bytes(data))
    with pytest.raises(CorpusChecksumError, match=rf"{re.escape(str(f))} has SHA-256 [0-9a-f]{{64}}, but "):
        verify_corpus(d)


def test_licence_ships_with_data():
    d = corpus_dir()
    notice = (d / "NOTICE").read_text(encoding="utf-8")
    assert "MPL-2.0" in notice and "The Document Foundation" in notice
    assert "libreoffice-help-de" in notice and "libreoffice-help-en-us" in notice
    assert "Mozilla Public License Version 2.0" in (d / "LICENSE").read_text(encoding="utf-8")
    sizes = sum(f.stat().st_size for f in d.iterdir())
    assert sizes < 2_000_000


def test_sizes_and_no_split_leak():
    pairs = {s: read_pairs(s) for s in SPLITS}
    assert len(pairs["train"]) >= 3500 and len(pairs["valid"]) >= 250 and len(pairs["test"]) >= 250
    manifest = [line.split("\t") for line in
                (corpus_dir() / "files.tsv").read_text(encoding="utf-8").splitlines()]
    split_of = {}
    for split, path, n in manifest:
        assert split_of.setdefault(path, split) == split, f"{path} is in two splits"
    for s in SPLITS:  # the manifest accounts for every pair
        assert sum(int(n) for sp, _, n in manifest if sp == s) == len(pairs[s])
    for side in (0, 1):  # no sentence (either language) in two splits, none repeated
        seen = Counter(p[side] for s in SPLITS for p in pairs[s])
        assert max(seen.values()) == 1
    for s in SPLITS:
        for de, en in pairs[s]:
            assert 3 <= len(de.split()) <= 64 and 3 <= len(en.split()) <= 64 and de != en


def test_html_pairing(tmp_path):
    """The script pairs paragraphs by (path, id, occurrence) and strips markup."""
    spec = importlib.util.spec_from_file_location("make_corpus", ROOT / "scripts" / "make_corpus.py")
    mc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mc)
    page = ('<html><body><h1 id="hd_id1">{h}</h1><p id="par_id2" class="paragraph">{a}</p>'
            '<p id="par_id3" class="code">{c}</p><p id="par_id4">{x}</p></body></html>')
    for lang, h, a, x in (("de", "Eine Überschrift hier", "Klicken Sie <span class='emph'>hier</span>,"
                           "&nbsp;um &quot;X&quot; zu  öffnen.", "Nur auf Deutsch vorhanden"),
                          ("en-US", "A heading here", "Click <b>here</b> to open &quot;X&quot;.", None)):
        f = tmp_path / lang / "text" / "shared" / "a.html"
        f.parent.mkdir(parents=True)
        f.write_text(page.format(h=h, a=a, c="x = 1 + 2 + 3", x=x or ""), encoding="utf-8")
    pages = mc.pair_pages(tmp_path)
    assert pages == {"shared/a.html": [("Eine Überschrift hier", "A heading here"),
                                       ('Klicken Sie hier, um "X" zu öffnen.', 'Click here to open "X".')]}


# --------------------------------------------------------------------------- BPE and the task
def test_task_protocol(task):
    assert task.src_vocab == task.tgt_vocab == 4000
    assert task.max_len == 64 and task.name == "libreoffice-de-en"
    assert 0 < task.chance_loss < math.log(task.tgt_vocab)
    text = task.decode(task.batch(0, 1).tgt[0])
    assert isinstance(text, str) and text


def test_lengths_within_max_len(task):
    short = TranslationTask("short", task.pairs, task.sp_model_path, max_len=16)
    for t in (task, short):
        for split in SPLITS:
            for b in t.eval_batches(512, split):
                assert b.src.shape[1] <= t.max_len and b.tgt.shape[1] <= t.max_len
                assert (b.tgt[:, 0] == BOS).all()
                for row, n in ((b.src, (b.src != PAD).sum(1)), (b.tgt, (b.tgt != PAD).sum(1))):
                    assert (row[torch.arange(len(row)), n - 1] == EOS).all()  # EOS right before padding
    assert sum(b.src.shape[0] for b in task.eval_batches(100, "valid")) == task.size("valid")
    assert len(task.eval_batches(100, "valid", max_batches=2)) == 2


def test_batches_deterministic(task, cache):
    b1, b2 = task.batch(7, 16), task.batch(7, 16)
    assert torch.equal(b1.src, b2.src) and torch.equal(b1.tgt, b2.tgt)
    again = load_corpus(cache_dir=cache).batch(7, 16)  # a fresh task, same seed
    assert torch.equal(b1.src, again.src) and torch.equal(b1.tgt, again.tgt)
    assert not torch.equal(task.batch(8, 16).tgt[:, :5], b1.tgt[:, :5])
    other = load_corpus(cache_dir=cache, seed=1).batch(7, 16)
    assert not torch.equal(other.tgt[:, :5], b1.tgt[:, :5])
    # valid/test are sequential: batch(step) is the step-th eval batch
    v = task.batch(1, 32, "valid")
    assert torch.equal(v.tgt, task.eval_batches(32, "valid")[1].tgt)


def test_one_epoch_is_a_permutation(task):
    n = task.size("train")
    epoch = task.batch(0, n)
    every = task.eval_batches(n, "train")[0]
    key = lambda b: Counter(tuple(r[r != PAD].tolist()) for r in b.tgt)  # noqa: E731
    assert key(epoch) == key(every)
    assert not torch.equal(epoch.tgt[:50], every.tgt[:50])  # shuffled
    assert not torch.equal(task.batch(1, n).tgt[:50], epoch.tgt[:50])  # reshuffled each epoch


def test_chance_loss_is_target_unigram_entropy(task):
    toks = torch.cat([b.tgt[:, 1:][b.tgt[:, 1:] != PAD] for b in task.eval_batches(1024, "train")])
    p = torch.bincount(toks).double()
    p = p[p > 0] / p.sum()
    assert task.chance_loss == pytest.approx(float(-(p * p.log()).sum()), rel=1e-9)


def test_decode_roundtrip(task):
    text = "Click here to open the dialog."
    assert task.decode(task.encode(text, "tgt")) == text
    assert task.decode(task.encode(text, "src"), side="src") == text


def test_bpe_cache_hit_and_deterministic(task, cache, tmp_path, monkeypatch):
    import sentencepiece as spm

    def no_training(*a, **k):
        raise AssertionError("BPE was retrained despite a cached model")

    monkeypatch.setattr(spm.SentencePieceTrainer, "train", no_training)
    cached = load_corpus(cache_dir=cache)  # must not train
    assert cached.sp_model_path == task.sp_model_path
    monkeypatch.undo()
    fresh = load_corpus(cache_dir=tmp_path)  # a second, independent training
    assert fresh.sp_model_path.read_bytes() == task.sp_model_path.read_bytes()
    other = load_corpus(cache_dir=cache, vocab_size=1000)
    assert other.sp_model_path != task.sp_model_path and other.tgt_vocab == 1000


def test_bad_arguments(task):
    with pytest.raises(ValueError, match="name="):
        load_corpus("wmt14")
    with pytest.raises(ValueError, match="load_iwslt14_task"):  # IWSLT'14 is not a shipped corpus
        load_corpus("iwslt14-de-en")
    with pytest.raises(ValueError, match="split="):
        task.batch(0, 4, "dev")
    with pytest.raises(ValueError, match="split="):
        load_iwslt14("dev")


# --------------------------------------------------------------------------- IWSLT'14 parsing
def test_iwslt_parser_on_fixture():
    pytest.importorskip("pyarrow")
    pairs = parse_iwslt_parquet(FIXTURE)
    assert len(pairs) == 5
    assert pairs[0] == ("wir haben ein problem mit dem wasser .", "we have a problem with the water .")
    assert pairs[1][1] == "that 's a really good question ."  # Moses escapes undone
    assert parse_iwslt_parquet(FIXTURE, unescape=False)[1][1] == "that &apos;s a really good question ."


def test_iwslt_parser_flat_columns_and_errors(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"de": ["hallo welt .", " "], "en": ["hello world .", "x"]}), tmp_path / "flat.parquet")
    assert parse_iwslt_parquet(tmp_path / "flat.parquet") == [("hallo welt .", "hello world .")]
    pq.write_table(pa.table({"text": ["a"]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="translation"):
        parse_iwslt_parquet(tmp_path / "bad.parquet")


def test_iwslt_missing_extra_is_explained(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"tfx-book\[full\]"):
        parse_iwslt_parquet(FIXTURE)


# --------------------------------------------------------------------------- BLEU
def test_bleu():
    import sacrebleu

    refs = ["The cat sat on the mat.", "Click OK to close the dialog."]
    assert bleu(refs, refs) == pytest.approx(100.0)
    hyps = ["The cat is on the mat.", "Click OK to close this dialog."]
    assert bleu(hyps, refs) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert 0 < bleu(hyps, refs) < 100
    with pytest.raises(ValueError):
        bleu(hyps, refs[:1])


def test_iwslt_loader_plumbing_without_network(monkeypatch, tmp_path):
    """load_iwslt14 / load_iwslt14_task with a stand-in for huggingface_hub (no download)."""
    pytest.importorskip("pyarrow")
    import types

    calls = []
    hub = types.ModuleType("huggingface_hub")
    hub.list_repo_files = lambda repo, repo_type=None, revision=None: [
        "README.md", "de-en/train/0000.parquet", "de-en/validation/0000.parquet",
        "de-en/test/0000.parquet", "de-en/train/index.duckdb"]

    def download(repo, filename, repo_type=None, revision=None, cache_dir=None):
        calls.append((repo, filename, repo_type, revision))
        return str(FIXTURE)

    hub.hf_hub_download = download
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    assert len(load_iwslt14("valid")) == 5
    assert calls == [("bbaaaa/iwslt14-de-en-preprocess", "de-en/validation/0000.parquet",
                      "dataset", "refs/convert/parquet")]
    t = load_iwslt14_task(vocab_size=60, cache_dir=tmp_path, max_len=32)
    assert t.name == IWSLT14_NAME == "iwslt14-de-en"  # History.task of an IWSLT'14 run
    assert t.size("train") == t.size("test") == 5 and t.tgt_vocab == 60
    assert t.batch(0, 3).src.shape[0] == 3


# --------------------------------------------------------------------------- batching by token count
def test_token_batches_fit_cover_and_pad_little(task):
    """fairseq's max_tokens: every batch's padded size ≤ max_tokens, each example once, and far
    less padding than batches of as many random sentences."""
    batches = task.token_batches(1024)
    assert sorted(i for b in batches for i in b) == list(range(task.size("train")))
    padded = real = 0
    for rows in batches:
        b = task._collate("train", rows)
        assert max(b.src.shape[1], b.tgt.shape[1]) * len(rows) <= 1024 or len(rows) == 1
        padded += b.src.numel() + b.tgt.numel()
        real += int((b.src != PAD).sum() + (b.tgt != PAD).sum())
    n = sum(map(len, batches)) // len(batches)
    rnd = [task.batch(s, n) for s in range(len(batches))]
    rnd_padded = sum(b.src.numel() + b.tgt.numel() for b in rnd)
    rnd_real = sum(int((b.src != PAD).sum() + (b.tgt != PAD).sum()) for b in rnd)
    assert 1 - real / padded < 0.1 and 1 - rnd_real / rnd_padded > 0.4  # 7 % against 61 % on this corpus


def test_token_batches_are_a_function_of_seed_and_step(task, cache):
    one = [task.batch(s, max_tokens=1024) for s in range(3)]
    again = load_corpus(cache_dir=cache).batch(1, max_tokens=1024)
    assert torch.equal(one[1].tgt, again.tgt) and not torch.equal(one[0].tgt[:1, :3], one[1].tgt[:1, :3])
    n = len(task.token_batches(1024))
    epoch0 = {tuple(task.batch(s, max_tokens=1024).tgt[0].tolist()) for s in range(n)}
    assert len(epoch0) == n  # one epoch visits every batch once, in a shuffled order
    assert [tuple(task.batch(s, max_tokens=1024).tgt[0].tolist()) for s in range(n, n + 5)] != \
           [tuple(task.batch(s, max_tokens=1024).tgt[0].tolist()) for s in range(5)]
    with pytest.raises(ValueError, match="batch_size or max_tokens"):
        task.batch(0, 8, max_tokens=1024)
    with pytest.raises(ValueError, match="max_tokens"):
        task.token_batches(0)
