"""The training objective's options: z-loss (chowdhery2022palm) and weight decay independent
of the peak learning rate (wortsman2023proxies); each test fails if its option does nothing."""
import math

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.nn.batch import BOS, EOS, PAD, Batch
from tfx.nn.optim import lr_at, make_optimizer

TASK = tfx.synthetic("reverse", vocab=8, length=6)


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, placement="pre")
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), batch=TASK.batch(0, 8))


def _lm_batch():
    tgt = torch.tensor([[BOS, 5, 6, 7, EOS, PAD], [BOS, 4, 9, 5, 6, EOS]])
    return Batch(None, tgt)


def test_log_z_is_the_log_partition_function_over_real_tokens():
    model = build_model(ModelConfig(src_vocab=12, tgt_vocab=12, d_model=16, n_heads=2, d_ffn=32, n_enc=0, n_dec=1))
    batch = _lm_batch()
    with torch.no_grad():
        out = model.loss(batch)
        logits = model(tgt_in=batch.tgt[:, :-1]).float()
    real = batch.tgt[:, 1:] != PAD
    log_z = torch.logsumexp(logits, -1)[real]
    assert float(out["log_z"]) == pytest.approx(float(log_z.mean()), rel=1e-6)
    assert float(out["log_z_sq"]) == pytest.approx(float(log_z.square().mean()), rel=1e-6)
    assert float(out["log_z_absmax"]) == pytest.approx(float(log_z.abs().max()), rel=1e-6)
    out = model.loss(batch)
    assert out["log_z_sq"].requires_grad and not out["log_z"].requires_grad


def test_z_loss_is_added_to_the_gradient_not_to_the_recorded_loss():
    """One SGD step (lr 1, the first momentum step is the gradient) moves θ by exactly
    −∇(CE + c · mean (log Z)²); the recorded loss is the cross-entropy alone."""
    c, batch = 0.5, TASK.batch(0, 32)  # data_step(1) with seed 0 is batch 0
    model = _model(dropout=0.0)
    twin = _model(dropout=0.0)
    out = twin.loss(batch)
    (out["loss"] + c * out["log_z_sq"]).backward()
    h = train(model, TASK, steps=1, lr=1.0, optimizer="sgd", z_loss=c, batch_size=32)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.detach(), (q - q.grad).detach(), rtol=1e-4, atol=1e-6, msg=name)
    assert h.loss[0] == pytest.approx(float(out["loss"].detach()), rel=1e-6)
    assert h.log_z[0] == pytest.approx(float(out["log_z"]), rel=1e-6)


def test_z_loss_pulls_log_z_towards_zero():
    cfg = TrainConfig(steps=40, lr=3e-3, log_every=10, seed=1)
    plain = train(_model(), TASK, cfg)
    z = train(_model(), TASK, cfg.replace(z_loss=0.1))
    assert plain.start_loss == z.start_loss  # the same cross-entropy before any update
    assert abs(z.log_z[-1]) < 0.5 * abs(plain.log_z[-1])
    assert len(z.log_z) == len(z.log_z_absmax) == 4


@pytest.mark.parametrize("bad", [-1e-4, float("nan"), "0.1", True])
def test_z_loss_must_be_a_number_at_least_zero(bad):
    with pytest.raises(ValueError, match="z_loss="):
        TrainConfig(z_loss=bad)


def test_weight_decay_mode_is_checked():
    with pytest.raises(ValueError, match="weight_decay_mode='decoupled' is not allowed; choose one of"):
        TrainConfig(weight_decay_mode="decoupled")
    with pytest.raises(ValueError, match="weight_decay_mode='independent' needs optimizer='adamw'"):
        TrainConfig(weight_decay_mode="independent", optimizer="adam")


def test_torch_adamw_decays_by_lr_times_weight_decay():
    """The algebra independent decay rests on: with zero gradients AdamW's step is θ ← θ − lr·λ·θ,
    so λ' = λ/η_max gives θ ← θ − λ·(η_t/η_max)·θ."""
    lam, peak = 0.1, 1e-2
    cfg = TrainConfig(optimizer="adamw", lr=peak, weight_decay=lam, weight_decay_mode="independent",
                      schedule="linear-decay", warmup=2, steps=6)
    p = torch.nn.Parameter(torch.full((3,), 2.0))
    opt = make_optimizer([p], cfg, torch.device("cpu"))
    assert opt.param_groups[0]["weight_decay"] == pytest.approx(lam / peak)
    want = 2.0
    for t in range(1, 6):
        opt.param_groups[0]["lr"] = lr_at(t, cfg)
        p.grad = torch.zeros_like(p)
        opt.step()
        want *= 1 - lam * lr_at(t, cfg) / peak
        assert float(p[0]) == pytest.approx(want, rel=1e-6)


def _frozen(model):
    """``model`` whose loss has a zero gradient everywhere: only weight decay moves θ."""
    def loss_and_accuracy(src, tgt, *args):
        zero = sum(p.sum() for p in model.parameters()) * 0.0
        return zero, zero.detach(), zero.detach(), zero, zero.detach()
    model.loss_and_accuracy = loss_and_accuracy
    return model


@pytest.mark.parametrize("mode", ["independent", "coupled"])
def test_independent_weight_decay_does_not_follow_the_peak_lr(mode):
    lam, base = 0.05, TrainConfig(optimizer="adamw", weight_decay=0.05, weight_decay_mode=mode, steps=6, warmup=2,
                                 schedule="linear-decay", eval_batches=1, diagnose=False)
    w0 = _model().out_proj.weight.detach().clone()
    final = {}
    for peak in (1e-3, 1e-2):
        model = _frozen(_model())
        train(model, TASK, base.replace(lr=peak))
        ratio = model.out_proj.weight.detach() / w0
        shrink = math.prod(1 - lam * lr_at(t, base.replace(lr=peak)) / (peak if mode == "independent" else 1.0)
                           for t in range(1, 7))
        torch.testing.assert_close(ratio, torch.full_like(ratio, shrink), rtol=1e-5, atol=0)
        final[peak] = shrink
    same = final[1e-3] == pytest.approx(final[1e-2], rel=1e-9)
    assert same if mode == "independent" else not same
