"""Runs that break mid-way (SZ-1..3, SC-1): the schedules after cosine, the spike guards of the
one step (tfx.nn.optim.SpikeGuard) and the injections of the spike zoo (tfx.runs.train).

Each option has a test that fails when the option does nothing: its run differs from the
same run without it from the step it acts on, and not before.
"""
import math

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig
from tfx.nn.batch import repeated_ngram
from tfx.nn.optim import GUARD_MIN_STEPS, SpikeGuard, drop_state, lr_at, make_optimizer, take_step
from tfx.runs.train import MAX_ROLLBACKS, _Run, build_for_run, train

TASK = tfx.synthetic("reverse", vocab=8, length=6)
MODEL = ModelConfig.for_task(TASK, d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1, placement="pre")
BASE = TrainConfig(steps=60, batch_size=8, lr=3e-3, eval_batches=1, bleu_sentences=0, diagnose=False)
BUMP = dict(inject="lr-bump", inject_step=30, inject_lr_factor=100.0, inject_length=3)


def _run(**kw):
    cfg = BASE.replace(**kw)
    return train(build_for_run(MODEL, TASK, cfg), TASK, cfg)


@pytest.fixture(scope="module")
def plain():
    return _run()


def _first_difference(a, b):
    return next((t for t, x, y in zip(a.step, a.loss, b.loss) if x != y), None)


# ------------------------------------------------------------------ schedules (SC-1)
def test_the_schedules_have_their_shapes():
    c = dict(steps=100, warmup=10, lr=1.0)
    cosine = TrainConfig(schedule="cosine", **c)
    assert lr_at(10, cosine) == 1.0 and lr_at(100, cosine) == pytest.approx(0.1)
    assert lr_at(55, cosine) == pytest.approx(0.55)  # halfway after warmup: f + (1 − f)/2
    assert lr_at(100, TrainConfig(schedule="cosine", final_lr_fraction=0.0, **c)) == pytest.approx(0.0)
    lin, sqrt = TrainConfig(schedule="wsd-linear", **c), TrainConfig(schedule="wsd-sqrt", **c)
    assert [lr_at(t, lin) for t in (11, 50, 80)] == [1.0, 1.0, 1.0]  # stable until the cooldown's 20 steps
    assert lr_at(90, lin) == pytest.approx(0.5) and lr_at(90, sqrt) == pytest.approx(1 - math.sqrt(0.5))
    assert lr_at(100, lin) == 0.0 and lr_at(100, sqrt) == 0.0
    assert all(lr_at(t, sqrt) <= lr_at(t, lin) for t in range(81, 101))  # (1 − √v) ≤ (1 − v)
    short = TrainConfig(schedule="wsd-linear", cooldown_fraction=0.5, **c)
    assert lr_at(75, short) == pytest.approx(0.5)


def test_the_warmup_and_the_old_schedules_keep_their_arithmetic():
    """The rates of the records made before these schedules, to the bit: lr·(t/w) in warmup."""
    for schedule in ("constant", "linear-decay"):
        cfg = TrainConfig(steps=50, warmup=7, lr=3e-4, schedule=schedule)
        for t in range(1, 51):
            warm = min(1.0, t / 7)
            old = cfg.lr * max(0.0, (50 - t) / 43) if schedule == "linear-decay" and t > 7 else cfg.lr * warm
            assert lr_at(t, cfg) == old, (schedule, t)


@pytest.mark.parametrize("field, value, chooser", [("final_lr_fraction", 0.0, "schedule"),
                                                   ("cooldown_fraction", 0.5, "schedule"),
                                                   ("guard_window", 20, "spike_guard"),
                                                   ("guard_percentile", 50.0, "spike_guard"),
                                                   ("guard_z", 3.0, "spike_guard"),
                                                   ("inject_lr_factor", 2.0, "inject"),
                                                   ("inject_length", 2, "inject")])
def test_a_setting_that_nothing_reads_is_refused_by_name(field, value, chooser):
    with pytest.raises(ValueError, match=f"{field}=.*no effect.*{chooser}"):
        TrainConfig(**{field: value})


