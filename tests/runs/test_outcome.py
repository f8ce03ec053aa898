"""The book's one outcome rule (tfx.runs.outcome), the data-order seeds and the task with a floor."""
import math

import pytest
import torch

from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.runs import outcome
from tfx.runs.data import load_task, synthetic
from tfx.runs.train import History, data_step

TASK = synthetic("reverse", vocab=8, length=6)


def _hist(eval_loss, chance=3.0, floor=0.0, status="learned", **kw):
    return History(status=status, chance_loss=chance, floor_loss=floor, eval_step=[10] * len(eval_loss),
                   eval_loss=list(eval_loss), **kw)


@pytest.mark.parametrize("loss, verdict", [(0.1, "learned"), (2.25, "learned"), (2.26, "did not learn"),
                                           (3.5, "did not learn"), (float("nan"), "diverged")])
def test_the_rule_reads_the_last_held_out_loss_against_chance(loss, verdict):
    """Learned: the held-out loss closed ≥ a quarter of the gap chance 3 → floor 0 (≤ 2.25)."""
    assert outcome.judge(_hist([9.0, loss])).verdict == verdict


def test_the_floor_moves_the_line_and_the_excess_is_the_quality():
    h = _hist([1.6], chance=3.0, floor=1.0)
    out = outcome.judge(h)
    assert out.verdict == "learned" and out.excess == pytest.approx(0.6) and out.gap_closed == pytest.approx(0.7)
    assert outcome.judge(_hist([2.6], chance=3.0, floor=1.0)).verdict == "did not learn"  # 20 % of the gap
    assert outcome.learned_level(3.0, 1.0) == pytest.approx(2.5)


def _curve(*losses, every=50):
    return {"eval_step": [every * (i + 1) for i in range(len(losses))], "eval_loss": list(losses)}


@pytest.mark.parametrize("losses, verdict", [
    ((2.9, 2.8, 2.7, 2.6, 2.5), "still learning"),  # 2.5 is 3.8 % below 2.6 at step 200 (≤ 250 − 50)
    ((2.9, 2.8, 2.6, 2.6, 2.59), "did not learn"),  # 0.4 %: a plateau
    ((2.9, 2.5, 2.4, 2.4, 2.7), "did not learn"),  # rising at the end: stuck, not slow
    ((2.9, 2.8, 2.7, 2.2, 2.0), "learned"),  # past the line (2.25), whatever the slope
    ((2.9, 2.8, 2.7, 2.6, 2.6 * 0.995), "did not learn"),  # 0.5 %: not more than STILL_FALLING
    ((2.9, 2.8, 2.7, 2.6, 2.6 * 0.985), "still learning"),
])
def test_slow_is_told_from_failed_by_the_last_fifth_of_the_run(losses, verdict):
    """Short of the line, a run whose held-out loss fell > 1 % over the last fifth is still
    learning (slow); flat or rising, it did not learn (failed). Read both ways."""
    h = History(status="did not learn", chance_loss=3.0, floor_loss=0.0, **_curve(*losses))
    out = outcome.judge(h)
    assert out.verdict == verdict
    assert (out.verdict == "still learning") == (outcome.still_falling(h) is not None) or out.verdict == "learned"
    if verdict == "still learning":
        assert "still falling" in out.reason and "step 200" in out.reason
        assert verdict not in outcome.FAILED


@pytest.mark.parametrize("losses, bleu, verdict", [
    ((2.9, 2.5, 2.0, 1.9, 1.5), 5.0, "learned"),  # past the line and translating
    ((2.9, 2.5, 2.0, 1.9, 1.5), 0.3, "still learning"),  # past the loss line, ignores the source, falling
    ((2.9, 2.5, 2.0, 1.5, 1.5), 0.3, "did not learn"),  # ignores the source, on a plateau
    ((2.9, 2.8, 2.7, 2.6, 2.5), 5.0, "still learning"),  # short of the loss line, falling
])
def test_on_translation_bleu_gates_learned_and_the_slope_tells_slow_from_failed(losses, bleu, verdict):
    """A run whose translations ignore the source (BLEU < MIN_BLEU) has not learned, whatever its
    loss; it failed only if its held-out loss has stopped falling too (issue 27: no run is called
    'did not learn' while its held-out loss still falls)."""
    h = History(status="finished", chance_loss=3.0, floor_loss=0.0, bleu=[0.0] * 4 + [bleu], **_curve(*losses))
    out = outcome.judge(h)
    assert out.verdict == verdict
    if bleu < outcome.MIN_BLEU:
        assert "BLEU" in out.reason


