"""QK-clip (kimi2025k2: TrainConfig.qk_clip, tfx.nn.optim.qk_clip_) and the record of the largest
attention logit (History.qk_logit_max): a head whose logits passed τ is rescaled to τ exactly,
the others are untouched, the option does something, and with both options off the run is the
run tfx trained before, to the bit."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.nn.blocks import Attention
from tfx.nn.optim import qk_clip_, record_qk_logits, step_batch
from tfx.runs.train import History

TASK = tfx.synthetic("reverse", vocab=8, length=6)
CFG = TrainConfig(steps=8, lr=3e-3, warmup=2, seed=1, eval_every=4, eval_batches=1, bleu_sentences=0, device="cpu")


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=0, n_dec=2, placement="pre", dropout=0.1)
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), seed=0)


def _blow_up(attn: Attention, head: int, factor: float):
    """Head ``head``'s queries and keys × ``factor`` (weights and biases): its logits × factor²."""
    d_h = attn.q_proj.out_features // attn.n_heads
    rows = slice(head * d_h, (head + 1) * d_h)
    with torch.no_grad():
        for lin in (attn.q_proj, attn.k_proj):
            lin.weight[rows] *= factor
            lin.bias[rows] *= factor


def _attention(seed=0):
    torch.manual_seed(seed)
    attn = Attention(32, 4)
    with torch.no_grad():  # biases that matter: nn.Linear starts them small
        attn.q_proj.bias.normal_(0, 1), attn.k_proj.bias.normal_(0, 1)
    _blow_up(attn, 1, 6.0)
    return attn, torch.randn(3, 7, 32)


def test_a_clipped_heads_logits_become_tau_times_their_old_share_and_the_others_stay():
    """After qk_clip_, on the forward's input: head 1 (logits × 36, far above τ) has S' = γ·S, so
    its largest |S'| is τ (within 1e-5 relative, float32); heads under τ keep their W_q, W_k rows
    and bias entries to the bit."""
    attn, x = _attention()
    record_qk_logits(attn)
    attn(x, causal=True)
    before = attn.logit_max.clone()
    tau = float(before[1]) / 4  # only head 1 is above (the others are ≈ 36 times smaller)
    assert (before > tau).tolist() == [False, True, False, False]
    q, k, _ = attn._qkv(x)
    s_before = q @ k.transpose(-1, -2) * attn.scale
    weights = [t.detach().clone() for t in (attn.q_proj.weight, attn.q_proj.bias, attn.k_proj.weight, attn.k_proj.bias)]
    largest = qk_clip_(attn, tau)
    assert float(largest) == float(before.max())  # the max before the clip
    q, k, _ = attn._qkv(x)
    s_after = q @ k.transpose(-1, -2) * attn.scale
    after = attn.head_logit_max(q, k, causal=True)
    assert float(after[1]) == pytest.approx(tau, rel=1e-5)
    assert torch.allclose(s_after[:, 1], s_before[:, 1] * tau / before[1], rtol=1e-4, atol=1e-4)  # γ·S, biases too
    d_h = 8
    for old, new in zip(weights, (attn.q_proj.weight, attn.q_proj.bias, attn.k_proj.weight, attn.k_proj.bias)):
        for h in (0, 2, 3):
            assert torch.equal(old[h * d_h:(h + 1) * d_h], new[h * d_h:(h + 1) * d_h])
        assert not torch.equal(old[d_h:2 * d_h], new[d_h:2 * d_h])
    assert torch.equal(after[[0, 2, 3]], before[[0, 2, 3]])


def test_the_recorded_max_is_over_allowed_pairs_only():
    attn, x = _attention()
    q, k, _ = attn._qkv(x)
    s = (q @ k.transpose(-1, -2) * attn.scale).abs()
    assert torch.equal(attn.head_logit_max(q, k), s.amax(dim=(0, 2, 3)))
    causal = attn.head_logit_max(q, k, causal=True)
    assert torch.equal(causal, s.masked_fill(~torch.ones(7, 7, dtype=torch.bool).tril(), 0).amax(dim=(0, 2, 3)))
    assert (causal <= s.amax(dim=(0, 2, 3))).all()


def test_recording_off_is_the_forward_as_before():
    attn, x = _attention()
    out = attn(x, causal=True)
    assert attn.logit_max is None
    record_qk_logits(attn)
    assert torch.equal(attn(x, causal=True), out) and attn.logit_max is not None
    record_qk_logits(attn, False)
    assert attn.logit_max is None and not attn.record_logit_max


def _first_layer(model) -> Attention:
    return model.decoder.layers[0].self_attn.f


def test_one_training_step_with_qk_clip_brings_the_heads_logits_to_tau():
    """A model whose layer-0 head 1 has logits far above τ; one step at a tiny rate (so the update
    barely moves S): recomputed on step 1's batch, that head's largest logit is ≤ τ·(1 + 1e-3)
    (measured ≈ τ·(1 ± 1e-5)); without qk_clip it stays above τ (the option does something)."""
    def run(qk_clip):
        model = _model(dropout=0.0)
        _blow_up(_first_layer(model), 1, 6.0)
        h = train(model, TASK, CFG.replace(steps=1, lr=1e-7, warmup=0, eval_every=0, qk_clip=qk_clip,
                                           record_qk_logits=True))
        batch = step_batch(TASK, 1, CFG)
        attn = _first_layer(model)
        record_qk_logits(model)
        with torch.no_grad():
            model.loss_and_accuracy(batch.src, batch.tgt, 0.0, batch.src_padded, batch.tgt_padded)
        return h, attn.logit_max
    h0, free = run(None)
    tau = float(free[1]) / 3
    h, clipped = run(tau)
    assert h.qk_logit_max == pytest.approx(h0.qk_logit_max, rel=1e-6)  # the same forward, before the clip
    assert h.qk_logit_max[0] > 3 * tau * (1 - 1e-3)
    assert float(free[1]) > tau and float(clipped[1]) <= tau * (1 + 1e-3)
    assert float(clipped[1]) == pytest.approx(tau, rel=1e-3)