@pytest.mark.parametrize("kw, match", [(dict(schedule="cosin"), "schedule='cosin' is not allowed"),
                                       (dict(spike_guard="clip"), "spike_guard='clip' is not allowed"),
                                       (dict(inject="nan"), "inject='nan' is not allowed"),
                                       (dict(inject="lr-bump"), "inject='lr-bump' with inject_step=0"),
                                       (dict(inject_step=3), "inject='none' with inject_step=3"),
                                       (dict(inject="lr-bump", inject_step=500), "inject_step=500 must be ≤ steps"),
                                       (dict(clip=1.0, spike_guard="clip-zscore"), "both clip"),
                                       (dict(spike_guard="clip-percentile", guard_percentile=100.0),
                                        "guard_percentile=100.0 must be")])
def test_bad_settings_are_refused_naming_the_field(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kw)


# ------------------------------------------------------------------ the guards' decisions
def test_the_percentile_clip_clips_above_the_percentile_of_the_norms_seen():
    guard = SpikeGuard("clip-percentile", window=100, percentile=90.0)
    assert all(guard.on_norm(float(n)) is None for n in range(1, GUARD_MIN_STEPS + 1))  # not yet
    assert guard.on_norm(5.0) is None  # below the 90th percentile of 1…10 (9.1)
    action = guard.on_norm(50.0)
    assert action[0] == "clip" and action[1] == pytest.approx(torch.tensor(
        [float(n) for n in range(1, 11)] + [5.0], dtype=torch.float64).quantile(0.9).item())


def test_the_zscore_clip_clips_to_mean_plus_z_sigma_and_its_statistics_take_the_clipped_norm():
    guard = SpikeGuard("clip-zscore", z=2.5)
    norms = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0, 1.2, 0.8, 1.1, 0.9]
    assert all(guard.on_norm(n) is None for n in norms)
    mean, std = guard.mean, math.sqrt(guard.var)
    what, c = guard.on_norm(100.0)
    assert what == "clip" and c == pytest.approx(mean + 2.5 * std)
    assert guard.mean == pytest.approx(0.97 * mean + 0.03 * c)  # the spike itself never enters the EMA


def test_the_skip_guard_skips_a_spike_and_keeps_it_in_its_window_so_a_run_cannot_freeze():
    guard = SpikeGuard("skip-zscore", window=50, z=3.0)
    for n in [1.0, 1.1, 0.9] * 5:
        assert guard.on_norm(n) is None
    what, z = guard.on_norm(30.0)
    assert what == "skip" and z > 3.0 and guard.values[-1] == 30.0
    skipped = 1
    while guard.on_norm(30.0) is not None:  # the model stays broken: its norms stay high
        skipped += 1
    assert skipped < 5  # the window learns the new level instead of skipping for ever


def test_a_skipped_step_moves_neither_the_weights_nor_the_moments():
    model = build_for_run(MODEL, TASK, BASE)
    opt = make_optimizer(model, BASE)
    batch = TASK.batch(0, 8)
    guard = SpikeGuard("skip-zscore", z=3.0)
    guard.values.extend([1e-3] * GUARD_MIN_STEPS)  # every real norm is then a spike
    guard.values[0] = 2e-3
    take_step(opt, model.loss_and_accuracy(batch.src, batch.tgt)[0], lr=1e-3)  # moments exist
    theta = [p.detach().clone() for p in model.parameters()]
    moments = [s["exp_avg"].clone() for s in opt.state.values()]
    take_step(opt, model.loss_and_accuracy(batch.src, batch.tgt)[0], lr=1e-3, guard=guard)
    assert guard.last[0] == "skip"
    assert all(torch.equal(a, p) for a, p in zip(theta, model.parameters()))
    assert all(torch.equal(m, s["exp_avg"]) for m, s in zip(moments, opt.state.values()))
    guard.values.clear()  # no statistics: the same step is taken
    take_step(opt, model.loss_and_accuracy(batch.src, batch.tgt)[0], lr=1e-3, guard=guard)
    assert guard.last is None and not all(torch.equal(a, p) for a, p in zip(theta, model.parameters()))


def test_drop_state_forgets_the_moments():
    model = build_for_run(MODEL, TASK, BASE)
    opt = make_optimizer(model, BASE)
    batch = TASK.batch(0, 8)
    take_step(opt, model.loss_and_accuracy(batch.src, batch.tgt)[0], lr=1e-3)
    assert opt.state
    drop_state(opt)
    assert not opt.state