def test_too_few_evaluations_cannot_be_called_still_learning():
    h = History(status="did not learn", chance_loss=3.0, **_curve(2.9, 2.6, every=250))  # steps 250, 500
    assert outcome.still_falling(h) is not None  # 250 is a fifth or more before 500
    one = History(status="did not learn", chance_loss=3.0, **_curve(2.6))
    assert outcome.still_falling(one) is None and outcome.judge(one).verdict == "did not learn"
    close = History(status="did not learn", chance_loss=3.0, eval_step=[450, 500], eval_loss=[2.9, 2.6])
    assert outcome.still_falling(close) is None  # 450 is not a fifth of the run before 500


def test_a_diverged_run_stays_diverged_whatever_its_last_loss():
    h = _hist([0.1], status="diverged", diverged_step=7, reason="step 7: loss nan is not finite")
    out = outcome.judge(h)
    assert out.verdict == "diverged" and out.step == 7 and "not finite" in out.reason


def test_a_chance_at_or_below_the_floor_is_refused_by_name():
    with pytest.raises(ValueError, match="chance_loss=1.0 must exceed floor_loss=1.0"):
        outcome.judge(_hist([0.5], chance=1.0, floor=1.0))


def test_summarize_counts_and_shows_every_seed():
    runs = [_hist([0.5]), _hist([2.9]), _hist([0.7]), _hist([0.1], status="diverged")]
    s = outcome.summarize(runs)
    assert s["verdicts"] == ["learned", "did not learn", "learned", "diverged"]
    assert s["counts"] == {"learned": 2, "still learning": 0, "did not learn": 1, "diverged": 1} and s["n"] == 4
    assert s["median"] == 0.7 and (s["low"], s["high"]) == (0.5, 2.9)
    assert outcome.describe(runs) == "learned 2/4, did not learn 1/4, diverged 1/4 · held-out loss 0.700 (0.500–2.900)"


def test_records_are_rejudged_by_the_current_rule():
    """A record written under an older rule ('ok' / 'stuck') reads with today's verdict."""
    from tfx.runs.results import Record

    h = train(build_model(ModelConfig.for_task(TASK, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1)),
              TASK, steps=3, lr=1e-6)
    d = {"label": "x", "config": ModelConfig.for_task(TASK).to_dict(), "train_config": TrainConfig().to_dict(),
         "seed": 0, "code_version": "old", "device": "cpu", "wall_time": 1.0, "status": "ok",
         "history": h.to_dict() | {"status": "ok", "reason": ""}}
    rec = Record.from_dict(d)
    assert rec.status == rec.history.status == rec.outcome.verdict == "did not learn"


def test_a_results_file_is_restamped_with_the_current_rule(tmp_path):
    """Records stored under an older rule ('did not learn' for a run still falling) are
    rewritten with today's verdict by ``python -m tfx.sweep … --rejudge``; a current record
    is left byte for byte."""
    import json

    from tfx.runs import results, sweep

    from tfx.runs.experiment import Experiment

    # an open batch (a sealed one is never rewritten: it is judged anew when read)
    recs = sweep.run_experiment(Experiment.load("warmup-fixes"), "quick", tmp_path, progress=False, seal=False)
    path = results.files_for(tmp_path, "warmup-fixes", "quick")[0]
    lines = path.read_text().splitlines()
    old = json.loads(lines[0])
    falling = {**old["history"], "eval_step": [10, 20, 30, 40, 50], "eval_loss": [9.0, 8.9, 8.8, 8.7, 8.5],
               "status": "did not learn", "reason": "an older rule's words"}
    stale = {**old, "status": "did not learn", "reason": "an older rule's words", "history": falling}
    path.write_text("\n".join([json.dumps(stale)] + lines[1:]) + "\n")
    before_rest = path.read_text().splitlines()[1:]
    assert sweep.main(["warmup-fixes", "--profile", "quick", "--results", str(tmp_path), "--rejudge"]) == 0
    after = path.read_text().splitlines()
    d = json.loads(after[0])
    assert d["status"] == d["history"]["status"] == "still learning" and "still falling" in d["reason"]
    assert after[1:] == before_rest and len(recs) == len(after)
    assert results.rejudge_file(path) == 0  # current now


