#!/usr/bin/env python3
"""Regenerate the shipped German→English corpora ``tfx/runs/corpora/libreoffice_de_en`` (4k
training pairs) and ``tfx/runs/corpora/libreoffice_de_en_large`` (every pair: ~29k).

Source: the LibreOffice help pages in Debian's ``libreoffice-help-de`` and
``libreoffice-help-en-us`` packages (MPL-2.0, © The Document Foundation and
contributors).  Paragraphs pair up by (relative file path, ``par_id…``/``hd_id…``
id, occurrence) between ``usr/share/libreoffice/help/de/text/**.html`` and
``…/help/en-US/text/**.html``.

Usage (as root, or anywhere ``apt-get download`` works; needs ``dpkg-deb``)::

    python scripts/make_corpus.py            # regenerate the shipped files
    python scripts/make_corpus.py --check    # regenerate into a temp dir, compare SHA256SUMS
    python scripts/make_corpus.py --debs DIR # use .deb files already in DIR (no apt)
    python scripts/make_corpus.py --large    # also the large corpus (train split only)

Pipeline
--------
1. ``apt-get update`` (skippable with ``--no-update``), ``apt-get download`` both
   packages, ``dpkg-deb -x`` them into a temp dir.
2. Every element of a help page whose ``id`` starts with ``par_id`` or ``hd_id``
   becomes a paragraph: tags stripped, entities unescaped, whitespace collapsed.
   Code-like paragraphs (class ``code``, ``codeintable``, ``smathcode``,
   ``bascode``) are skipped: they are mostly untranslated.
3. A German and an English paragraph pair when they share file path, id and the
   occurrence number of that id in the file.  Kept: both sides ≥ 3 and ≤ 64
   whitespace tokens, the two sides differ (untranslated strings are dropped).
4. Split BY FILE: files are ordered by ``sha256(f"{SEED}:{path}")``; walking that
   order, files go to ``test`` until it holds ≥ ``N_TEST`` pairs, then ``valid``
   (≥ ``N_VALID``), then ``train`` (≥ ``N_TRAIN``); the remaining files are unused.
   The large corpus walks the same order with no limit on ``train``: its valid and
   test splits are the small corpus's (not shipped twice), and its train split
   begins with the small corpus's train split.
   While walking, a pair is dropped if its German or its English side was already
   seen (this drops exact duplicates and makes sure no sentence — e.g. from a
   section embedded in several pages — appears in two splits).
5. Writes ``{train,valid,test}.tsv.gz`` (``de<TAB>en`` per line, gzip with
   mtime 0 so bytes are reproducible), ``files.tsv`` (split, path, pairs),
   ``NOTICE``, ``LICENSE`` (MPL-2.0 text), ``copyright`` (Debian's), and
   ``SHA256SUMS`` over the data files (tsv.gz + files.tsv).

Reproducibility: the packages receive security updates, which may change the
help text.  ``--check`` regenerates from whatever version the archive serves
now; a mismatch may therefore mean the package was updated, not that the shipped
files were corrupted (the NOTICE records the versions used).  The shipped files
and their SHA256SUMS are the pin; ``tfx.runs.corpus.verify_corpus()`` checks them.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import html.parser
import io
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

PACKAGES = ("libreoffice-help-de", "libreoffice-help-en-us")
SEED = 0
N_TRAIN, N_VALID, N_TEST = 4000, 300, 300
MIN_WORDS, MAX_WORDS = 3, 64
SKIP_CLASSES = {"code", "codeintable", "smathcode", "bascode"}
ID_RE = re.compile(r"^(par|hd)_id")
DATA_FILES = ("train.tsv.gz", "valid.tsv.gz", "test.tsv.gz", "files.tsv")
OUT_DIR = Path(__file__).resolve().parents[1] / "tfx" / "runs" / "corpora" / "libreoffice_de_en"
LARGE_DIR = OUT_DIR.with_name("libreoffice_de_en_large")
LARGE_FILES = ("train.tsv.gz", "files.tsv")  # valid and test: those of OUT_DIR
MPL_URL = "https://mozilla.org/MPL/2.0/"


# --------------------------------------------------------------------------- parsing
class _ParagraphParser(html.parser.HTMLParser):
    """Collect the text of every element with a ``par_id…``/``hd_id…`` id.

    Text of a nested id-element goes to the innermost one only.
    """

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[tuple[str, str]] = []  # (id, raw text), document order
        self._stack: list[list] = []  # [tag, depth, id, pieces, skip]

    def handle_starttag(self, tag, attrs):
        if self._stack and self._stack[-1][0] == tag:
            self._stack[-1][1] += 1
        a = dict(attrs)
        pid = a.get("id") or ""
        if ID_RE.match(pid):
            skip = bool(set((a.get("class") or "").split()) & SKIP_CLASSES)
            self._stack.append([tag, 1, pid, [], skip])
        elif tag == "br" and self._stack:
            self._stack[-1][3].append(" ")

    def handle_endtag(self, tag):
        if self._stack and self._stack[-1][0] == tag:
            self._stack[-1][1] -= 1
            if self._stack[-1][1] == 0:
                _, _, pid, pieces, skip = self._stack.pop()
                if not skip:
                    self.paragraphs.append((pid, "".join(pieces)))
        # block-level ends inside a paragraph separate words
        elif self._stack and tag in ("p", "div", "li", "td", "h1", "h2", "h3", "h4", "h5", "h6"):
            self._stack[-1][3].append(" ")

    def handle_data(self, data):
        if self._stack:
            self._stack[-1][3].append(data)


def clean(text: str) -> str:
    """Collapse whitespace (tags are already stripped, entities unescaped)."""
    return " ".join(text.replace("\u00a0", " ").split())


def parse_page(path: Path) -> dict[tuple[str, int], str]:
    """{(id, occurrence): cleaned text} for one help page."""
    p = _ParagraphParser()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    p.close()
    out, seen = {}, defaultdict(int)
    for pid, raw in p.paragraphs:
        k = seen[pid]
        seen[pid] += 1
        out[(pid, k)] = clean(raw)
    return out


def pair_pages(help_root: Path) -> dict[str, list[tuple[str, str]]]:
    """{relative path: [(de, en), …]} in German document order, filtered by length."""
    de_root, en_root = help_root / "de" / "text", help_root / "en-US" / "text"
    pages = {}
    for de_file in sorted(de_root.rglob("*.html")):
        rel = de_file.relative_to(de_root).as_posix()
        en_file = en_root / rel
        if not en_file.exists():
            continue
        de, en = parse_page(de_file), parse_page(en_file)
        pairs = []
        for key, d in de.items():
            e = en.get(key)
            if e is None or d == e:
                continue
            nd, ne = len(d.split()), len(e.split())
            if MIN_WORDS <= nd <= MAX_WORDS and MIN_WORDS <= ne <= MAX_WORDS:
                if "\t" in d or "\t" in e or "\n" in d or "\n" in e:
                    continue
                pairs.append((d, e))
        if pairs:
            pages[rel] = pairs
    return pages


def split_pages(pages: dict[str, list[tuple[str, str]]], seed: int = SEED, n_train: int | None = N_TRAIN):
    """Assign whole files to test/valid/train (see module docstring); ``n_train=None``:
    every remaining file goes to train."""
    order = sorted(pages, key=lambda p: hashlib.sha256(f"{seed}:{p}".encode()).hexdigest())
    targets = [("test", N_TEST), ("valid", N_VALID), ("train", float("inf") if n_train is None else n_train)]
    splits = {name: [] for name, _ in targets}
    manifest = []  # (split, path, n)
    seen_de, seen_en = set(), set()
    t = 0
    for path in order:
        if t == len(targets):
            break
        name, target = targets[t]
        kept = []
        for d, e in pages[path]:
            if d in seen_de or e in seen_en:
                continue
            seen_de.add(d)
            seen_en.add(e)
            kept.append((d, e))
        if not kept:
            continue
        splits[name].extend(kept)
        manifest.append((name, path, len(kept)))
        if len(splits[name]) >= target:
            t += 1
    return splits, manifest


# --------------------------------------------------------------------------- I/O
def _gzip_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(text.encode("utf-8"))
    return buf.getvalue()


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(cmd, **kw):
    print("+", " ".join(map(str, cmd)), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kw)


def fetch_and_extract(work: Path, debs_dir: Path | None, update: bool) -> tuple[Path, dict]:
    if debs_dir is None:
        debs_dir = work / "debs"
        debs_dir.mkdir()
        if update:
            run(["apt-get", "update", "-qq"])
        run(["apt-get", "download", *PACKAGES], cwd=debs_dir)
    root = work / "root"
    root.mkdir()
    versions = {}
    for pkg in PACKAGES:
        debs = sorted(debs_dir.glob(f"{pkg}_*.deb"))
        if not debs:
            raise FileNotFoundError(f"no {pkg}_*.deb in {debs_dir}")
        deb = debs[-1]
        ver = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True,
                             capture_output=True, text=True).stdout.strip()
        versions[pkg] = (ver, hashlib.sha256(deb.read_bytes()).hexdigest())
        run(["dpkg-deb", "-x", str(deb), str(root)])
    return root, versions


def mpl_text(work: Path) -> str:
    local = Path("/usr/share/common-licenses/MPL-2.0")
    if local.exists():
        return local.read_text(encoding="utf-8")
    d = work / "base"
    d.mkdir()
    run(["apt-get", "download", "base-files"], cwd=d)
    run(["dpkg-deb", "-x", str(next(d.glob("base-files_*.deb"))), str(d / "x")])
    return (d / "x/usr/share/common-licenses/MPL-2.0").read_text(encoding="utf-8")


NOTICE_TEMPLATE = """\
LibreOffice help German–English parallel corpus (tfx/runs/corpora/libreoffice_de_en)
================================================================================

