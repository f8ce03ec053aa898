"""The trainer: schedules, optimisers, determinism, exact resume, divergence and outcomes."""
import math

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model
from tfx import train
from tfx.nn.optim import lr_at
from tfx.runs.train import History

TASK = tfx.synthetic("reverse", vocab=8, length=6)


pytestmark = pytest.mark.long_file  # a minute or more: collected first (pytest.ini)


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, dropout=0.1)
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), batch=TASK.batch(0, 8))


def test_schedules():
    c = TrainConfig(lr=1.0, warmup=10, schedule="inverse-sqrt", steps=100)
    assert lr_at(5, c) == pytest.approx(0.5) and lr_at(10, c) == pytest.approx(1.0)
    assert lr_at(40, c) == pytest.approx(math.sqrt(10 / 40))
    c = TrainConfig(lr=1.0, warmup=10, schedule="linear-decay", steps=110)
    assert lr_at(5, c) == pytest.approx(0.5) and lr_at(60, c) == pytest.approx(0.5) and lr_at(110, c) == 0
    c = TrainConfig(lr=2.0, warmup=4, schedule="constant")
    assert [lr_at(s, c) for s in (1, 2, 4, 50)] == [0.5, 1.0, 2.0, 2.0]
    assert lr_at(1, TrainConfig(lr=3.0)) == 3.0


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd", "radam"])
def test_optimizers_reduce_the_loss(optimizer):
    lr = 0.3 if optimizer == "sgd" else 3e-3
    h = train(_model(placement="pre"), TASK, steps=60, lr=lr, optimizer=optimizer, batch_size=32, clip=1.0)
    assert h.status in ("learned", "did not learn") and len(h.loss) == 60
    assert h.final_loss() < h.loss[0]
    assert all(g > 0 for g in h.grad_norm) and all(u > 0 for u in h.update_norm)


def test_history_records_everything():
    h = train(_model(), TASK, steps=20, lr=1e-3, eval_every=10, eval_batches=2, warmup=5)
    assert h.step == list(range(1, 21))
    assert h.lr[:5] == pytest.approx([2e-4, 4e-4, 6e-4, 8e-4, 1e-3])
    assert h.eval_step == [10, 20] and len(h.eval_loss) == 2 and 0 <= h.eval_acc[-1] <= 1
    assert h.chance_loss == pytest.approx(TASK.chance_loss)
    assert h.device == "cpu" and h.model_config["n_enc"] == 2 and h.train_config["lr"] == 1e-3
    assert h.tokens == 20 * 32 * 7 and h.tokens_per_second > 0


def test_same_seed_same_history():
    a = train(_model(), TASK, steps=15, lr=1e-3, seed=4)
    b = train(_model(), TASK, steps=15, lr=1e-3, seed=4)
    c = train(_model(), TASK, steps=15, lr=1e-3, seed=5)  # other dropout masks
    assert a.loss == b.loss and a.grad_norm == b.grad_norm and a.update_norm == b.update_norm
    assert a.loss != c.loss


def test_resume_is_exact(tmp_path):
    """Checkpoint at step 10, resume in a fresh model: the same history as 20 steps straight."""
    path = str(tmp_path / "ck.pt")
    cfg = TrainConfig(steps=20, lr=1e-3, warmup=5, seed=2, eval_every=5, eval_batches=1)
    straight = train(_model(), TASK, cfg)
    first = train(_model(), TASK, cfg.replace(steps=10, checkpoint_every=10, checkpoint_path=path))
    assert first.steps_done == 10
    resumed = train(_model(), TASK, cfg.replace(checkpoint_every=10, checkpoint_path=path), resume=True)
    assert resumed.step == straight.step
    assert resumed.loss == straight.loss
    assert resumed.update_norm == straight.update_norm
    assert resumed.eval_loss[-1] == straight.eval_loss[-1]


def test_nan_loss_is_diverged_not_an_exception():
    model = _model()
    with torch.no_grad():
        model.out_proj.weight.fill_(float("nan"))
    h = train(model, TASK, steps=10)
    assert h.status == "diverged" and "not finite" in h.reason
    assert h.steps_done == 0 and len(h.loss) == 1 and math.isnan(h.loss[0])


def test_exploding_loss_is_diverged():
    model = _model(placement="post")
    h = train(model, TASK, steps=10, lr=10.0, diverge_loss=20.0)  # a learning rate far too large
    assert h.status == "diverged" and "diverge_loss" in h.reason and not h.reason.startswith("step 1:")
    # finite, only large: the replay finds no sub-layer out of fp32's range, and says where the peaks are
    assert h.diagnosis["first"] is None and "no sub-layer" in h.diagnosis["summary"]
    assert "largest output" in h.diagnosis["summary"]


