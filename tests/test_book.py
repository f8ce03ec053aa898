"""The book's structure: every chapter is in the table of contents, opens with the
Colab setup cell for this repository, imports tfx (no model defined inline), and
its Colab button (in the built HTML) points at this repository's copy."""
import ast
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import sync_notebooks  # noqa: E402

NOTEBOOKS = sync_notebooks.notebooks()


def _toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", [{"chapters": toc.get("chapters", [])}]):
        files += [c["file"] for c in part["chapters"]]
    return files


def test_every_notebook_is_in_the_toc():
    toc = set(_toc_files())
    for nb in NOTEBOOKS:
        assert str(nb.relative_to(ROOT).with_suffix("")) in toc, f"{nb.name} is not in _toc.yml"


def test_colab_setup_cells_are_in_sync():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_notebooks.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    url, branch = sync_notebooks.repository()
    assert f"\"tfx-book @ git+{url}@{branch}\"" in sync_notebooks.setup_source()  # the distribution, not PyPI's tfx
    assert "torch" not in sync_notebooks.setup_source().split("sys.modules:")[1].replace("torch is kept", "")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_imports_tfx_and_prints_profile(nb):
    cells = json.loads(nb.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert "sys.modules" in code[0]  # Colab only
    assert "notebook.setup(" in code[1] and "from tfx.book import notebook" in code[1], \
        "second code cell must import tfx.book.notebook and print profile and device"
    body = "\n".join(code)
    assert not re.search(r"^\s*class \w+\(.*nn\.Module\)", body, re.M), "define models in tfx, not in notebooks"


def test_colab_links_point_at_this_repository():
    html = ROOT / "_build" / "html"
    if not html.exists():
        if os.environ.get("CI"):
            pytest.fail("_build/html is missing: run `make book-rendered` first")
        pytest.skip("_build/html is missing (run `make book-rendered`)")
    url, branch = sync_notebooks.repository()
    slug = url.split("github.com/")[1]
    for nb in NOTEBOOKS:
        rel = nb.relative_to(ROOT)
        page = (html / rel).with_suffix(".html").read_text()
        want = f"https://colab.research.google.com/github/{slug}/blob/{branch}/{rel.as_posix()}"
        assert want in page, f"{rel}: no Colab link to {want}"


# --------------------------------------------------------------------------
# The claims appendix (book/claims.md) is generated from tfx/book/claims.py, the tests
# and the chapters, so it cannot drift from them.
# --------------------------------------------------------------------------

from tfx.book import claims, claims_page  # noqa: E402

REGENERATE = "regenerate it: python -m tfx.book.claims_page book/claims.md"


def test_every_claim_id_in_the_tests_and_chapters_is_registered():
    in_tests = claims_page.ids_in_tests(ROOT)
    in_chapters = claims.ids_in_chapters(ROOT, kinds=("markdown", "code"))
    unknown = {i: where for i, where in {**in_chapters, **in_tests}.items() if i not in claims.BY_ID}
    assert not unknown, f"claim ids with no entry in tfx/book/claims.py CLAIMS: {unknown}"
    assert in_tests, "no test_<ID>_… function found: the scan is broken"


def test_claim_measurements_name_glued_values():
    for c in claims.CLAIMS:
        if not c.measured:
            continue
        stem, template = c.measured
        nb = ROOT / "book" / f"{stem}.ipynb"
        assert nb.exists(), f"{c.id}: measured in {stem}, which is not a chapter"
        keys = claims.template_keys(template)
        assert keys, f"{c.id}: the measurement template pastes no glued value"
        missing = sorted(set(keys) - claims.glued_keys(nb))
        assert not missing, f"{c.id}: {stem}'s saved outputs glue no {missing}"


def test_every_chapters_evidence_boxes_are_generated_and_included():
    """book/_evidence/<chapter>.md (claims_page.evidence_pages) is up to date, holds one folded
    box per claim the chapter judges with its status as a badge, and the chapter includes it
    once; no file is left for a chapter that judges nothing."""
    pages = claims_page.evidence_pages(ROOT)
    folder = ROOT / "book" / claims_page.EVIDENCE
    assert sorted(p.stem for p in folder.glob("*.md")) == sorted(pages), f"book/_evidence/ is out of date; {REGENERATE}"
    judged = claims.statuses(ROOT)
    for stem, page in pages.items():
        assert (folder / f"{stem}.md").read_text(encoding="utf-8") == page, f"book/_evidence/{stem}.md is out of date; {REGENERATE}"
        mine = [i for i, (chapter, _) in judged.items() if chapter == stem]
        assert page.count(":::{dropdown} Evidence: ") == len(mine)
        for i in mine:
            assert f"{claims.TITLES[i]} {claims_page.badge(judged[i][1])}" in page, (stem, i)
        cells = json.loads((ROOT / "book" / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
        includes = ["".join(c["source"]) for c in cells if f"{claims_page.EVIDENCE}/{stem}.md" in "".join(c["source"])]
        assert includes == [f"```{{include}} {claims_page.EVIDENCE}/{stem}.md\n```"], f"{stem} must include its Evidence boxes once"


def test_a_status_badge_names_the_status_and_refuses_an_unknown_word():
    assert claims_page.badge("mixed") == "{bdg-warning}`mixed`"
    assert set(claims_page.BADGES) == set(claims.STATUSES)
    with pytest.raises(ValueError, match="status='fails'.*reproduces"):
        claims_page.badge("fails")
    assert set(claims.TITLES) == set(claims.BY_ID), "every claim needs a title for its Evidence box"


def test_claims_page_is_generated_and_in_the_toc():
    page = ROOT / "book" / "claims.md"
    assert page.read_text(encoding="utf-8") == claims_page.render_page(ROOT), f"book/claims.md is out of date; {REGENERATE}"
    assert "book/claims" in _toc_files()
    for c in claims.CLAIMS:
        assert f"\n## {c.id}\n" in page.read_text(encoding="utf-8")


def test_every_glued_status_is_a_word_of_the_vocabulary():
    """A chapter glues ``status-<ID>`` through claims.glue_status; whatever its saved output says
    must be one of claims.STATUSES, and the page pastes it in the status column."""
    found = claims.statuses(ROOT)
    bad = {i: s for i, (_, s) in found.items() if s not in claims.STATUSES}
    assert not bad, f"statuses outside {claims.STATUSES}: {bad}"
    page = claims_page.render_page(ROOT)
    for i, (stem, _) in found.items():
        assert f"{stem}.ipynb::status-{i}:s" in page


def test_statuses_are_read_from_a_chapters_saved_glue(tmp_path):
    """The reader of glued statuses, on a one-cell chapter: the value myst-nb saved (a repr)."""
    out = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "status-WU-1", "mime_prefix": "application/papermill.record/"}},
           "data": {"application/papermill.record/text/plain": "'reproduces in part'"}}  # as myst-nb saves it
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [out], "execution_count": 1}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "11-x.ipynb").write_text(json.dumps(nb))
    assert claims.statuses(tmp_path) == {"WU-1": ("11-x", "reproduces in part")}


