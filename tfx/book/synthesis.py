"""The book's answer, read from its own results: the tables of the closing chapter
(``book/24-what-to-do.ipynb``).

Nothing here judges a claim. A claim's status is the word its chapter glued as
``status-<ID>`` (:func:`tfx.book.claims.statuses`, read from the committed chapters), one of
:data:`tfx.book.claims.STATUSES`; a claim no chapter has judged yet is ``not yet judged``, a
claim quoted for context is ``context``. The committed chapters live in a checkout: an
installed tfx (Colab: ``pip install tfx-book``, no ``book/`` beside it) cannot read them, and
then every status is :data:`NO_CHECKOUT` and the page says so instead of failing.

    rows = synthesis.verdicts()            # one Verdict per claim of tfx.book.claims.CLAIMS
    synthesis.verdict_table(rows)          # a Markdown table: id, claim, status, chapter
    synthesis.warmup_summaries()           # what chapters 11, 12 and 14 say about warmup
    synthesis.gpu_status()                 # training claims with / without GPU records
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import claims
from .claims import BY_ID, CLAIMS, STATUSES, verdict_tally
from .notebook import md_table

CONTEXT = "context"  # a paper's result quoted for context: nothing to judge
NOT_JUDGED = "not yet judged"  # no chapter has glued a status yet
NO_CHECKOUT = "not readable here (no checkout)"  # an installed tfx: the chapters are not beside it
OTHER_STATUSES = (CONTEXT, NOT_JUDGED, NO_CHECKOUT)
VOCABULARY = STATUSES + OTHER_STATUSES  # every word a status cell can hold
# a short name per word, for glue keys (``syn-n-<short>``: how many claims have it)
SHORT = {"reproduces": "rep", "mixed": "mixed", "reproduces in part": "part",
         "not resolved at this scale": "unresolved", "does not reproduce": "not",
         "not testable at this scale": "untestable", "derivation verified": "derivation",
         CONTEXT: "context", NOT_JUDGED: "unjudged", NO_CHECKOUT: "unread"}

# The warmup results of the training chapters: the summary each chapter glues, and the claims
# whose statuses stand in for it until the chapter glues one.
WARMUP_CHAPTERS = {
    "11": ("warmup-summary-11", ("WU-1", "WU-2", "WU-3")),
    "12": ("warmup-summary-12", ("AD-3",)),
    "14": ("warmup-summary-14", ("LM-1",)),
}

_CHECKOUT = object()  # "the checkout this tfx runs from", resolved when called (tests patch ROOT)
ROOT = claims.ROOT


def _root(root):
    root = ROOT if root is _CHECKOUT else root
    if root is None or not (Path(root) / "book").is_dir():
        return None
    return Path(root)


def has_checkout(root=_CHECKOUT) -> bool:
    """Whether the committed chapters can be read (a checkout), or not (an installed tfx)."""
    return _root(root) is not None


@dataclass(frozen=True)
class Verdict:
    id: str
    statement: str
    status: str  # a word of VOCABULARY
    chapter: str  # the chapter stem that judges it ('11-warmup-adam'), or '' if none is known
    parts: str = ""  # the chapter's glued parts-<ID>: each half's status, the reversals named


def verdicts(root=_CHECKOUT) -> list[Verdict]:
    """One :class:`Verdict` per registered claim, in the registry's order. The status is the
    one the chapter glued; the chapter is the one that glued it, else the one the registry
    names as measuring it, else the first chapter that mentions the claim."""
    root = _root(root)
    judged = claims.statuses(root) if root else {}
    mentioned = claims.ids_in_chapters(root) if root else {}
    rows = []
    for c in CLAIMS:
        parts = ""
        if c.id in judged:
            chapter, status = judged[c.id]
            parts = claims.glued_text(root / "book" / f"{chapter}.ipynb", f"parts-{c.id}") or ""
        else:
            chapter = c.measured[0] if c.measured else (mentioned.get(c.id) or [""])[0]
            status = CONTEXT if c.context else NOT_JUDGED if root else NO_CHECKOUT
        if status not in VOCABULARY:
            raise ValueError(f"{c.id}: status {status!r} glued in {chapter} is not a word of {VOCABULARY}")
        rows.append(Verdict(c.id, c.statement, status, chapter, parts))
    return rows


def chapter_number(stem: str) -> str:
    """'11-warmup-adam' -> '11'; '' -> '—'."""
    return stem.split("-", 1)[0] if stem else "—"


def shows_parts(r: Verdict) -> bool:
    """Whether the table spells out a claim's parts: where a comparison was reversed (*mixed*,
    *does not reproduce*) or the paper's halves were judged apart (the line names several)."""
    return bool(r.parts) and (r.status in ("mixed", "does not reproduce") or " · " in r.parts)


def verdict_table(rows) -> str:
    """The verdict table as Markdown: id, the claim in one line, its status (with its parts
    where :func:`shows_parts`), its chapter."""
    cells = []
    for r in rows:
        statement = r.statement.replace("|", "\\|")
        ident = r.id.replace("-", "\u2011")  # a non-breaking hyphen: "LN-1" stays on one line
        status = f"*{r.status}*" + (f": {r.parts.replace('|', '/')}" if shows_parts(r) else "")
        cells.append([ident, statement, status, chapter_number(r.chapter)])
    return md_table(["id", "claim", "status", "chapter"], cells)