The sentence pairs in train.tsv.gz, valid.tsv.gz and test.tsv.gz are extracted,
unmodified apart from removing HTML markup and collapsing whitespace, from the
LibreOffice help pages:

  LibreOffice Help, a project of The Document Foundation
  (https://www.documentfoundation.org/).
  Copyright 2000, 2010 Oracle and/or its affiliates.
  Copyright (c) 2000, 2010 LibreOffice contributors and/or their affiliates.
  (as stated in the Debian copyright file, `copyright`, for Files: *)

They are distributed under the Mozilla Public License, version 2.0 (MPL-2.0).
The full text of the licence is in the file LICENSE next to this notice and
at {mpl_url}. The Debian copyright file of the source packages is included
as the file `copyright`.

Source Form: the source of these files is the LibreOffice help, available from
https://git.libreoffice.org/help and, as used here, from the Debian packages

{packages}
(downloaded with `apt-get download`, extracted with `dpkg-deb -x`; source
package `libreoffice`, https://tracker.debian.org/pkg/libreoffice).
scripts/make_corpus.py regenerates these files from those packages.

Selection: paragraphs paired by (file path, par_id/hd_id, occurrence); both
sides {min_w}-{max_w} whitespace-separated words; code paragraphs, untranslated
paragraphs and repeated sentences dropped; split by file (files.tsv lists which
help page went to which split). Pairs: train {n_train}, valid {n_valid}, test {n_test}.
{large_note}
The rest of tfx is under its own licence (MIT); this directory alone is MPL-2.0.
"""


def build(out: Path, debs_dir: Path | None = None, update: bool = True, large: Path | None = None) -> dict:
    """Write the corpus to ``out`` and, with ``large``, the large corpus's train split there."""
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tfx-corpus-") as tmp:
        work = Path(tmp)
        root, versions = fetch_and_extract(work, debs_dir, update)
        help_root = root / "usr/share/libreoffice/help"
        pages = pair_pages(help_root)
        n_files = len(list((help_root / "de" / "text").rglob("*.html")))
        n_pairs = sum(map(len, pages.values()))
        print(f"{n_files} German pages, {len(pages)} with pairs, {n_pairs} pairs "
              f"after length filter", file=sys.stderr)
        pk = "".join(f"  {p} {v}  (sha256 of .deb {h})\n" for p, (v, h) in versions.items())
        licence = mpl_text(work)
        stats = {}
        for d, n_train, names, note in (
                (out, N_TRAIN, DATA_FILES, ""),
                (large, None, LARGE_FILES, "The valid and test splits are those of ../libreoffice_de_en (not repeated here).\n")):
            if d is None:
                continue
            d.mkdir(parents=True, exist_ok=True)
            splits, manifest = split_pages(pages, n_train=n_train)
            for name in ("train", "valid", "test"):
                if f"{name}.tsv.gz" in names:
                    text = "".join(f"{de}\t{en}\n" for de, en in splits[name])
                    (d / f"{name}.tsv.gz").write_bytes(_gzip_bytes(text))
            (d / "files.tsv").write_text(
                "".join(f"{s}\t{p}\t{n}\n" for s, p, n in manifest), encoding="utf-8")
            shutil.copyfile(root / "usr/share/doc/libreoffice-help-de/copyright", d / "copyright")
            (d / "LICENSE").write_text(licence, encoding="utf-8")
            (d / "NOTICE").write_text(NOTICE_TEMPLATE.format(
                mpl_url=MPL_URL, packages=pk, min_w=MIN_WORDS, max_w=MAX_WORDS,
                n_train=len(splits["train"]), n_valid=len(splits["valid"]),
                n_test=len(splits["test"]), large_note=note), encoding="utf-8")
            sums = "".join(f"{sha256_file(d / f)}  {f}\n" for f in names)
            (d / "SHA256SUMS").write_text(sums, encoding="utf-8")
            st = {k: len(v) for k, v in splits.items()}
            st.update(files={s: sum(1 for m in manifest if m[0] == s) for s in splits},
                      bytes=sum((d / f).stat().st_size for f in names))
            stats[d.name] = st
    stats.update(seconds=round(time.time() - t0, 1), versions=versions, available_pairs=n_pairs)
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temp dir and compare with the shipped SHA256SUMS")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--debs", type=Path, default=None,
                    help="directory with the two .deb files (skip apt-get)")
    ap.add_argument("--no-update", action="store_true", help="skip apt-get update")
    ap.add_argument("--large", action="store_true",
                    help=f"also write the large corpus (every pair) to {LARGE_DIR.name}/ next to --out")
    args = ap.parse_args(argv)
    large = args.out.with_name(LARGE_DIR.name) if args.large else None
    if args.check:
        with tempfile.TemporaryDirectory(prefix="tfx-corpus-check-") as tmp:
            stats = build(Path(tmp) / OUT_DIR.name, args.debs, not args.no_update,
                          Path(tmp) / LARGE_DIR.name if large else None)
            new = (Path(tmp) / OUT_DIR.name / "SHA256SUMS").read_text()
            old = (args.out / "SHA256SUMS").read_text()
            if large:
                new += (Path(tmp) / LARGE_DIR.name / "SHA256SUMS").read_text()
                old += (large / "SHA256SUMS").read_text()
        print(stats)
        if new == old:
            print("OK: regenerated corpus matches SHA256SUMS")
            return 0
        print("MISMATCH: regenerated corpus differs from the shipped SHA256SUMS.\n"
              "If the Debian packages were updated since the corpus was made (compare the "
              "versions above with NOTICE), this is expected: the help text changed. "
              "Otherwise the shipped files or the script changed.\n"
              f"shipped:\n{old}regenerated:\n{new}", file=sys.stderr)
        return 1
    stats = build(args.out, args.debs, not args.no_update, large)
    print(stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