def test_a_claims_status_follows_from_its_verdicts_and_bad_words_are_refused():
    """The one status rule (book/method.md; issue 40): a status never hides a reversed
    comparison, and a claim nothing resolved is not called 'does not reproduce'."""
    R, X, N, T = "reproduces", "reversed", "not resolved at this scale", "not testable at this scale"
    assert claims.status_of([R, R]) == "reproduces"
    # a reversal beside reproductions is named 'mixed', never hidden in 'in part'
    assert claims.status_of([R, N, X]) == claims.status_of([R, X]) == "mixed"
    assert claims.status_of([R, N]) == "reproduces in part"
    assert claims.status_of([N, N]) == claims.status_of([N]) == "not resolved at this scale"
    assert claims.status_of([N, X]) == claims.status_of([X]) == "does not reproduce"
    # a comparison the scale cannot judge: alone, the claim is not testable; beside others it
    # keeps the claim from 'reproduces'
    assert claims.status_of([T, T]) == "not testable at this scale"
    assert claims.status_of([R, T]) == "reproduces in part"
    assert claims.status_of([R, X, T]) == "mixed"
    with pytest.raises(ValueError, match="verdicts="):
        claims.status_of(["holds"])
    with pytest.raises(ValueError, match="verdicts="):
        claims.status_of([])
    with pytest.raises(ValueError, match="status='holds' for WU-1 must be one of"):
        claims.glue_status("WU-1", "holds")
    with pytest.raises(ValueError, match="claim_id='XX-9' is not a claim"):
        claims.glue_status("XX-9", "reproduces")
    assert claims.glue_status("WU-1", "reproduces in part") == "reproduces in part"
    assert set(claims.STATUSES) == {"reproduces", "mixed", "reproduces in part", "not resolved at this scale",
                                    "does not reproduce", "not testable at this scale", "derivation verified"}