# ------------------------------------------------------------------ data-order seeds
def test_data_seed_defaults_to_the_seed_and_seeds_see_different_batches():
    assert data_step(1, TrainConfig(seed=0)) == 0
    assert data_step(1, TrainConfig(seed=2)) == data_step(1, TrainConfig(seed=5, data_seed=2)) != 0
    cfg = ModelConfig.for_task(TASK, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1, dropout=0.0)

    def run(**kw):
        return train(build_model(cfg, seed=0), TASK, steps=4, lr=1e-3, batch_size=4, **kw).loss

    base = run(seed=0)
    assert run(seed=0, data_seed=0) == base
    assert run(seed=0, data_seed=1)[1:] != base[1:]  # same weights, other batches
    assert run(seed=0, data_seed=1)[0] != base[0]  # the first batch too


def test_resume_is_bit_exact_with_a_data_seed(tmp_path):
    cfg = ModelConfig.for_task(TASK, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1)
    tc = TrainConfig(steps=8, lr=1e-3, batch_size=4, seed=3, data_seed=7, checkpoint_every=4,
                     checkpoint_path=str(tmp_path / "c.pt"))
    straight = train(build_model(cfg, seed=3), TASK, tc.replace(checkpoint_every=0, checkpoint_path=None))
    first = train(build_model(cfg, seed=3), TASK, tc.replace(steps=4))
    assert first.steps_done == 4
    resumed = train(build_model(cfg, seed=3), TASK, tc, resume=True)
    assert resumed.loss == straight.loss and resumed.eval_loss == straight.eval_loss


# ------------------------------------------------------------------ a task with a floor
def test_the_noisy_task_floor_is_the_entropy_of_its_targets():
    """An oracle that knows the transform and the noise scores the floor, within sampling error."""
    t = synthetic("reverse", vocab=8, length=6, noise=0.3)
    b = t.batch(0, 20000)
    clean = t.transform(b.src[:, :-1])
    p_true = 1 - 0.3 + 0.3 / 8
    hit = (b.tgt[:, 1:-1] == clean).float()
    nll = -(hit * math.log(p_true) + (1 - hit) * math.log(0.3 / 8)).sum(1) / 7  # EOS costs 0
    assert nll.mean().item() == pytest.approx(t.floor_loss, rel=0.01)
    assert t.floor_loss < t.chance_loss and synthetic("reverse").floor_loss == 0.0


def test_noise_changes_the_targets_only_and_is_validated():
    clean, noisy = synthetic("reverse", noise=0.0).batch(3, 64), synthetic("reverse", noise=0.2).batch(3, 64)
    assert torch.equal(clean.src, noisy.src) and not torch.equal(clean.tgt, noisy.tgt)
    assert load_task("reverse-noisy").noise == 0.2 and load_task("reverse-noisy").name.endswith("noise0.2")
    for bad in (1.0, -0.1, "0.2", True):
        with pytest.raises(ValueError, match="noise="):
            synthetic("reverse", noise=bad)


def test_the_trainer_records_the_floor():
    t = synthetic("reverse", vocab=8, length=6, noise=0.2)
    h = train(build_model(ModelConfig.for_task(t, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1)), t, steps=2)
    assert h.floor_loss == t.floor_loss > 0 and outcome.judge(h).floor == t.floor_loss
