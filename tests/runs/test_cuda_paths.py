"""The trainer's CUDA-only paths, which a CPU never takes: fused Adam keeps its step count on the
device (the ‖Δθ‖ record reads it there), fp16 runs through a GradScaler whose state a checkpoint
must carry, and dropout on the GPU draws from the CUDA generator, which a resume must restore.
These run where CUDA is present and skip elsewhere. On a bare GPU machine, which lacks the
notebook packages the root conftest.py and pytest.ini's nbval options need, run them as
scripts/gpu_burst.sh does (CUDA_TESTS=1):
python3 -m pytest -q -p no:cacheprovider --noconftest -o addopts="" tests/runs/test_cuda_paths.py"""
import math

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.nn.optim import make_optimizer
from tfx.runs.train import _rng_state, _set_rng_state

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA-only paths: no CUDA device here")

TASK = tfx.synthetic("reverse", vocab=8, length=6)
CUDA = torch.device("cuda")


def _model(seed=0, **kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, dropout=0.0)
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), batch=TASK.batch(0, 8), seed=seed)


def _flat(model):
    return torch.cat([p.detach().float().flatten().cpu() for p in model.parameters()])


def test_fused_adam_keeps_its_step_count_on_the_gpu():
    model = _model().to(CUDA)
    opt = make_optimizer(model.parameters(), TrainConfig(optimizer="adam"), CUDA)
    assert opt.defaults.get("fused") is True
    b = TASK.batch(0, 8)
    for _ in range(3):
        opt.zero_grad()
        model.loss_and_accuracy(b.src.to(CUDA), b.tgt.to(CUDA))[0].backward()
        opt.step()
    steps = {opt.state[p]["step"].device.type for p in model.parameters()}
    assert steps == {"cuda"} and float(opt.state[next(model.parameters())]["step"]) == 3


@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_the_update_record_reads_the_fused_step_count_right(optimizer):
    """‖Δθ‖ recorded at step 3 from the optimiser's state (t a device tensor) equals the
    parameters' own change between a 2-step and a 3-step run of the same seed (fp32)."""
    cfg = TrainConfig(steps=3, lr=1e-3, optimizer=optimizer, weight_decay=0.01, device="cuda", amp=False, log_every=1,
                      record_updates=True, diagnose=False)
    two, three = _model(), _model()
    train(two, TASK, cfg.replace(steps=2))
    h = train(three, TASK, cfg)
    assert h.update_norm[-1] == pytest.approx(float(torch.linalg.vector_norm(_flat(three) - _flat(two))), rel=1e-3)
    assert all(u > 0 for u in h.update_norm)


def test_fp16_resume_carries_the_gradient_scaler(tmp_path):
    path = str(tmp_path / "ck.pt")
    cfg = TrainConfig(steps=20, lr=1e-3, warmup=5, seed=2, device="cuda", amp_dtype="fp16", log_every=1,
                      diagnose=False)
    straight = train(_model(), TASK, cfg)
    assert straight.amp_dtype in ("fp16", "float16")
    train(_model(), TASK, cfg.replace(steps=10, checkpoint_every=10, checkpoint_path=path))
    saved = torch.load(path, weights_only=True)["scaler"]
    assert saved and float(saved["scale"]) > 0  # an enabled scaler's state, not an empty one
    resumed = train(_model(), TASK, cfg.replace(checkpoint_every=10, checkpoint_path=path), resume=True)
    assert resumed.loss == pytest.approx(straight.loss, rel=1e-5, abs=1e-6)


def test_cuda_rng_is_saved_and_restored():
    state = _rng_state(CUDA)
    assert "cuda" in state
    a = torch.rand(5, device=CUDA)
    _set_rng_state(state, CUDA)
    assert torch.equal(torch.rand(5, device=CUDA), a)


def test_resume_with_dropout_on_the_gpu_draws_the_same_masks(tmp_path):
    """Dropout masks come from the CUDA generator: a resumed run's losses are the straight run's
    (a generator left where the first half ended, or reseeded, would give other masks)."""
    path = str(tmp_path / "ck.pt")
    cfg = TrainConfig(steps=20, lr=1e-3, warmup=5, seed=3, device="cuda", amp=False, log_every=1, diagnose=False)
    straight = train(_model(dropout=0.3), TASK, cfg)
    train(_model(dropout=0.3), TASK, cfg.replace(steps=10, checkpoint_every=10, checkpoint_path=path))
    torch.cuda.manual_seed(12345)  # what the resume must undo
    resumed = train(_model(dropout=0.3), TASK, cfg.replace(checkpoint_every=10, checkpoint_path=path), resume=True)
    assert resumed.loss == pytest.approx(straight.loss, rel=1e-5, abs=1e-6)
    other = train(_model(dropout=0.3), TASK, cfg.replace(seed=4, data_seed=3))  # the same data, other masks
    assert other.loss[10:] != pytest.approx(straight.loss[10:], rel=1e-5, abs=1e-6)  # masks matter at this size


@pytest.mark.parametrize("amp", ["bf16", "fp32"])
def test_an_ensemble_trains_on_the_gpu_and_each_member_is_near_its_single_run(amp):
    """An ensemble on CUDA (tfx.runs.ensemble) in bf16 autocast and in fp32, attention written out
    (ensemble.FUSED_ATTENTION: under vmap on an H200, SDPA's math kernel failed in its softmax
    backward in bf16 and its memory-efficient one on the log-sum-exp's layout, 2026-11-30).
    Members equal their single runs only up to rounding (batched sums; bf16): losses within 2 %
    after 6 steps, and different members (seed, lr) stay different."""
    _ensemble_near_single_runs(amp)


def _ensemble_near_single_runs(amp):
    from tfx.runs.ensemble import build_members, train_ensemble

    config = ModelConfig.for_task(TASK, d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, dropout=0.0,
                                  placement="pre")
    base = TrainConfig(steps=6, batch_size=8, device="cuda", amp_dtype=amp, log_every=1, diagnose=False,
                       eval_batches=1, bleu_sentences=0)
    cfgs = [base.replace(seed=s, lr=lr) for s, lr in ((0, 1e-3), (1, 3e-3))]
    hists = train_ensemble(build_members(config, TASK, cfgs), TASK, cfgs)
    for cfg, hist, model in zip(cfgs, hists, build_members(config, TASK, cfgs)):
        alone = train(model, TASK, cfg)
        assert hist.loss == pytest.approx(alone.loss, rel=2e-2)
    assert hists[0].loss[-1] != hists[1].loss[-1]


def test_ensemble_members_with_dropout_draw_their_own_streams_on_the_gpu():
    """Dropout on CUDA: each member draws from its own CUDA generator, seeded with its seed (its
    own stream; not its single run's masks, which the fused dropout kernel draws its own way).
    Two members of one seed are one run; another seed parts from it."""
    from tfx.runs.ensemble import build_members, train_ensemble

    config = ModelConfig.for_task(TASK, d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, dropout=0.3,
                                  placement="pre")
    cfg = TrainConfig(steps=6, batch_size=8, lr=1e-3, device="cuda", amp_dtype="bf16", log_every=1,
                      diagnose=False, eval_batches=1, bleu_sentences=0)
    cfgs = [cfg, cfg, cfg.replace(seed=1, data_seed=0)]
    a, b, c = train_ensemble(build_members(config, TASK, cfgs), TASK, cfgs)
    assert a.loss == b.loss and all(map(math.isfinite, a.loss))
    assert a.loss[1:] != c.loss[1:]