def test_a_claims_halves_are_judged_separately_and_every_reversal_is_named():
    """AD-3's shape: a failure half that reproduces, a stability half with a reversal, a
    quality half the scale cannot test. The line names each half's status and each reversal."""
    R, X, N, T = "reproduces", "reversed", "not resolved at this scale", "not testable at this scale"
    line = claims.parts_line([("failure", "deep Post-LN ends higher", R), ("failure", "at width 128 too", R),
                              ("stability", "more sensitive than Pre-LN", R),
                              ("stability", "more sensitive than Admin on the map", X),
                              ("stability", "more sensitive than Admin at 2+2", N),
                              ("quality", "Admin ends lower than Pre-LN", T)])
    assert line == ("failure: reproduces (2 of 2 reproduce) · stability: mixed (1 of 3 reproduce, 1 not resolved; "
                    "reversed: more sensitive than Admin on the map) · quality: not testable at this scale "
                    "(0 of 1 reproduce, 1 not testable (runs still falling))")
    # a one-statement claim: no half's name
    assert claims.parts_line([("", "a", R), ("", "b", X)]) == "mixed (1 of 2 reproduce; reversed: b)"
    assert claims.glue_parts("WU-1", [("", "a", R), ("", "b", N)]) == "reproduces in part"


def test_a_theory_claims_status_follows_from_its_parts_by_the_same_rule():
    """A pre-set criterion that failed is a part that does not hold (as a reversal does);
    a part judged by a paired effect brings its verdict word."""
    from tfx.book import checks

    assert checks.status({"a": True, "b": True}) == "reproduces"
    assert checks.status({"a": True, "b": False}) == claims.status_of(["reproduces", "reversed"]) == "mixed"
    assert checks.status({"a": True, "b": "not resolved at this scale"}) == "reproduces in part"
    assert checks.status({"a": False}) == "does not reproduce"
    with pytest.raises(ValueError, match="at least one part"):
        checks.status({})
    with pytest.raises(ValueError, match="a part's verdict 'yes'"):
        checks.status({"a": "yes"})


def test_a_derivation_is_verified_never_reproduced_and_a_failed_one_is_a_bug():
    """LN-2, LP-2, AD-2 are true by construction: 'derivation verified', which counts as no
    evidence; one that fails raises (the code is wrong), it is not a finding."""
    from tfx.book import checks

    assert checks.glue_derivation("AD-2", {"the folded model gives the same logits": True}) == "derivation verified"
    with pytest.raises(checks.DerivationFailed, match="AD-2: derivation checks failed.*same logits"):
        checks.glue_derivation("AD-2", {"ω moved": True, "the folded model gives the same logits": False})
    with pytest.raises(ValueError, match="at least one check"):
        checks.glue_derivation("AD-2", {})


def test_the_identities_are_derivations_on_the_claims_page():
    found = claims.statuses(ROOT)
    for claim in ("LN-2", "LP-2", "AD-2"):
        assert found[claim][1] == "derivation verified", (claim, found[claim])


def test_the_claims_command_scans_the_repository_by_default():
    """``python -m tfx.book.claims_page`` with no argument prints this checkout's page: every chapter
    and every claim test found (its root was tfx/ once, which has neither)."""
    import subprocess
    import sys

    assert claims.ROOT == ROOT
    out = subprocess.run([sys.executable, "-m", "tfx.book.claims_page"], cwd=ROOT / "book", check=True,
                         capture_output=True, text=True).stdout
    assert out == claims_page.render_page(ROOT)
    assert "{doc}`01-" in out and "in `tests/test_claims.py`" in out


def test_the_claims_command_names_what_is_missing(tmp_path):
    with pytest.raises(SystemExit, match="not a tfx-book checkout"):
        claims_page.repository(tmp_path)
    with pytest.raises(SystemExit, match="with none beside it"):
        claims_page.repository(None)


