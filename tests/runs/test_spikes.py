"""The spike zoo's measures (tfx.runs.spikes): height, cost and recovery against the run left
alone, on constructed histories (each rule shown failing and passing) and on the spike zoo's
quick profile trained end to end."""
import math

import pytest

from tfx.runs import spikes
from tfx.runs.train import History

AT = 50


def _hist(losses, status="learned", start=None):
    h = History(status=status, step=list(range(1, len(losses) + 1)), loss=list(losses))
    h.start_loss = losses[0] if start is None else start
    return h


def _spiked(base, at=AT, bump=(2.0, 1.0, 0.5, 0.2, 0.1), tail=0.0, batch=0.0):
    """The losses of a run injected at step ``at`` (list index at − 1): ``batch`` on the
    injected step's own loss (what the batch was), ``bump`` from the step after (what it did)."""
    out = list(base)
    out[at - 1] += batch
    for i, b in enumerate(bump):
        out[at + i] += b
    for t in range(at + len(bump), len(out)):
        out[t] += tail
    return out


BASE = [4.0 - 0.01 * t for t in range(200)]


def test_height_cost_and_recovery_of_a_spike_that_heals():
    control, run = _hist(BASE), _hist(_spiked(BASE))
    assert spikes.height(run, control, AT) == pytest.approx(2.0)
    assert spikes.cost(run, control, AT) == pytest.approx(3.8 / spikes.COST_WINDOW)
    steps, ok = spikes.recovery(run, control, AT)
    # the 10-step mean of the excess from step AT + 1 + k is (sum of the bump after k) / 10 ≤ 0.05
    # from k = 3: 3 steps after the first step the injection shows on
    assert ok and steps == 3


def test_the_injected_steps_own_loss_is_not_the_spike():
    """The loss logged at the injection step is its batch's, before the update: a bad batch
    that is merely hard (or easy) to predict, and did nothing to the model, is no spike."""
    control = _hist(BASE)
    hard_batch = _hist(_spiked(BASE, bump=(), batch=3.0))
    assert spikes.height(hard_batch, control, AT) == 0.0 and spikes.cost(hard_batch, control, AT) == 0.0
    assert spikes.recovery(hard_batch, control, AT) == (0, True)
    both = _hist(_spiked(BASE, batch=3.0))
    assert spikes.height(both, control, AT) == pytest.approx(2.0)


def test_a_run_left_alone_has_no_spike_and_recovers_at_once():
    control = _hist(BASE)
    assert spikes.height(control, control, AT) == 0.0 and spikes.cost(control, control, AT) == 0.0
    assert spikes.recovery(control, control, AT) == (0, True)


def test_a_run_that_never_recovers_is_censored_at_its_last_step():
    control, run = _hist(BASE), _hist(_spiked(BASE, tail=0.3))
    steps, ok = spikes.recovery(run, control, AT)
    assert not ok and steps == 200 - AT - 1


def test_a_diverged_run_counts_its_start_loss_where_it_stopped():
    control = _hist(BASE)
    run = _hist(BASE[:AT + 2], status="diverged", start=5.0)
    run.loss[AT] = 9.0
    assert spikes.height(run, control, AT) == pytest.approx(9.0 - BASE[AT])
    assert spikes.cost(run, control, AT) > 5.0 - BASE[AT] - 0.1  # the rest of the window at L₀
    assert spikes.recovery(run, control, AT)[1] is False


def test_runs_logged_on_other_steps_are_refused():
    control = _hist(BASE)
    sparse = History(status="learned", step=[10, 20], loss=[1.0, 1.0])
    with pytest.raises(ValueError, match="log_every = 1"):
        spikes.height(sparse, control, AT)


# four of the quick profile's 60 runs, enough to see a cause, a guard and the control together
NARROW = """
[profiles.quick.grid.guard]
"no guard" = { train = { } }
"skip-step" = { train = { spike_guard = "skip-zscore" } }

[profiles.quick.grid.lr]
"1e-2" = { train = { lr = 1e-2 } }
"""


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """The quick profile of experiments/spike-zoo.toml, trained once for this module on a
    narrower grid (two guards, one rate: ``NARROW``)."""
    from pathlib import Path

    from tfx.runs.results import load
    from tfx.runs.sweep import run_experiment

    out = tmp_path_factory.mktemp("zoo")
    text = Path("experiments/spike-zoo.toml").read_text()
    quick_causes = text.index("[profiles.quick.grid.cause]")
    experiment = out / "spike-zoo.toml"
    experiment.write_text(text[:quick_causes] + NARROW + text[quick_causes:])
    run_experiment(experiment, "quick", results_dir=out, progress=False)
    recs = load("spike-zoo", "quick", results_dir=out)
    assert len(recs) == 5 * 2 * 1, len(recs)  # causes × guards × rates, one seed
    return recs


