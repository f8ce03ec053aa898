"""Ensembles (tfx.runs.ensemble): K runs of one architecture trained as one program, each
member the run tfx.train would make of it.

In float64, tiny models. Tolerances, measured (see the module docstring):
  * the History's numbers are float32, as the trainer records them: grad_norm, update_norm,
    lr, acc, eval_loss, eval_acc equal to the bit on these runs; loss and log_z within a few
    float32 roundings (the batched cross-entropy sums in another order): LOSS_REL;
  * the parameters at the end, float64: max |θ_ensemble − θ_single| ≤ PARAM_REL · max |θ|
    (measured ≈ 1e-12; the largest differences are in the key biases, whose gradient is zero
    up to rounding).
"""
import math

import numpy as np
import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig
from tfx.nn.blocks import Attention
from tfx.nn.optim import Members, take_step
from tfx.runs.ensemble import EnsembleError, build_members, check_members, compatible, train_ensemble
from tfx.runs.train import build_for_run, train

TASK = tfx.synthetic("reverse", vocab=8, length=6)
LOSS_REL = 1e-6  # a few float32 roundings (2^-23 ≈ 1.2e-7 each)
PARAM_REL = 1e-10
EXACT = ("lr", "grad_norm", "update_norm", "acc", "eval_loss", "eval_acc", "step", "eval_step")
CLOSE = ("loss", "log_z", "log_z_absmax")


def _config(task=TASK, **kw):
    base = dict(d_model=16, n_heads=2, d_ffn=32, n_enc=1, n_dec=1)
    return ModelConfig.for_task(task, **{**base, **kw})


def _assert_member_is_its_single_run(config, task, cfg, member_model, member_hist):
    single_model = build_for_run(config, task, cfg).double()
    single = train(single_model, task, cfg)
    assert (member_hist.status, member_hist.reason, member_hist.steps_done, member_hist.diverged_step) == \
           (single.status, single.reason, single.steps_done, single.diverged_step)
    assert member_hist.tokens == single.tokens and member_hist.train_config == single.train_config
    for name in EXACT:
        assert getattr(member_hist, name) == pytest.approx(getattr(single, name), rel=0, abs=0, nan_ok=True), name
    for name in CLOSE:
        assert getattr(member_hist, name) == pytest.approx(getattr(single, name), rel=LOSS_REL, nan_ok=True), name
    if single.status == "diverged":  # stopped where its single run stopped (then replayed, as that run was)
        assert member_hist.diagnosis["summary"] == single.diagnosis["summary"]
        assert member_hist.diagnosis["loss"] == pytest.approx(single.diagnosis["loss"], rel=LOSS_REL)
    scale = max(float(p.abs().max()) for p in single_model.parameters())
    gap = max(float((p - q).abs().max()) for p, q in zip(single_model.parameters(), member_model.parameters()))
    assert gap <= PARAM_REL * scale, f"parameters differ by {gap:.3g} (largest |θ| {scale:.3g})"
    return single


@pytest.mark.parametrize("placement", ["post", "pre", "admin"])
def test_each_member_is_its_single_run_and_a_diverged_member_leaves_the_others_be(placement):
    """Post-LN, Pre-LN and Admin encoder–decoders on the reverse task, members differing in
    seed, lr and schedule; the third member's lr is far too large: it diverges, is diagnosed as
    its single run is, and the two others match their single runs to the end."""
    config = _config(placement=placement, init="admin" if placement == "admin" else "xavier")
    base = TrainConfig(steps=12, batch_size=4, eval_every=4, eval_batches=1, clip=0.5, warmup=3, log_every=2)
    cfgs = [base.replace(seed=0, lr=1e-3), base.replace(seed=1, lr=3e-3, schedule="inverse-sqrt"),
            base.replace(seed=2, lr=30.0)]
    models = [m.double() for m in build_members(config, TASK, cfgs)]
    hists = train_ensemble(models, TASK, cfgs)
    singles = [_assert_member_is_its_single_run(config, TASK, c, m, h) for c, m, h in zip(cfgs, models, hists)]
    assert [h.status == "diverged" for h in hists] == [False, False, True]
    assert hists[2].diverged_step < hists[0].steps_done == 12
    assert any(g > base.clip for s in singles for g in s.grad_norm)  # clipping was per member, and it bit
    assert hists[0].eval_loss != hists[1].eval_loss  # two runs, not one