def test_make_test_checks_the_claims_page_and_never_rewrites_it():
    """The staleness test above can only fail if nothing regenerates book/claims.md before it:
    ``make test`` (and the rendered build it runs) must leave the page as committed."""
    import subprocess

    dry = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "CI": ""}).stdout
    assert "tfx.book.claims_page" not in dry, "make test regenerates book/claims.md before the test compares it"
    dry_book = subprocess.run(["make", "-n", "book"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "tfx.book.claims_page book/claims.md" in dry_book  # `make book` is where it is regenerated


def test_make_test_fails_when_pytest_collects_nothing():
    text = (ROOT / "Makefile").read_text()
    assert "-eq 5" not in text and "no tests collected" not in text, "pytest's exit 5 must stay a failure"


def test_ci_builds_the_book_once():
    """``make test`` already renders the book (book-rendered); .ci/run must not build it again."""
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert sum("make book" in c or "jupyter-book" in c for c in commands) == 0, commands
    assert "make test" in commands


def test_claim_registry_rejects_a_malformed_id():
    with pytest.raises(ValueError, match="id="):
        claims.Claim("LN1", "xiong2020preln", "", "", "")


def test_claims_scan_finds_tests_chapters_and_glue(tmp_path, monkeypatch):
    """The discovery itself, on a tiny fake book: a test name, a chapter's prose, a claim-<ID> glue
    (for a claim with no template: every real claim has one, so a made-up one joins the list)."""
    cid = "XX-1"
    monkeypatch.setattr(claims, "CLAIMS", claims.CLAIMS + [claims.Claim(cid, "liu2020admin", "", "a", "b")])
    fn = cid.replace("-", "_")
    (tmp_path / "tests").mkdir()
    (tmp_path / "book").mkdir()
    (tmp_path / "tests" / "test_claims.py").write_text(f"def test_{fn}_condition():\n    pass\n")
    nb = {"cells": [{"cell_type": "markdown", "source": [f"Claim **{cid}** (someone et al.)."], "metadata": {}},
                    {"cell_type": "code", "source": [f"glue('claim-{cid}', 'x')"], "metadata": {},
                     "outputs": [{"output_type": "display_data", "data": {}, "metadata": {"scrapbook": {"name": f"claim-{cid}"}}}]}]}
    (tmp_path / "book" / "08-tfixup.ipynb").write_text(json.dumps(nb))
    assert claims_page.ids_in_tests(tmp_path) == {cid: [f"tests/test_claims.py::test_{fn}_condition"]}
    assert claims.ids_in_chapters(tmp_path) == {cid: ["08-tfixup"]}
    page = claims_page.render_page(tmp_path)
    section = page.split(f"\n## {cid}\n")[1].split("\n## ")[0]
    assert f"**Measured:** {{glue:text}}`08-tfixup.ipynb::claim-{cid}:s`" in section
    assert "**Chapters:** {doc}`08-tfixup`" in section
    assert f"**Test:** `test_{fn}_condition` in `tests/test_claims.py`" in section
    other = next(c.id for c in claims.CLAIMS if c.id != cid and not c.context)
    assert "**Test:** none yet" in page.split(f"\n## {other}\n")[1].split("\n## ")[0]


def test_claims_scan_lists_the_registry_tests_cases_for_every_registered_claim(tmp_path):
    """A test parametrised over the evidence registry (test_registered_claim_… one case per
    claim, test_registered_comparison_… one per comparison) counts as a test of every claim
    the registry judges, listed by its cases' ids (tfx.book.evidence.case_id)."""
    from tfx.book import evidence

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_claims.py").write_text(
        "def test_registered_claim_status(claim):\n    pass\n\n\n"
        "def test_registered_comparison_verdict(claim, k):\n    pass\n")
    found = claims_page.ids_in_tests(tmp_path)
    assert set(found) == set(evidence.BY_CLAIM)
    n = len(evidence.BY_CLAIM["AD-3"])
    assert found["AD-3"] == ["tests/test_claims.py::test_registered_claim_status[AD_3]",
                             f"tests/test_claims.py::test_registered_comparison_verdict[AD_3-c0…c{n - 1}]"]


def test_every_claim_on_the_page_is_measured():
    """The book's claims page: every claim that is not quoted context carries a measurement,
    but for a claim registered before its sweep's records exist (all of its comparisons read a
    sweep tests/pending_records.py lists), which says 'not measured yet' until they land."""
    import pending_records
    from tfx.book import evidence

    def waiting(c) -> bool:
        comps = evidence.BY_CLAIM.get(c.id, [])
        return bool(comps) and all(x.experiment in pending_records.UNRECORDED for x in comps)

    unmeasured = [c.id for c in claims.CLAIMS if not c.context and not c.measured and not waiting(c)]
    assert not unmeasured, f"claims with no measurement: {unmeasured}"
    early = [c.id for c in claims.CLAIMS if c.measured and waiting(c)]
    assert not early, f"claims measured before their records exist: {early}"
    page = claims_page.render_page(ROOT)
    assert page.count("not measured yet") == sum(waiting(c) for c in claims.CLAIMS)


def test_context_claims_render_as_context_not_as_missing():
    """A claim that quotes a paper's results (TF-3) is context: the page says so instead of
    'not measured yet' / 'none yet', and a context claim cannot carry a measurement."""
    context = [c for c in claims.CLAIMS if c.context]
    assert [c.id for c in context] == ["TF-3"]
    section = claims_page.render_page(ROOT).split("\n## TF-3\n")[1].split("\n## ")[0]
    assert "not measured yet" not in section and "none yet" not in section
    assert "quoted for context" in section and "context, not a check" in section
    with pytest.raises(ValueError, match="context"):
        claims.Claim("TF-9", "huang2020tfixup", "", "", "", measured=("08-t-fixup", "{tf_c}"), context=True)


# --------------------------------------------------------------------------
# Figures: labels a reader can read. (Text inside a PNG is out of the browser
# test's reach, so these check the code that draws it.)
# --------------------------------------------------------------------------

_RAW_LABEL = re.compile(r"\(eq-[\w-]+\)")


def _code_strings(src: str):
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.STRING:
                yield tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):  # cell magics and the like
        return


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_no_raw_equation_label_in_figures_or_prints(nb):
    """An {eq} label is resolved only in Markdown; in a legend, title or print it shows raw
    ("Pre-LN bounds (eq-lemma2-pre)"). Comments may name equations; strings may not."""
    cells = json.loads(nb.read_text())["cells"]
    found = [s for c in cells if c["cell_type"] == "code"
             for s in _code_strings("".join(c["source"])) if _RAW_LABEL.search(s)]
    assert not found, f"{nb.name}: raw equation labels in strings: {found}"
    # the check itself: it sees the legend that once shipped
    assert list(_code_strings('ax.fill_between(x, lo, hi, label="Pre-LN bounds (eq-lemma2-pre)")'))