def test_a_run_near_chance_did_not_learn():
    """A run that never leaves the best prediction that ignores the input 'did not learn';
    one that trains 'learned', and its held-out loss is what the rule read."""
    h = train(_model(placement="post", n_enc=2, n_dec=2), TASK, steps=3, lr=1e-6)
    assert h.status == "did not learn" and "chance" in h.reason
    h2 = train(_model(placement="pre"), TASK, steps=150, lr=3e-3, batch_size=32)
    assert h2.status == "learned" and judge(h2).loss == h2.eval_loss[-1] < 0.5 * h2.chance_loss


def test_the_loss_before_the_first_update_is_never_a_divergence():
    """A model that starts far above 3·ln V (no LayerNorm, huge output weights) is not
    'diverged at step 1': step 1's loss is measured before any update. It diverges only
    if the loss runs away from where it started."""
    model = _model(placement="none")
    with torch.no_grad():
        model.out_proj.weight.mul_(50.0)
    h = train(model, TASK, steps=5, lr=1e-9)  # too small a step to move anywhere
    assert h.start_loss > 3 * math.log(model.cfg.tgt_vocab)  # the old rule's limit
    assert h.status == "did not learn" and h.steps_done == 5 and h.start_loss == h.loss[0]


def test_history_round_trip(tmp_path):
    h = train(_model(), TASK, steps=5)
    h.save(tmp_path / "h.json")
    assert History.load(tmp_path / "h.json").to_dict() == h.to_dict()


def test_reader_example_admin_on_the_shipped_corpus():
    """The README's five lines, shrunk: a Post-LN encoder–decoder with Admin init, no warmup."""
    data = tfx.load_corpus()
    cfg = ModelConfig.for_task(data, n_enc=2, n_dec=2, d_model=32, n_heads=4, d_ffn=64, placement="admin", init="admin")
    model = build_model(cfg, batch=data.batch(0, 8))
    h = train(model, data, steps=5, batch_size=8, warmup=0)
    assert h.status in ("learned", "did not learn", "diverged") and h.steps_done == 5
    assert h.task and h.chance_loss < math.log(data.tgt_vocab)


# --------------------------------------------------------------------------- GPU-scale trainer
from tfx.nn.batch import Batch  # noqa: E402
from tfx.nn.optim import make_optimizer  # noqa: E402
from tfx.runs.outcome import judge  # noqa: E402
from tfx.runs.train import UpdateNorm  # noqa: E402


@pytest.mark.parametrize("optimizer, wd", [("adam", 0.0), ("adam", 0.01), ("adamw", 0.1), ("sgd", 0.01),
                                           ("radam", 0.0)])
def test_update_norm_is_the_parameter_change(optimizer, wd):
    """‖Δθ‖ read from the optimiser's state equals the norm of the actual change of θ."""
    model = _model(placement="pre")
    params = list(model.parameters())
    opt = make_optimizer(params, TrainConfig(optimizer=optimizer, lr=1e-2, weight_decay=wd))
    upd = UpdateNorm(opt)
    assert (upd.kind is None) == (optimizer == "radam")  # RAdam: the copying fallback
    for step in range(3):
        opt.zero_grad()
        model.loss(TASK.batch(step, 8))["loss"].backward()
        before = [p.detach().clone() for p in params]
        upd.before()
        opt.step()
        got = float(upd.after())
        want = math.sqrt(sum(float((p.detach() - b).pow(2).sum()) for p, b in zip(params, before)))
        assert got == pytest.approx(want, rel=2e-3)


class Poisoned:
    """``task``, except that from step ``at`` (1-based) the first source token of each batch
    is an id the task never uses: a row of the embedding the test made huge."""

    def __init__(self, task, at, token):
        self.task, self.at, self.token = task, at, token

    def __getattr__(self, name):
        return getattr(self.task, name)

    def batch(self, step, batch_size=None, split="train", max_tokens=None):
        b = self.task.batch(step, batch_size, split, max_tokens)
        if split != "train" or step + 1 < self.at:
            return b
        src = b.src.clone()
        src[:, 0] = self.token
        return Batch(src, b.tgt)


def _poisonable(scale):
    cfg = ModelConfig.for_task(TASK, d_model=32, n_heads=4, d_ffn=64, n_enc=2, n_dec=2, src_vocab=TASK.src_vocab + 1)
    model = build_model(cfg)
    with torch.no_grad():
        model.src_embed.tok.weight[TASK.src_vocab].fill_(scale)
    return model, Poisoned(TASK, 7, TASK.src_vocab)