def test_the_quick_spike_zoo_end_to_end(zoo):
    """The quick profile trained here: the rate bump rises above its control, the control
    measures zero against itself, and the skip-step guard's run is measured against the
    unguarded control of its seed."""
    from tfx.runs.results import select

    recs = zoo
    at = spikes.injection_step(recs)
    assert at == 15
    bumped = select(recs, cause="rate bump", guard="no guard", lr="1e-2")[0]
    control = spikes.control_of(recs, bumped)
    assert control.point == {**bumped.point, "cause": "none"}
    assert spikes.height(bumped.history, control.history, at) > 0
    assert spikes.height(control.history, control.history, at) == 0.0
    guarded = select(recs, cause="rate bump", guard="skip-step", lr="1e-2")[0]
    assert spikes.control_of(recs, guarded) is control
    assert math.isfinite(spikes.cost(guarded.history, control.history, at))


def test_the_evidence_registry_reads_the_spike_measures_per_seed(zoo):
    from tfx.book.evidence import MEASURES

    recs = zoo
    heights = MEASURES["spike height"][0](recs, cause="rate bump", guard="no guard")
    assert list(heights) == [0] and heights[0] > 0
    assert MEASURES["spike cost"][0](recs, cause="none", guard="no guard") == {0: 0.0}
    assert MEASURES["steps to recover"][0](recs, cause="none", guard="no guard") == {0: 0.0}


def test_summary_refuses_a_point_with_no_runs(zoo):
    with pytest.raises(ValueError, match="no runs at"):
        spikes.summary(zoo, cause="rate bump", guard="rollback", lr="1e-2")
    s = spikes.summary(zoo, cause="none", guard="no guard", lr="1e-2")
    assert (s["n"], s["cost"], s["height"], s["recovered"]) == (1, 0.0, 0.0, 1)


def test_shared_spikes_count_spikes_another_recipe_has_on_the_same_batch():
    """OP-1's bad-batch control on constructed runs: a loss spike at step 30 in two recipes of
    seed 0 (the same batch) is shared; one at step 50 in one recipe only is not."""
    from types import SimpleNamespace

    def run(recipe, seed, spike_at):
        loss = [1.0] * 80
        for s in spike_at:
            loss[s] = 5.0
        h = SimpleNamespace(loss=loss, step=list(range(80)), update_norm=[1.0] * 80, eval_loss=[1.0],
                            eval_step=[80], chance_loss=6.0, floor_loss=0.0, status="finished", reason="",
                            diverged_step=0, steps_done=80, start_loss=6.0, bleu=[])
        return SimpleNamespace(seed=seed, point={"recipe": recipe}, history=h,
                               train_config=SimpleNamespace(warmup=0, steps=80))

    recs = [run("a", 0, [30, 50]), run("b", 0, [30]), run("a", 1, [30])]
    got = spikes.shared_spikes(recs)
    assert (got.shared, got.total) == (2, 4)
    # by chance: 59 steps can hold a spike (80 less the 21 of the running median's window);
    # a's two spikes meet b's one with p = 1/59, b's meets a's two with 2/59, seed 1's none
    assert got.chance == pytest.approx((1 + 1 + 2 + 0) / 59 / 4)
    assert got.low < 0.5 < got.high and got.verdict == "reproduces"  # 7 % to 93 %, against 1.7 %
    assert spikes.shared_spikes(recs[2:]).verdict == "not resolved at this scale"  # no spike to pair
    # every spike of twelve seeds shared by both recipes: far above chance
    many = [run(r, seed, [30, 60]) for seed in range(12) for r in "ab"]
    assert spikes.shared_spikes(many).verdict == "reproduces"
    # many spikes, none on the same batch: below what chance puts there
    apart = [run("a", seed, list(range(25, 80, 10))) for seed in range(12)] + [
        run("b", seed, list(range(30, 80, 10))) for seed in range(12)]
    assert spikes.shared_spikes(apart).shared == 0 and spikes.shared_spikes(apart).verdict == "reversed"


def test_largest_rise_is_the_worst_climb_above_the_running_minimum():
    h = _hist([3.0, 2.0, 2.5, 1.0, 1.8, 0.5])
    assert spikes.largest_rise(h) == pytest.approx(0.8)

    class R:
        def __init__(self, seed, losses):
            self.seed, self.history = seed, _hist(losses)

    assert spikes.largest_rises([R(0, [3.0, 2.0, 2.5]), R(1, [3.0, 1.0, 2.0])]) == {
        "max": pytest.approx(1.0), "min": pytest.approx(0.5), "seed": 1}