def _ln4_axes(depths, fixed):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import tfx.book.plot  # tfx alone does not import the book wing

    fig, a = plt.subplots(figsize=(4.8, 3.5), dpi=110)
    a.errorbar(depths, [1.0 + 0.1 * k for k in range(len(depths))], fmt="o")
    a.set_yscale("log")
    if fixed:
        tfx.book.plot.log_ticks(a, depths)
    else:  # how chapter 4's LN-4 figure once set its ticks
        a.set_xscale("log")
        a.set_xticks(depths, [str(n) for n in depths])
    found = tfx.book.plot.overlapping_tick_labels(fig)
    plt.close(fig)
    return found


def test_log_depth_axis_tick_labels_do_not_overlap():
    from tfx.runs.profiles import PROFILE_NAMES, get_profile

    book_depths = get_profile("book").depths
    assert _ln4_axes(book_depths, fixed=False), "the overlap check must catch the old LN-4 axis"
    for name in PROFILE_NAMES:
        assert _ln4_axes(get_profile(name).depths, fixed=True) == [], name


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_log_axes_with_hand_set_ticks_use_log_ticks(nb):
    """Fixed ticks on a log axis spanning about a decade collide with matplotlib's labelled
    minor ticks; tfx.book.plot.log_ticks sets both."""
    for c in json.loads(nb.read_text())["cells"]:
        src = "".join(c["source"]) if c["cell_type"] == "code" else ""
        log_x = re.search(r"set_xscale\(\s*[\"']log|\.loglog\(|\.semilogx\(", src)
        assert not (log_x and "set_xticks(" in src), f"{nb.name}: use tfx.book.plot.log_ticks for a log axis's ticks"


def test_readers_are_told_to_install_tfx_book_not_tfx():
    """``tfx`` on the package index is TensorFlow Extended: every install hint names tfx-book."""
    root = pathlib.Path(__file__).resolve().parents[1]
    texts = [*root.glob("*.md"), *root.glob("tfx/**/*.py"), *root.glob("book/*.ipynb"), *root.glob("book/*.md"),
             root / "Makefile", root / "pyproject.toml"]
    bad = [f"{p.relative_to(root)}:{n}" for p in texts for n, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"(?<![\w-])tfx\[", line) or re.search(r"pip install\s+['\"]?tfx(?![\w-])", line)]
    assert not bad, f"'tfx[…]' / 'pip install tfx' is TensorFlow Extended; say tfx-book: {bad}"


# --------------------------------------------------------------------------
# Pages that read comfortably: code fits the column, and cells that only draw
# are collapsed (their output stays).
# --------------------------------------------------------------------------

CODE_WIDTH = 88  # characters; also what scripts/sync_notebooks.py writes the Colab cell to