def test_a_decoder_only_language_model_member_is_its_single_run():
    """The LM task: members' batches have different lengths (padded to the longest in the
    stack), one member with weight decay. AdamW's: under Adam's coupled decay (an L2 term in
    the gradient) the key biases, whose gradient is zero but for rounding, follow the rounding
    noise to ~1e-3, and a single run on SDPA's math kernel differs from one on its fused kernel
    by ~1e-6 in update_norm: no closer match to a single run is possible there."""
    from tfx.runs.data import load_task

    task = load_task("libreoffice-en")
    config = _config(task, n_enc=0, n_dec=1, placement="pre")
    base = TrainConfig(steps=6, batch_size=4, eval_every=3, eval_batches=1, clip=1.0, bleu_sentences=0,
                       optimizer="adamw")
    cfgs = [base.replace(seed=0, lr=1e-3), base.replace(seed=1, lr=3e-3, weight_decay=0.1)]
    assert task.batch(0, 4).tgt.shape != task.batch(tfx.nn.optim.DATA_STREAM, 4).tgt.shape
    models = [m.double() for m in build_members(config, task, cfgs)]
    for c, m, h in zip(cfgs, models, train_ensemble(models, task, cfgs)):
        _assert_member_is_its_single_run(config, task, c, m, h)


@pytest.mark.parametrize("device_type, fused", [("cpu", True), ("cuda", False), ("mps", False)])
def test_the_template_fuses_attention_only_where_sdpa_batches(device_type, fused):
    """FUSED_ATTENTION: on a CPU the members' attention is SDPA's math kernel; on CUDA (where each
    of SDPA's kernels failed under vmap on an H200) and on any other device, written out. The
    members' own models are left as they are: a single run keeps its kernels."""
    from tfx.runs.ensemble import _member_template

    model = build_members(_config(n_enc=2, n_dec=2), TASK, [TrainConfig()])[0]
    attention = [m for m in _member_template(model, device_type).modules() if isinstance(m, Attention)]
    assert len(attention) == 6 and {m.fused for m in attention} == {fused}
    assert {m.fused for m in model.modules() if isinstance(m, Attention)} == {True}


def test_members_with_written_out_attention_are_their_single_runs(monkeypatch):
    """The ensemble's CUDA attention (Attention.fused = False), here on the CPU in float64: Post-LN
    members, one with a padded LM batch's causal mask among them too, are their single runs
    (on SDPA) to the same tolerances as on the math kernel."""
    from tfx.runs import ensemble
    from tfx.runs.data import load_task

    monkeypatch.setattr(ensemble, "FUSED_ATTENTION", {})
    base = TrainConfig(steps=8, batch_size=4, eval_every=4, eval_batches=1, clip=0.5, warmup=2, log_every=2,
                       bleu_sentences=0)
    for task, config in ((TASK, _config(placement="post")),
                         (load_task("libreoffice-en"), _config(load_task("libreoffice-en"), n_enc=0, n_dec=1,
                                                               placement="pre"))):
        cfgs = [base.replace(seed=0, lr=1e-3), base.replace(seed=1, lr=3e-3)]
        models = [m.double() for m in build_members(config, task, cfgs)]
        for c, m, h in zip(cfgs, models, train_ensemble(models, task, cfgs)):
            _assert_member_is_its_single_run(config, task, c, m, h)


@pytest.mark.parametrize("placement", ["post", "admin"])
def test_a_member_with_dropout_draws_its_single_runs_masks_and_is_that_run(placement):
    """Residual and FFN dropout: each member draws its masks from its own generator, seeded
    as its single run seeds the global one (tfx::member_keep_mask), so on a CPU a member is
    its single run, a diverging one included (stopped, and its replay drawing the masks its
    single run's replay draws). Admin profiles with dropout on (its build, as a single run's)."""
    config = _config(placement=placement, init="admin" if placement == "admin" else "xavier", dropout=0.3,
                     act_dropout=0.2)
    base = TrainConfig(steps=10, batch_size=4, eval_every=5, eval_batches=1, clip=0.5, log_every=2)
    cfgs = [base.replace(seed=0, lr=1e-3), base.replace(seed=1, lr=3e-3), base.replace(seed=2, lr=30.0)]
    models = [m.double() for m in build_members(config, TASK, cfgs)]
    hists = train_ensemble(models, TASK, cfgs)
    for c, m, h in zip(cfgs, models, hists):
        _assert_member_is_its_single_run(config, TASK, c, m, h)
    assert [h.status == "diverged" for h in hists] == [False, False, True]
    assert compatible([config] * 2, [cfgs[0], cfgs[1]])  # tfx.sweep may group runs with dropout


