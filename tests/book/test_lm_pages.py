"""The language-model chapters' page helpers (tfx.book.lm_pages): tables, sentences and
figures laid out from what tfx.runs and tfx.book.evidence computed."""
import matplotlib
import pytest

matplotlib.use("Agg")

from tfx.book import lm_pages, notebook  # noqa: E402
from tfx.runs import effects, results  # noqa: E402
from tfx.runs.profiles import get_profile  # noqa: E402


def _effect(a_vals, b_vals, expect="higher", a="none", b="warmup"):
    return effects.paired(dict(enumerate(a_vals)), dict(enumerate(b_vals)), expect, a, b)


def _stamp_text(fig) -> str:
    return " ".join(t.get_text() for t in fig.texts)


def test_warmup_summary_says_what_the_effects_say():
    """One sentence for the closing chapter: an unresolved effect is said to be unresolved,
    a resolved one gets its direction; the numbers are the effects' own."""
    unresolved = _effect([1.0, 1.3, 0.9], [1.1, 1.0, 1.0])
    gap = _effect([5.0, 5.1, 5.2], [4.5, 4.6, 4.7], a="Post-LN", b="Pre-LN")
    pairs = [(None, unresolved), (None, None), (None, gap)]
    text = lm_pages.warmup_summary(pairs, 6)
    assert text.startswith("In the 6-layer language model") and text.endswith(".")
    assert "cannot tell from zero" in text and f"{gap.mean:.2f} nats above Pre-LN" in text
    assert f"warmup lowered Post-LN's final held-out loss by {abs(unresolved.mean):.2f}" in text
    assert text.count(".") >= 1 and "\n" not in text
    helped = _effect([2.0, 2.1, 2.2], [1.0, 1.05, 1.1])
    text = lm_pages.warmup_summary([(None, helped), (None, gap)], 6)
    assert f"warmup lowered Post-LN's final held-out loss by {helped.mean:.2f} nats (" in text


def test_logit_figure_shares_the_y_scale_across_fixes_and_stamps_the_lm_task(logits_records):
    """Chapter 15's fig. 2: no fix and QK-norm on one y-scale per row (a 60-fold contrast in
    the largest logit must not hide behind two scales), stamped with the LM's task."""
    P = get_profile("quick", check_task=False)
    fig = lm_pages.logit_traces_figure(P, logits_records, "1e-2", "3e-2")
    (a, b), (c, d) = fig.axes[0:2], fig.axes[2:4]
    assert a.get_ylim() == b.get_ylim() and c.get_ylim() == d.get_ylim()
    assert "task: libreoffice-en" in _stamp_text(fig) and "task: reverse" not in _stamp_text(fig)


def _book(name):
    recs = results.load(name, "book")
    if not recs:
        pytest.skip(f"no book records of experiments/{name}.toml")
    return recs


def test_lm_stream_glues_medians_in_the_text_and_every_seed_in_a_table():
    """Chapter 14: the prose reads one number per quantity (the median over seeds); the
    per-seed values go to a table, one column per seed."""
    recs = _book("lm")
    P = get_profile("quick", check_task=False)
    fig = lm_pages.lm_stream_figure(P, recs, ["Post-LN", "Pre-LN"], "warmup", "3e-3")
    assert "task: libreoffice-en" in _stamp_text(fig)
    seeds = {r.seed for r in results.select(recs, placement="Pre-LN", warmup="warmup", lr="3e-3")}
    glued = lm_pages.lm_stream(recs, ["Post-LN", "Pre-LN"], "warmup", "3e-3")
    assert isinstance(glued["pre"], float) and glued["pre"] > glued["post"]
    table = str(glued["table"].data).splitlines()
    assert table[0].count("seed ") == len(seeds) and len(table) == 2 + 3


def test_placements_trained_ratio_table_replaces_the_paragraph_of_ratios():
    """Chapter 16: every seed's top stream over Pre-LN's, per scheme and rate, in a table
    (one row per scheme × rate), and the medians the prose reads."""
    recs = _book("placements")
    names = list(dict.fromkeys(r.point["placement"] for r in recs))
    lrs = sorted(dict.fromkeys(r.point["lr"] for r in recs), key=float)
    glued = lm_pages.placements_trained(recs, names, lrs, lrs[0])
    rows = str(glued["ratio-table"].data).splitlines()
    assert len(rows) == 2 + (len(names) - 1) * len(lrs)
    assert glued["pre-growth"] > 100 * glued["peri-growth"]  # the recorded contrast
    assert glued["lr-lo"] == lrs[0] and glued["lr-hi"] == lrs[-1]


def test_dy1_control_effects_read_the_controls_from_the_records():
    """The words under DY-1's controls follow the paired effects: the √d scale is not shown to
    be the cause when dropping it does not lower DyT's loss, DyT trains worse than no norm when
    the interval says so, and a control whose best rate sits at the grid's edge is named (the
    book records: +0.05 nats, −0.07 to +0.18; +2.05, +1.94 to +2.15; 5 seeds; every control
    bracketed since 3e-4 was added, and the no-√d control at the edge without it)."""
    recs = results.load("norms", "book")
    if not results.select(recs, norm="no norm"):
        pytest.skip("the norms sweep's controls are not recorded")
    words = lm_pages.dy1_control_effects(recs)
    assert words["dy1-nosqrt-says"] == "is not shown to be what sinks the default α"
    assert "trains worse than no norm" in words["dy1-overnone-says"]
    assert words["dy1-ctrl-edge"] == "" and words["dy1-nosqrt-mean"] < words["dy1-overnone-mean"]
    without_lowest = [r for r in recs if r.point["lr"] != "3e-4"]
    assert lm_pages.dy1_control_effects(without_lowest)["dy1-ctrl-edge"].startswith(
        " (DyT, no √d embedding scale: best rate at the grid's edge")


def test_init_sentence_names_the_law_that_fails_and_whether_the_encoder_fails_it_too():
    laws = ("Post-LN grows like N", "Pre-LN grows like ln N", "Post-LN over 3× Pre-LN at the deepest N")
    fit = lambda *held: {"parts": dict(zip(laws, held))}  # noqa: E731
    sentence = lambda lm, enc: lm_pages.init_verdicts(lm, enc, False)[0]  # noqa: E731
    assert "holds" in sentence(fit(True, True, True), fit(True, True, True))
    both = sentence(fit(True, False, True), fit(True, False, True))
    assert "“Pre-LN grows like ln N” fails in the LM and in the encoder alike" in both
    assert "not borne out" in both and "Post-LN grows like N" not in both
    lm_only = sentence(fit(False, True, True), fit(True, True, True))
    assert "“Post-LN grows like N” fails in the LM (the encoder follows it)" in lm_only


def test_init_takeaway_says_the_laws_hold_only_where_the_verdict_does():
    laws = ("Post-LN grows like N", "Pre-LN grows like ln N", "Post-LN over 3× Pre-LN at the deepest N")
    fit = lambda *held: {"parts": dict(zip(laws, held))}  # noqa: E731
    takeaway = lambda lm, same: lm_pages.init_verdicts(lm, lm, same)[1]  # noqa: E731
    assert takeaway(fit(True, True, True), True).startswith("follow")
    missed = takeaway(fit(True, False, True), False)
    assert missed.startswith("do not follow") and "“Pre-LN grows like ln N” fails" in missed
    assert missed.endswith("(“Pre-LN grows like ln N” fails)")
    assert "encoder's do not" in takeaway(fit(True, True, True), False)