def _code_cells(nb: dict):
    """(cell index, source) of every code cell."""
    return [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def _long_lines(nb: dict):
    return [f"cell {i}, line {k + 1} ({len(line)} characters): {line.strip()[:60]}"
            for i, src in _code_cells(nb) for k, line in enumerate(src.split("\n"))
            if len(line) > CODE_WIDTH]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_code_lines_fit_the_column(nb):
    """A longer line scrolls sideways inside its cell on the page."""
    long = _long_lines(json.loads(nb.read_text()))
    assert not long, f"{nb.name}: code lines over {CODE_WIDTH} characters:\n  " + "\n  ".join(long)


def test_code_width_check_catches_a_long_line():
    nb = {"cells": [{"cell_type": "markdown", "source": ["x" * 200]},
                    {"cell_type": "code", "source": ["a = 1\n", "b = [" + "1, " * 40 + "]"]}]}
    found = _long_lines(nb)
    assert len(found) == 1 and found[0].startswith("cell 1, line 2 (126 characters): b = [1, 1"), found
    assert sync_notebooks.CODE_WIDTH == CODE_WIDTH


_DRAWING_NAMES = {"fig", "ax"}  # what a drawing cell may bind for later cells


def _scope_names(node):
    """Names bound inside node's own scopes: comprehension targets, lambda and def arguments."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.comprehension):
            out |= {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
        elif isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            out |= {a.arg for a in ast.walk(n.args) if isinstance(a, ast.arg)}
    return out


def _reads(node):
    return {n.id for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - _scope_names(node)


def _assigns(node):
    """Names node assigns (imports aside: importing is not computing)."""
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    out |= {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                            ast.ClassDef))}
    return out - _scope_names(node)


def _assigned_and_read(src: str):
    """(names the cell assigns, names it reads before assigning them), statement by statement."""
    assigned, read = set(), set()

    def use(node):
        read.update(_reads(node) - assigned)

    def block(stmts):
        for s in stmts:
            if isinstance(s, (ast.For, ast.AsyncFor)):
                use(s.iter)
                assigned.update(_assigns(s.target))
                block(s.body + s.orelse)
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                for item in s.items:
                    use(item.context_expr)
                    if item.optional_vars is not None:
                        assigned.update(_assigns(item.optional_vars))
                block(s.body)
            elif isinstance(s, (ast.If, ast.While)):
                use(s.test)
                block(s.body + s.orelse)
            elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assigned.add(s.name)
                read.update(_reads(s) - assigned - _assigns(ast.Module(body=s.body, type_ignores=[])))
            else:
                use(s)
                assigned.update(_assigns(s))

    block(ast.parse(src).body)
    return assigned, read


def _called(src: str):
    """Names of the functions a cell calls (``plot.figure(…)`` and ``figure(…)`` are both "figure")."""
    return {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
            for n in ast.walk(ast.parse(src))
            if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}


def _draw_only_without_tag(nb: dict):
    """Code cells that draw a figure or an explorer, glue nothing and assign nothing a later
    cell reads (fig and ax aside), but do not carry ``hide-input``."""
    cells = _code_cells(nb)
    names = [_assigned_and_read(src) for _, src in cells]
    missing = []
    for k, (i, src) in enumerate(cells):
        called = _called(src)
        draws = "figure" in called or any(c.endswith("_explorer") for c in called)
        if not draws or "glue" in called:
            continue
        read_later = set().union(set(), *(read for _, read in names[k + 1:]))
        if (names[k][0] - _DRAWING_NAMES) & read_later:
            continue  # it computes something a later cell uses
        if "hide-input" not in nb["cells"][i].get("metadata", {}).get("tags", []):
            missing.append(f"cell {i}: {src.strip().splitlines()[0][:60]}")
    return missing


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_cells_that_only_draw_hide_their_input(nb):
    """The figure or explorer stays; the plotting code is behind a toggle. Cells that glue or
    compute what later cells read stay open, and so does any cell that glues."""
    notebook = json.loads(nb.read_text())
    missing = _draw_only_without_tag(notebook)
    assert not missing, f"{nb.name}: tag these drawing-only cells hide-input:\n  " + "\n  ".join(missing)
    hidden_glue = [i for i, src in _code_cells(notebook) if "glue" in _called(src)
                   and "hide-input" in notebook["cells"][i]["metadata"].get("tags", [])]
    assert not hidden_glue, f"{nb.name}: cells {hidden_glue} glue values for the text: keep their input shown"


def test_draw_only_check_on_a_small_notebook():
    def code(src, tags=()):
        return {"cell_type": "code", "source": src.splitlines(keepends=True),
                "metadata": {"tags": list(tags)} if tags else {}}

    nb = {"cells": [
        code("x = np.arange(3)\nfig, ax = plot.figure(P)\nax.plot(x)"),            # 0: x is read below
        code("fig, (a, b) = figure(P, ncols=2)\nfor k in range(3):\n    a.plot([k])"),  # 1: draws only
        code("fig, ax = plot.figure(P)\nglue('n', 3)"),                              # 2: glues
        code("widgets.some_explorer(P)"),                                            # 3: an explorer
        code("fig, ax = plot.figure(P)\nax.plot([1])", tags=["hide-input"]),         # 4: tagged
        code("k = 2\nprint(x.sum() + k)"),                                           # k assigned first
    ]}
    assert _draw_only_without_tag(nb) == ["cell 1: fig, (a, b) = figure(P, ncols=2)",
                                          "cell 3: widgets.some_explorer(P)"]
    assert _assigned_and_read(nb["cells"][5]["source"][0] + nb["cells"][5]["source"][1]) == ({"k"}, {"x", "print"})


# --------------------------------------------------------------------------- one outcome rule
_LOSSY = re.compile(r"loss", re.I)
_LEVELS = re.compile(r"chance|floor", re.I)


def _walk(node, skip_subscripts=False):
    """ast.walk without the insides of len(...) calls (and of subscripts, if asked)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        return
    yield node
    for child in ast.iter_child_nodes(node):
        if skip_subscripts and isinstance(node, ast.Subscript) and child is node.slice:
            continue
        yield from _walk(child, skip_subscripts)


def _names(node) -> set:
    return {n.id for n in _walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in _walk(node) if isinstance(n, ast.Attribute)}


def _has_number(node) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)
               for n in _walk(node, skip_subscripts=True))