def test_the_trainer_turns_recording_off_and_refuses_a_qk_norm_model():
    model = _model()
    train(model, TASK, CFG.replace(steps=2, qk_clip=100.0))
    assert not any(m.record_logit_max for m in model.modules() if isinstance(m, Attention))
    with pytest.raises(ValueError, match="qk_clip=100.0 rescales W_q and W_k, which the model's QK-norm"):
        train(_model(qk_norm=True), TASK, CFG.replace(steps=2, qk_clip=100.0))
    train(_model(qk_norm=True), TASK, CFG.replace(steps=2, record_qk_logits=True))  # recording alone is fine
    with pytest.raises(ValueError, match="qk_clip=100.0 / record_qk_logits=False .* need compile=False"):
        TrainConfig(qk_clip=100.0, compile=True)
    with pytest.raises(ValueError, match="qk_clip=0.0 must be a finite number > 0, or None"):
        TrainConfig(qk_clip=0.0)


def test_the_record_is_the_probes_largest_logit_and_recording_changes_no_step():
    """record_qk_logits: History.qk_logit_max, one value per logged step, equals the probes'
    largest attention logit of the same step (no soft-cap: the same S, max over modules); and
    the losses are the default run's to the bit (recording reads, never writes)."""
    cfg = CFG.replace(log_every=2, probes=True)
    plain = train(_model(), TASK, cfg)
    rec = train(_model(), TASK, cfg.replace(record_qk_logits=True))
    assert rec.loss == plain.loss and rec.grad_norm == plain.grad_norm and rec.update_norm == plain.update_norm
    assert len(rec.qk_logit_max) == len(rec.step) == 4 and plain.qk_logit_max == []
    assert rec.qk_logit_max == pytest.approx([max(row) for row in rec.attn_logit_max], rel=1e-6)


def test_with_the_new_options_off_the_history_is_the_one_before():
    """Default against qk_clip=None, record_qk_logits=False given explicitly: equal histories
    (wall time aside); to_dict()'s new keys are qk_logit_max (an empty list) and the spike
    guards' counts (tests/runs/test_interventions.py), at their defaults. The
    bit-for-bit check against the optimiser tfx built before is
    tests/runs/test_train_optimizer_by_kind.py::test_the_default_run_is_the_pre_change_run_to_the_bit."""
    default = train(_model(), TASK, CFG).to_dict()
    explicit = train(_model(), TASK, CFG.replace(qk_clip=None, record_qk_logits=False)).to_dict()
    new_keys = {f.name for f in dataclasses.fields(History)} - set(PRE_CHANGE_HISTORY_KEYS)
    assert new_keys == {"qk_logit_max", "steps_clipped", "steps_skipped", "interventions"}
    assert set(default) == set(PRE_CHANGE_HISTORY_KEYS) | new_keys
    for d in (default, explicit):
        d.pop("wall_time")
    assert default == explicit
    assert default["qk_logit_max"] == [] and default["interventions"] == []
    assert default["steps_clipped"] == default["steps_skipped"] == 0
    assert History(**{k: v for k, v in default.items() if k != "qk_logit_max"}).qk_logit_max == []  # old JSON loads


def test_a_qk_clip_run_with_muon_resumes_exactly(tmp_path):
    """Muon on the hidden matrices, QK-clip at a τ the run passes: checkpoint at step 4 and resume
    gives the history of 8 steps straight (the clip is a function of the step's forward alone)."""
    model = _model()
    _blow_up(_first_layer(model), 1, 4.0)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = CFG.replace(optimizer="adamw", optimizer_by_kind={"hidden": "muon"}, qk_clip=5.0)

    def fresh():
        m = _model()
        m.load_state_dict(start)
        return m
    straight = train(fresh(), TASK, cfg)
    assert max(straight.qk_logit_max) > 5.0  # the clip acted
    path = str(tmp_path / "ck.pt")
    train(fresh(), TASK, cfg.replace(steps=4, checkpoint_every=4, checkpoint_path=path))
    resumed = train(fresh(), TASK, cfg.replace(checkpoint_every=4, checkpoint_path=path), resume=True)
    assert resumed.loss == straight.loss and resumed.qk_logit_max == straight.qk_logit_max
    assert resumed.update_norm == straight.update_norm


# History's fields before QK-clip (commit b86e79a)
PRE_CHANGE_HISTORY_KEYS = (
    "status", "reason", "steps_done", "step", "loss", "acc", "lr", "grad_norm", "update_norm", "eval_step",
    "eval_loss", "eval_acc", "chance_loss", "floor_loss", "start_loss", "tokens", "wall_time", "device",
    "model_config", "train_config", "task", "amp_dtype", "bleu", "diverged_step", "diagnosis", "sublayers",
    "watch_step", "act_max", "logit_max", "log_z", "log_z_absmax", "probe_step", "attn_names", "stream_names",
    "dyt_names", "attn_logit_max", "attn_entropy", "stream_var", "dyt_saturated",
)