def test_a_translation_member_with_dropout_is_its_single_run_though_batches_are_padded():
    """German→English: the members' batches differ in length in both stacks and are padded to
    the longest in the stack; each member still draws masks over its own lengths (as many
    draws as its single run), so it is its single run."""
    from tfx.runs.data import load_task

    task = load_task("libreoffice-de-en")
    config = _config(task, placement="pre", dropout=0.3, act_dropout=0.1)
    base = TrainConfig(steps=4, batch_size=4, eval_batches=1, bleu_sentences=0, log_every=2)
    cfgs = [base.replace(seed=0, lr=1e-3), base.replace(seed=1, lr=3e-3)]
    assert task.batch(0, 4).src.shape != task.batch(tfx.nn.optim.DATA_STREAM, 4).src.shape
    models = [m.double() for m in build_members(config, task, cfgs)]
    for c, m, h in zip(cfgs, models, train_ensemble(models, task, cfgs)):
        _assert_member_is_its_single_run(config, task, c, m, h)


def test_two_members_of_one_seed_draw_the_same_masks_and_the_option_matters():
    """Two members of the same seed and lr are the same run (the masks follow the seed), and a
    member's masks do not depend on the other members' seeds. (Without the member's own draw the
    members' masks would not be their single runs': the float64 tests above fail.)"""
    from tfx.runs import ensemble

    config = _config(dropout=0.3)
    cfg = TrainConfig(steps=2, batch_size=4, eval_batches=1, lr=1e-3)
    a, b = train_ensemble(build_members(config, TASK, [cfg, cfg]), TASK, [cfg, cfg])
    assert a.loss == b.loss and math.isfinite(a.loss[0])
    other = train_ensemble(build_members(config, TASK, [cfg, cfg.replace(seed=1)]), TASK, [cfg, cfg.replace(seed=1)])
    assert other[0].loss == a.loss and other[1].loss != a.loss


def test_a_language_model_member_records_its_single_runs_probes():
    """probes=True: each member's probe rows (attention logits and entropy, the stream's
    variance, DyT saturation) are its single run's, with dropout on."""
    from tfx.runs.data import load_task

    task = load_task("libreoffice-en")
    config = _config(task, n_enc=0, n_dec=2, placement="pre", norm="dyt", dropout=0.2)
    base = TrainConfig(steps=6, batch_size=4, eval_batches=1, bleu_sentences=0, probes=True, log_every=3)
    cfgs = [base.replace(seed=0, lr=1e-3), base.replace(seed=1, lr=3e-3)]
    models = [m.double() for m in build_members(config, task, cfgs)]
    for c, m, h in zip(cfgs, models, train_ensemble(models, task, cfgs)):
        single = _assert_member_is_its_single_run(config, task, c, m, h)
        assert h.probe_step == single.probe_step == [3, 6]
        assert (h.attn_names, h.stream_names, h.dyt_names) == (single.attn_names, single.stream_names,
                                                               single.dyt_names)
        for name in ("attn_logit_max", "attn_entropy", "stream_var", "dyt_saturated"):
            mine, its = (np.asarray(getattr(r, name), dtype=float).ravel() for r in (h, single))
            assert mine.shape == its.shape and mine == pytest.approx(its, rel=LOSS_REL), name
        assert len(h.dyt_saturated[0]) == len(h.dyt_names) > 0 and len(h.attn_entropy[0][0]) == config.n_heads
        assert min(min(v) for v in h.stream_var) > 0 and h.attn_logit_max[0] != h.attn_logit_max[1]


@pytest.mark.parametrize("change, field", [
    (dict(model=dict(n_enc=2)), "ModelConfig.n_enc"),
    (dict(model=dict(placement="pre")), "ModelConfig.placement"),
    (dict(train=dict(batch_size=8)), "TrainConfig.batch_size"),
    (dict(train=dict(clip=1.0)), "TrainConfig.clip"),
])
def test_incompatible_members_are_refused_naming_the_field(change, field):
    configs = [_config(), _config(**change.get("model", {}))]
    cfgs = [TrainConfig(), TrainConfig(seed=1, **change.get("train", {}))]
    with pytest.raises(EnsembleError, match=rf"member 1's {field} = .* differs from member 0's .*may differ only in"):
        check_members(configs, cfgs)