def _own_thresholds(nb: dict) -> list:
    """Comparisons (<, ≤, >, ≥) in a notebook's code that set a level on a loss: against the
    chance or the floor, or a loss against a number. That is a verdict on training computed
    in the chapter instead of by tfx.runs.outcome. (Comparing two runs' losses is not.)"""
    found = []
    for i, src in _code_cells(nb):
        try:
            tree = ast.parse(src)
        except SyntaxError:  # IPython magics
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Compare)
                    and any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops)):
                continue
            names = _names(node)
            if any(_LEVELS.search(n) for n in names) or (
                    any(_LOSSY.search(n) for n in names) and _has_number(node)):
                found.append(f"cell {i}: {ast.unparse(node)[:70]}")
    return found


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_no_chapter_computes_its_own_threshold_on_a_loss(nb):
    """Whether a run learned is decided once, by tfx.runs.outcome (learned / did not learn /
    diverged); a chapter reads the verdict and shows the numbers, it never compares a loss
    against a level of its own."""
    own = _own_thresholds(json.loads(nb.read_text()))
    assert not own, f"{nb.name} compares losses itself (use tfx.runs.outcome):\n  " + "\n  ".join(own)


def test_the_threshold_check_catches_a_chapter_rule():
    nb = {"cells": [{"cell_type": "code", "source": ["learned = r.final_loss < chance / 2\n", "x = a < b"]},
                    {"cell_type": "code", "source": ["ok = [h for h in hs if h.eval_loss[-1] <= 3.0]"]},
                    {"cell_type": "code", "source": ["a = r.eval_loss[-1] < r.eval_loss[0]\n",
                                                     "b = len(r.eval_loss) > 1\n", "c = h.floor_loss > 0"]}]}
    assert [f[:6] for f in _own_thresholds(nb)] == ["cell 0", "cell 1", "cell 2"]
    assert len(_own_thresholds(nb)) == 3  # two runs' losses compared, a length: not levels


def _bare_last_glue(nb: dict) -> list:
    """Code cells whose last statement is a glue(...) call without a closing ';': Jupyter
    then prints the glued value as the cell's result, a stray repr on the page."""
    out = []
    for i, src in _code_cells(nb):
        try:
            body = ast.parse(src).body
        except SyntaxError:
            continue
        last = body[-1] if body else None
        if (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                and getattr(last.value.func, "id", None) == "glue" and not src.rstrip().endswith(";")):
            out.append(f"cell {i}")
    return out


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_ends_with_a_bare_glue(nb):
    assert not _bare_last_glue(json.loads(nb.read_text())), nb.name


def test_bare_glue_check_catches_one():
    nb = {"cells": [{"cell_type": "code", "source": ["glue('a', 1)"]},
                    {"cell_type": "code", "source": ["glue('a', 1);"]}]}
    assert _bare_last_glue(nb) == ["cell 0"]


# "chapter N" in the book's own prose: outside code, math, headings, roles and links
_PROTECTED = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|\[[^\]]*\]\([^)]*\)|\{[\w:-]+\}`[^`]*`|<[^>]+>")
_MENTION = re.compile(r"\b[Cc]hapters?\s+(\d+)")


def unlinked_chapter_mentions(markdown: str, own_number: str = "") -> list[str]:
    """The "chapter N" mentions of ``markdown`` that are not links (a chapter may name itself
    without one); fenced code, headings and directive options are skipped."""
    found, fence = [], None
    for line in markdown.split("\n"):
        s = line.lstrip()
        m = re.match(r"(`{3,}|:{3,})(.*)", s)
        if m:
            fence = (m.group(1), m.group(2).strip()) if fence is None else (
                None if s.startswith(fence[0]) and not m.group(2).strip() else fence)
            continue
        in_code = fence is not None and fence[0].startswith("`") and not fence[1].startswith("{")
        if in_code or s.startswith(("#", ":", "$$")):
            continue
        text = _PROTECTED.sub(" ", line)
        found += [m.group(0) for m in _MENTION.finditer(text) if m.group(1).lstrip("0") != own_number]
    return found


def test_unlinked_chapter_mentions_are_found():
    assert unlinked_chapter_mentions("as chapter 3 shows") == ["chapter 3"]
    assert unlinked_chapter_mentions("as [chapter 3](03-layernorm-jacobian.ipynb) shows") == []
    assert unlinked_chapter_mentions("# Chapter 3\n```python\n# chapter 4\n```\n`chapter 5`") == []
    assert unlinked_chapter_mentions("this is chapter 7", own_number="7") == []


