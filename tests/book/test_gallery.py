"""The failure gallery (book/26-failure-gallery.ipynb): each picked run really has the shape its
caption names, read from the committed records by the book's own rules."""
from __future__ import annotations

import pytest

from tfx.book import gallery
from tfx.runs import outcome, results


def _load(name, profile):
    try:
        recs = results.load(name, profile)
    except (OSError, ValueError):
        recs = []
    if not recs:
        pytest.skip(f"no committed {profile} records of {name}")
    return recs


@pytest.fixture(scope="module")
def picks():
    return gallery.failure_gallery(load=_load)


def test_each_pick_has_the_outcome_its_caption_names(picks):
    assert set(picks) == set(gallery.KINDS)
    for kind in ("diverged", "did not learn", "still learning"):
        assert outcome.judge(picks[kind].record).verdict == kind, kind
        assert picks[kind].experiment == gallery.SOURCES[kind]


def test_the_diverged_run_started_sane_and_its_gradient_norm_rose(picks):
    r = picks["diverged"].record
    assert gallery.passes_start_check(r)
    assert gallery.grad_norm_rise(r) > 1  # more than a decade before the trainer stopped it


def test_the_plateau_ends_near_chance_and_the_slow_run_still_falls(picks):
    assert abs(outcome.judge(picks["did not learn"].record).gap_closed) < outcome.LEARNED_SHARE
    assert outcome.still_falling(picks["did not learn"].record) is None
    assert outcome.still_falling(picks["still learning"].record) > outcome.STILL_FALLING
    # the page says the slow run is the plateau's recipe on another seed
    assert picks["still learning"].label == picks["did not learn"].label
    assert picks["still learning"].seed != picks["did not learn"].seed


def test_the_spiking_run_spikes_and_did_not_diverge(picks):
    r = picks["spiking"].record
    assert gallery.spikes(r)
    assert outcome.judge(r).verdict != "diverged"


def test_the_step0_check_flags_a_scale_bug():
    recs = _load("t-fixup", "book")
    flagged = [r for r in recs if not gallery.passes_start_check(r)]
    assert flagged and len(flagged) < len(recs)
    assert all(r.history.start_loss > gallery.START_FAR * gallery.uniform_loss(gallery.vocab(r))
               for r in flagged)


def test_pickers_refuse_records_without_the_shape():
    recs = [r for r in _load("t-fixup", "book") if outcome.judge(r).verdict == "learned"][:3]
    for pick in (gallery.pick_diverged, gallery.pick_stuck, gallery.pick_slow):
        with pytest.raises(ValueError):
            pick(recs)


def test_the_broken_run_is_the_median_seed_of_its_cell_against_its_own_control():
    """The gallery's run broken on purpose (chapter 21's spike zoo): the seed whose spike cost
    is the cell's median, shown with the same seed left alone; a cell with no runs is refused."""
    import statistics

    from tfx.runs import spikes

    recs = _load(gallery.ZOO, "quick")
    run, control = gallery.broken_pick(recs, cause="rate bump", lr="3e-2")
    at = spikes.injection_step(recs)
    cell = results.select(recs, cause="rate bump", guard="no guard", lr="3e-2")
    costs = sorted(spikes.cost(r.history, spikes.control_of(recs, r).history, at) for r in cell)
    assert spikes.cost(run.history, control.history, at) == costs[(len(costs) - 1) // 2]
    assert statistics.median_low(costs) == costs[(len(costs) - 1) // 2]
    assert control.point["cause"] == "none" and control.seed == run.seed
    with pytest.raises(ValueError, match="no spike-zoo runs"):
        gallery.broken_pick(recs, cause="a meteor")