@pytest.mark.parametrize("field, value", [("compile", True), ("max_tokens", 64), ("watch_every", 2)])
def test_settings_an_ensemble_cannot_honour_are_refused_by_name(field, value):
    cfg = TrainConfig(**{field: value})
    with pytest.raises(EnsembleError, match=rf"TrainConfig.{field} = .* is not supported in an ensemble; allowed"):
        check_members([_config()] * 2, [cfg, cfg.replace(seed=1)])


def test_attention_dropout_is_refused_by_name():
    """SDPA draws attention masks inside its kernel, where a member's generator cannot reach."""
    with pytest.raises(EnsembleError, match=r"ModelConfig.attn_dropout = 0.1 is not supported in an ensemble"):
        check_members([_config(attn_dropout=0.1)] * 2, [TrainConfig(), TrainConfig(seed=1)])
    assert not compatible([_config(attn_dropout=0.1)] * 2, [TrainConfig(), TrainConfig(seed=1)])


def test_take_step_on_members_sets_each_lr_and_clips_each_member_alone():
    """Members: one step through take_step, per member lr and ‖g‖ (not over the stack)."""
    a, b = torch.nn.Linear(3, 1).double(), torch.nn.Linear(3, 1).double()
    opts = [torch.optim.SGD(m.parameters(), lr=0.0) for m in (a, b)]
    x = torch.ones(2, 3, dtype=torch.float64)
    objective = a(x).sum() + 100 * b(x).sum()
    before = [torch.cat([p.detach().flatten().clone() for p in m.parameters()]) for m in (a, b)]
    norms = take_step(Members(opts), objective, lr=[0.1, 0.2], clip=1.0)
    expected = [math.sqrt(3 * 2**2 + 2**2), 100 * math.sqrt(3 * 2**2 + 2**2)]  # ∇W = 2·1, ∇b = 2 (× 100)
    assert norms.tolist() == pytest.approx(expected, rel=1e-12)
    for m, b0, lr in zip((a, b), before, (0.1, 0.2)):  # each clipped to ‖g‖ = 1, stepped at its own lr
        moved = torch.cat([p.detach().flatten() for p in m.parameters()]) - b0
        assert float(moved.norm()) == pytest.approx(lr, rel=1e-5)  # clip_grad_norm_ divides by ‖g‖ + 1e-6
    with pytest.raises(ValueError, match="one per member"):
        take_step(Members(opts), a(x).sum() + b(x).sum(), lr=[0.1])


SWEEP = """
description = "tiny runs: three learning rates and a deeper model, no dropout"
seeds = [0, 1]
model = { d_model = 16, n_heads = 2, d_ffn = 32, n_enc = 1, n_dec = 1 }
train = { steps = 4, batch_size = 4, eval_batches = 1, bleu_sentences = 0 }
task = "reverse"

[grid.run]
a = { train.lr = 1e-3 }
b = { train.lr = 2e-3 }
c = { train = { lr = 3e-3, warmup = 2 } }
deep = { model.n_enc = 2 }

[profiles.quick]
seeds = [0, 1]
"""