@pytest.mark.parametrize("page", sorted({*(ROOT / "book").glob("[0-9]*.ipynb"), *(ROOT / "book").glob("*.md")}),
                         ids=lambda p: p.name)
def test_every_chapter_mention_in_the_prose_is_a_link(page):
    """Issue 44: every "chapter N" a link (the claims page's come from claims_page.link_chapters)."""
    if page.suffix == ".ipynb":
        cells = json.loads(page.read_text(encoding="utf-8"))["cells"]
        texts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    else:
        texts = [page.read_text(encoding="utf-8")]
    own = page.name.split("-", 1)[0].lstrip("0")
    loose = [m for t in texts for m in unlinked_chapter_mentions(t, own)]
    assert not loose, f"{page.name}: link these to their chapters ([chapter N](NN-name.ipynb)): {loose}"


def test_chapters_are_numbered_in_reading_order():
    """Issue 44: every part but the reference is numbered, and its files carry their number in
    reading order (01, 02, … with no gaps and no 'b' suffixes), so the files sort as the book reads."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = [c["file"] for part in toc["parts"] if part.get("numbered") for c in part["chapters"]]
    unnumbered = [c["file"] for part in toc["parts"] if not part.get("numbered") for c in part["chapters"]]
    assert [f.split("/")[1].split("-", 1)[0] for f in numbered] == [f"{i:02d}" for i in range(1, len(numbered) + 1)]
    assert all(not re.match(r"\d", f.split("/")[1]) for f in unnumbered), unnumbered
    assert sorted(numbered) == numbered


def _sphinx_numbers(tmp_path, extensions):
    """The numbered titles of a two-part Sphinx project (a toctree per part, as Jupyter Book
    writes them), built with ``extensions``."""
    from sphinx.application import Sphinx
    src = tmp_path / "src"
    src.mkdir(parents=True)
    (src / "conf.py").write_text(f"import sys; sys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
                                 f"extensions = {extensions!r}\nnumfig = True\n")
    (src / "index.rst").write_text("Book\n====\n\n.. toctree::\n   :numbered: 1\n   :caption: one\n\n   a\n   b\n\n"
                                   ".. toctree::\n   :numbered: 1\n   :caption: two\n\n   c\n")
    for name in "abc":
        (src / f"{name}.rst").write_text(f"Page {name}\n======\n\n.. figure:: x.png\n\n   caption\n")
    (src / "x.png").write_bytes(b"")
    app = Sphinx(str(src), str(src), str(tmp_path / "out"), str(tmp_path / "doctrees"), "html",
                 status=None, warning=None, freshenv=True)
    app.build()
    html = (tmp_path / "out" / "c.html").read_text(encoding="utf-8")
    return re.search(r'<span class="section-number">([\d.]+) </span>Page c', html).group(1), \
        re.search(r'<span class="caption-number">Fig\. ([\d.]+) </span>', html).group(1)


def test_chapter_numbers_run_on_across_parts(tmp_path):
    """book/_ext/tfx_numbering.py: without it Sphinx starts every part at 1 (page c, the first
    of part two, is 1. again, and its figure 1.2 follows page a's 1.1); with it c is chapter 3
    and its figure 3.1."""
    from sphinx.environment.collectors.toctree import TocTreeCollector
    plain = TocTreeCollector.assign_section_numbers
    try:
        assert _sphinx_numbers(tmp_path / "plain", []) == ("1.", "1.2")
        assert _sphinx_numbers(tmp_path / "ext", ["tfx_numbering"]) == ("3.", "3.1")
    finally:
        TocTreeCollector.assign_section_numbers = plain  # the extension patches Sphinx's class


def test_verdict_tally_counts_each_verdict_once_with_the_total_first():
    from tfx.book import claims
    from tfx.runs.effects import paired

    UP = paired({0: 1.0, 1: 2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # reproduces
    MIXED = paired({0: 1.0, 1: -2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # unresolved
    DOWN = paired({0: -1.0, 1: -2.0, 2: -1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # reversed
    assert claims.verdict_tally([UP, MIXED, MIXED]) == (
        "1 of 3 reproduces, 2 are not resolved at this scale")
    assert claims.verdict_tally([DOWN]) == "1 of 1 is reversed"
    assert claims.verdict_tally([UP, UP, DOWN]) == "2 of 3 reproduce, 1 is reversed"
    # verdict words too, the comparison's own (a converged-quality one may be not testable)
    assert claims.verdict_tally(["reproduces", UP, "not testable at this scale"]) == (
        "2 of 3 reproduce, 1 is not testable at this scale")
    with pytest.raises(ValueError, match="at least one"):
        claims.verdict_tally([])