def by_status(rows) -> dict:
    """{status: [claim id, …]} for every word of :data:`VOCABULARY` (empty lists included)."""
    out = {s: [] for s in VOCABULARY}
    for r in rows:
        out[r.status].append(r.id)
    return out


def status_table(rows) -> str:
    """How many claims have each status, with their ids (statuses no claim has are left out)."""
    counted = [[f"*{status}*", len(ids), ", ".join(ids)]
               for status, ids in by_status(rows).items() if ids]
    return md_table(["status", "claims", "ids"], counted)


def _chapter(root: Path, number: str) -> Path | None:
    found = sorted((root / "book").glob(f"{number}-*.ipynb"))
    return found[0] if found else None


@dataclass(frozen=True)
class WarmupSummary:
    chapter: str  # '11'
    source: str  # 'summary' (the chapter's glued warmup-summary-NN), 'statuses' (its claims'), 'none'
    text: str


def warmup_summaries(root=_CHECKOUT) -> list[WarmupSummary]:
    """What chapters 11, 12 and 14 say about warmup: each chapter's glued ``warmup-summary-NN``
    where it has one, else the statuses of the claims in :data:`WARMUP_CHAPTERS` (and which)."""
    root = _root(root)
    rows = verdicts(root) if root else []
    status = {r.id: r.status for r in rows}
    out = []
    for number, (glue_name, ids) in WARMUP_CHAPTERS.items():
        nb = _chapter(root, number) if root else None
        text = claims.glued_text(nb, glue_name) if nb else None
        if text:
            out.append(WarmupSummary(number, "summary", text))
        elif root:
            words = "; ".join(f"{i} ({BY_ID[i].statement.rstrip('.')}): {status[i]}" for i in ids)
            out.append(WarmupSummary(number, "statuses", words))
        else:
            out.append(WarmupSummary(number, "none", NO_CHECKOUT))
    return out


def warmup_list(summaries) -> str:
    """The warmup summaries as a Markdown list, each saying where its words come from."""
    said = {"summary": "in its own summary", "statuses": "by its claims' statuses, no summary glued yet",
            "none": "nothing readable"}
    return "\n".join(f"- **Chapter {s.chapter}**, {said[s.source]}: {s.text}" for s in summaries)


def _full_records(name: str) -> list:
    """An experiment's GPU (``full``-profile) records from the checkout's ``results/`` or the
    copy an installed tfx ships; [] where there are none or the file cannot be read (its own
    warning names it)."""
    from ..runs import results

    try:
        return results.load(name, "full")
    except (OSError, ValueError):
        return []


def gpu_complete(name: str) -> bool:
    """Whether every run of experiment ``name``'s full profile has a GPU record (a sweep part-run
    by a burst is not complete)."""
    from ..runs.experiment import Experiment

    recs = _full_records(name)
    return bool(recs) and len(recs) >= len(Experiment.load(name).runs("full"))


def gpu_plan_split(names) -> tuple[list, list]:
    """(the experiments of ``names`` in the GPU plan, :data:`tfx.runs.cost.GPU_PLAN`; the rest,
    which have no GPU profile and are the CPU's alone), each in ``names``' order."""
    from ..runs.cost import GPU_PLAN

    return [n for n in names if n in GPU_PLAN], [n for n in names if n not in GPU_PLAN]


def gpu_status(load=None) -> dict:
    """{training claim: [its experiments without complete GPU (``full``-profile) records]} for
    every claim :mod:`tfx.book.evidence` registers comparisons for; an empty list: all recorded
    (:func:`gpu_complete`). Reads the checkout's ``results/`` or the copy an installed tfx ships."""
    from . import evidence

    load = load or gpu_complete
    out = {}
    for claim, comps in evidence.BY_CLAIM.items():
        missing = sorted({c.experiment for c in comps if not load(c.experiment)})
        out[claim] = missing
    return out


def gpu_verdicts(load=None) -> list:
    """``[(Comparison, Effect)]``: every comparison :mod:`tfx.book.evidence` registers, for any
    claim, that the GPU (``full``-profile) records in so far can read, judged as the book
    profile's are (:func:`tfx.book.evidence.gpu_effects`). ``load(name)``: an
    experiment's GPU records (default: the checkout's ``results/`` or the shipped copy)."""
    from . import evidence

    load = load or _full_records
    names = sorted({c.experiment for comps in evidence.BY_CLAIM.values() for c in comps})
    gpu = {n: recs for n in names if (recs := load(n))}
    return evidence.gpu_effects(gpu, claims=tuple(evidence.BY_CLAIM))


def gpu_verdicts_sentence(items, load=None) -> str:
    """'4 comparisons (AD-3, WU-1) can be read from them: 3 of 4 reproduce, 1 is not testable
    at this scale', or that none can be read yet, from :func:`gpu_verdicts`; each verdict as
    :meth:`tfx.book.evidence.Comparison.verdict` gives it on the GPU records (``load``, as for
    :func:`gpu_verdicts`): a converged-quality comparison on runs still falling is not testable."""
    if not items:
        return "no registered comparison can be read from them yet"
    load = load or _full_records
    claims = ", ".join(dict.fromkeys(c.claim for c, _ in items))
    n = len(items)
    return (f"{n} comparison{'s' if n != 1 else ''} ({claims}) can be read from them: "
            f"{verdict_tally(c.verdict(load(c.experiment), e) for c, e in items)}")