def test_the_sweep_groups_compatible_runs_into_ensembles_and_says_so(tmp_path):
    """``tfx.sweep --ensemble K``: runs of one shape group (in the experiment's order, at most K
    a group), the deeper model's runs make a group of their own, and every record says how it
    ran; the records match those of single runs (float32: to its rounding over 4 steps)."""
    from tfx.runs import sweep

    exp = tmp_path / "tiny.toml"
    exp.write_text(SWEEP)
    p = sweep.plan(exp, "quick", tmp_path / "plan")
    names = lambda groups: [[(j["run"].label, j["run"].seed) for j in g] for g in groups]  # noqa: E731
    assert names(sweep.ensembles(p["todo"], 4)) == [
        [("a", 0), ("a", 1), ("b", 0), ("b", 1)], [("c", 0), ("c", 1)], [("deep", 0), ("deep", 1)]]
    assert names(sweep.ensembles(p["todo"], 1)) == [[x] for g in names(sweep.ensembles(p["todo"], 4)) for x in g]
    assert names(sweep.ensembles(p["todo"], 4)) == names(sweep.ensembles(sweep.plan(exp, "quick")["todo"], 4))
    with pytest.raises(ValueError, match="ensemble=0 must be an integer ≥ 1"):
        sweep.ensembles(p["todo"], 0)

    grouped = sweep.run_experiment(exp, "quick", tmp_path / "grouped", progress=False, ensemble=4)
    alone = sweep.run_experiment(exp, "quick", tmp_path / "alone", progress=False)
    assert [r.ensemble for r in grouped] == [{"members": 4, "index": i} for i in range(4)] + \
           [{"members": 2, "index": i} for i in range(2)] * 2
    assert all(r.ensemble == {} for r in alone)
    for g, a in zip(grouped, alone):
        assert (g.key, g.label, g.seed, g.status) == (a.key, a.label, a.seed, a.status)
        assert g.train_config == a.train_config and g.config == a.config
        assert g.history.lr == a.history.lr and g.history.step == a.history.step
        assert g.history.loss == pytest.approx(a.history.loss, rel=1e-4)
        assert g.history.eval_loss == pytest.approx(a.history.eval_loss, rel=1e-4)
    # a rerun finds every run recorded, however it was trained
    assert not sweep.plan(exp, "quick", tmp_path / "grouped")["todo"]


def test_the_bench_times_an_ensemble_against_its_runs_one_by_one(capsys):
    from tfx.runs import bench

    threads = torch.get_num_threads()
    try:
        bench.main(["--size", "custom", "--d-model", "16", "--heads", "2", "--layers", "1", "--batch", "4",
                    "--length", "8", "--vocab", "50", "--rounds", "2", "--placements", "post", "--no-compile",
                    "--train-steps", "0", "--threads", "1", "--ensemble", "2", "--ensemble-steps", "1"])
    finally:
        torch.set_num_threads(threads)
    line = next(x for x in capsys.readouterr().out.splitlines() if "ensemble of 2" in x)
    assert "GFLOP/s" in line and "× the runs per core-hour" in line


def test_a_failing_ensemble_line_is_named_and_the_bench_goes_on(capsys, monkeypatch):
    """On an H200 the bf16 ensemble failed (tests/runs/test_cuda_paths.py): the bench says so on
    its ensemble line, keeps the error, and still benches the next placement."""
    from tfx.runs import bench

    def fails(*args, **kwargs):
        raise RuntimeError("expected input and grad types to match\nmore")

    monkeypatch.setattr(bench, "ensemble_throughput", fails)
    threads = torch.get_num_threads()
    try:
        out = bench.main(["--size", "custom", "--d-model", "16", "--heads", "2", "--layers", "1", "--batch", "4",
                          "--length", "8", "--vocab", "50", "--rounds", "1", "--placements", "pre,post",
                          "--no-compile", "--train-steps", "0", "--threads", "1", "--ensemble", "2"])
    finally:
        torch.set_num_threads(threads)
    assert [r["placement"] for r in out] == ["pre", "post"]
    assert all(r["ensemble"] == {"error": "expected input and grad types to match"} for r in out)
    lines = [x for x in capsys.readouterr().out.splitlines() if "ensemble of 2" in x]
    assert lines == ["  ensemble of 2: failed: expected input and grad types to match"] * 2


def test_the_bench_ensemble_line_trains_in_the_precision_it_is_given(monkeypatch):
    """ensemble_throughput's ``amp``: the members' TrainConfigs carry it (default fp32 on a CPU)."""
    from tfx.runs import bench, ensemble

    seen = []
    real = ensemble.train_ensemble

    def spy(models, task, cfgs):
        seen.append({c.amp_dtype for c in cfgs})
        return real(models, task, cfgs)

    monkeypatch.setattr(ensemble, "train_ensemble", spy)
    tiny = dict(d_model=16, n_heads=2, layers=1, batch=4, length=8, vocab=50)
    for amp in ("bf16", None):
        seen.clear()
        r = bench.ensemble_throughput("custom", "post", members=2, steps=1, warmup=1, amp=amp, **tiny)
        assert r["amp"] == (amp or "fp32") and seen and all(s == {r["amp"]} for s in seen)