# ------------------------------------------------------------------ in a run: each option acts, from its step
def test_the_percentile_clip_clips_some_steps_and_changes_the_run(plain):
    h = _run(spike_guard="clip-percentile", guard_percentile=50.0)
    assert 0 < h.steps_clipped < BASE.steps and h.steps_skipped == 0
    assert _first_difference(h, plain) is not None and _first_difference(h, plain) > GUARD_MIN_STEPS


def test_a_fixed_clip_is_counted(plain):
    h = _run(clip=0.05)
    assert h.steps_clipped == BASE.steps and plain.steps_clipped == 0
    assert _first_difference(h, plain) == 2  # the first update is clipped: the second loss differs


@pytest.mark.parametrize("inject, first", [("lr-bump", 31), ("fresh-moments", 31), ("repeated-ngram", 30),
                                           ("data-reset", 30)])
def test_each_injection_changes_the_run_from_its_step_and_not_before(plain, inject, first):
    kw = BUMP if inject == "lr-bump" else dict(inject=inject, inject_step=30)
    h = _run(**kw)
    assert _first_difference(h, plain) == first  # a change of the update shows in the next step's loss
    if inject == "lr-bump":
        assert h.lr[29:33] == pytest.approx([100 * x for x in plain.lr[29:32]] + plain.lr[32:33])


def test_the_injected_batches_are_what_they_say():
    cfg = BASE.replace(inject="repeated-ngram", inject_step=5)
    run = _Run(build_for_run(MODEL, TASK, cfg), TASK, cfg, torch.device("cpu"))
    assert torch.equal(run.batch(5).tgt, repeated_ngram(TASK.batch(tfx.nn.optim.data_step(5, cfg), 8)).tgt)
    assert torch.equal(run.batch(6).tgt, TASK.batch(tfx.nn.optim.data_step(6, cfg), 8).tgt)
    reset = BASE.replace(inject="data-reset", inject_step=5)
    run = _Run(build_for_run(MODEL, TASK, reset), TASK, reset, torch.device("cpu"))
    assert torch.equal(run.batch(5).tgt, run.batch(1).tgt) and torch.equal(run.batch(7).tgt, run.batch(3).tgt)
    assert not torch.equal(run.batch(4).tgt, run.batch(1).tgt)


def test_a_rollback_goes_back_skips_the_batches_and_keeps_the_history_in_order(plain):
    h = _run(spike_guard="rollback", **BUMP)
    backs = [e for e in h.interventions if e["what"] == "rollback"]
    assert 1 <= len(backs) <= MAX_ROLLBACKS
    assert all(e["to"] < e["step"] and e["step"] >= BUMP["inject_step"] for e in backs)
    assert h.step == list(range(1, BASE.steps + 1))  # one entry per step the final weights were trained on
    assert _first_difference(h, plain) is not None


def test_the_skip_guard_skips_the_bumped_steps(plain):
    h = _run(spike_guard="skip-zscore", **BUMP)
    assert h.steps_skipped >= 1 and h.steps_skipped == sum(e["what"] == "skip" for e in h.interventions)
    assert all(e["step"] > BUMP["inject_step"] for e in h.interventions)
    skipped = {e["step"] for e in h.interventions}
    assert all(h.update_norm[t - 1] == 0.0 for t in skipped)  # no update was made at a skipped step


def test_a_guarded_run_resumed_from_its_checkpoint_is_the_uninterrupted_run(tmp_path):
    kw = dict(spike_guard="skip-zscore", **BUMP)
    whole = _run(**kw)
    cut = BASE.replace(checkpoint_every=35, checkpoint_path=str(tmp_path / "cut.pt"), **kw)
    model = build_for_run(MODEL, TASK, cut)
    train(model, TASK, cut.replace(steps=36))  # saved at step 35, then cut off
    resumed = train(build_for_run(MODEL, TASK, cut), TASK, cut, resume=True)
    for name in ("loss", "grad_norm", "update_norm", "steps_skipped", "interventions", "steps_clipped"):
        assert getattr(resumed, name) == getattr(whole, name), name


def test_an_ensemble_refuses_guards_and_injections():
    from tfx.runs.ensemble import EnsembleError, check_members

    for kw in (dict(spike_guard="clip-zscore"), dict(inject="fresh-moments", inject_step=3)):
        with pytest.raises(EnsembleError, match=list(kw)[0]):
            check_members([MODEL, MODEL], [BASE.replace(**kw), BASE.replace(seed=1, **kw)])