def test_divergence_is_read_late_but_dated_exactly():
    """Numbers are read every log_every = 5 steps; a loss that goes non-finite at step 7 is
    caught at step 10 and reported at step 7, with the logged steps before it intact."""
    model, task = _poisonable(1e38)  # × √d: inf in the embedding itself
    h = train(model, task, steps=20, lr=1e-3, log_every=5, batch_size=8)
    assert h.status == "diverged" and h.diverged_step == 7 and h.reason.startswith("step 7:")
    assert h.steps_done == 6 and h.step == [5, 7] and math.isfinite(h.loss[0]) and math.isnan(h.loss[1])
    d = h.diagnosis  # replayed from the state before step 1: steps 1–6 watched, then step 7
    assert d["step"] == 7 and d["before"]["step"] == [1, 2, 3, 4, 5, 6] and d["dtype"] == "fp32"
    assert d["first"]["sublayer"] == "encoder.layers.0.self_attn" and "fp32" not in d


def test_amp_dtype_and_token_batches_are_recorded():
    h = train(_model(placement="pre"), TASK, steps=6, lr=1e-3, amp_dtype="bf16", max_tokens=64)
    assert h.status in ("learned", "did not learn") and h.amp_dtype == "bf16" and h.steps_done == 6
    assert h.tokens == 6 * (64 // 8) * 7  # 8 target tokens per sequence, 7 carry a loss
    assert train(_model(), TASK, steps=2).amp_dtype == "fp32"  # the CPU default


def test_compiled_training_matches_eager():
    """compile=True: torch.compile (inductor, on the CPU too) of the model's loss; same losses."""
    cfg = TrainConfig(steps=4, lr=1e-3, seed=1)
    eager = train(_model(dropout=0.0), TASK, cfg)
    compiled = train(_model(dropout=0.0), TASK, cfg.replace(compile=True))
    assert compiled.status == eager.status and compiled.loss == pytest.approx(eager.loss, rel=1e-4)


# --------------------------------------------------------------------------- honest status
def _pattern(train_loss, eval_loss, bleu, chance):
    n = len(eval_loss)
    return History(loss=[train_loss] * 10, chance_loss=chance, eval_step=[250 * (i + 1) for i in range(n)],
                   eval_loss=eval_loss, bleu=bleu)


def test_outcome_of_translation_runs_by_held_out_loss():
    """The rule on the shipped corpus's GPU pilot numbers (unigram chance 6.31, floor unknown):
    Post-LN's validation loss 6.16 → 5.83 → 8.2 did not learn; Pre-LN's 4.5 → 3.8 → 4.1
    (BLEU 16) learned, even though its validation loss rose after its best."""
    out = judge(_pattern(5.65, [6.16, 5.83, 7.1, 8.2], [0.0, 0.01, 0.01, 0.01], 6.31))
    assert out.verdict == "did not learn" and "8.2" in out.reason and out.gap_closed < 0
    out = judge(_pattern(5.65, [6.16, 5.83, 5.85], [0.0, 0.01, 0.01], 6.31))
    assert out.verdict == "did not learn" and out.loss == 5.85
    # a loss that closed the gap, with translations that ignore the source: BLEU decides
    out = judge(_pattern(3.2, [4.5, 3.8, 4.1], [0.0, 0.3, 0.2], 6.31))
    assert out.verdict == "did not learn" and "BLEU 0.20" in out.reason
    assert judge(_pattern(3.2, [4.5, 3.8, 4.1], [8.0, 16.3, 16.0], 6.31)).verdict == "learned"


def test_a_target_side_language_model_did_not_learn_on_the_corpus():
    """End to end on the shipped corpus: sources that carry nothing (every token UNK) leave the
    model a target-side language model. Its training loss falls below 0.95 × the unigram
    chance — an old rule called that 'ok' — but its held-out loss stays near chance, and
    BLEU on held-out sentences agrees."""
    data = tfx.load_corpus()

    class NoSource:
        def __getattr__(self, name):
            return getattr(data, name)

        def batch(self, step, batch_size=None, split="train", max_tokens=None):
            b = data.batch(step, batch_size, split, max_tokens)
            src = torch.where(b.src > 3, torch.full_like(b.src, 3), b.src)  # UNK, keeping EOS and PAD
            return Batch(src, b.tgt)

    cfg = ModelConfig.for_task(data, n_enc=1, n_dec=1, d_model=64, n_heads=4, d_ffn=128, placement="pre")
    h = train(build_model(cfg), NoSource(), steps=150, lr=3e-3, batch_size=32, bleu_sentences=40, eval_batches=2)
    assert h.final_loss() < 0.95 * h.chance_loss  # what used to make it 'ok'
    assert len(h.bleu) == len(h.eval_loss) == 1 and h.bleu[0] < 1.0
    assert h.status == "did not learn" and "BLEU" in h.reason and judge(h).gap_closed < 0.25
