"""Every validation rule of ModelConfig / TrainConfig: a bad value raises a
ValueError that names the field (and the value or what is allowed)."""
import pytest

from tfx import ModelConfig, TrainConfig
from tfx.runs.profiles import get_profile


@pytest.mark.parametrize("kw, words", [
    (dict(d_model=30, n_heads=4), ["d_model=30", "n_heads=4", "divisible"]),
    (dict(placement="sandwich"), ["placement='sandwich'", "'post'", "'pre'"]),
    (dict(enc_placement="middle"), ["enc_placement='middle'"]),
    (dict(dec_placement="x"), ["dec_placement='x'"]),
    (dict(n_enc=0, n_dec=0), ["n_enc=0", "n_dec=0"]),
    (dict(n_enc=-1), ["n_enc=-1", "≥ 0"]),
    (dict(d_model=0), ["d_model=0"]),
    (dict(src_vocab=0), ["src_vocab=0"]),
    (dict(n_heads=0), ["n_heads=0"]),
    (dict(d_ffn=0), ["d_ffn=0"]),
    (dict(dropout=-0.1), ["dropout=-0.1", "[0, 1)"]),
    (dict(attn_dropout=1.0), ["attn_dropout=1.0"]),
    (dict(act_dropout=2), ["act_dropout=2"]),
    (dict(norm="batchnorm"), ["norm='batchnorm'", "'layernorm'", "'rmsnorm'"]),
    (dict(norm_eps=0), ["norm_eps=0"]),
    (dict(activation="tanh"), ["activation='tanh'", "'relu'", "'gelu'"]),
    (dict(positions="rotary"), ["positions='rotary'"]),
    (dict(max_len=0), ["max_len=0"]),
    (dict(init="kaiming"), ["init='kaiming'", "'xavier'"]),
    (dict(init="admin", placement="pre"), ["init='admin'", "enc_placement='pre'"]),
    (dict(init="t-fixup", placement="post"), ["init='t-fixup'", "'none'"]),
    (dict(init="deepnorm", placement="post"), ["init='deepnorm'"]),
    (dict(init="rezero", placement="post"), ["init='rezero'"]),
    (dict(n_heads=2.5), ["n_heads=2.5"]),
    (dict(n_heads=4.0), ["n_heads=4.0", "integer"]),
    (dict(d_model=True), ["d_model=True", "integer"]),
    (dict(dropout=False), ["dropout=False", "[0, 1)"]),
    (dict(dropout=float("nan")), ["dropout=nan"]),
    (dict(attn_dropout="0.1"), ["attn_dropout='0.1'"]),
    (dict(norm_eps=float("inf")), ["norm_eps=inf", "finite"]),
    (dict(norm_eps=10**400), ["norm_eps=", "finite"]),  # too large for a float
    (dict(tie_embeddings="no"), ["tie_embeddings='no'", "True or False"]),
    (dict(embed_scale=1), ["embed_scale=1", "True or False"]),
    (dict(placement=None), ["placement=None"]),
    (dict(init=["admin"]), ["init=['admin']"]),
    # contradictions: an encoder-only model ties its source embedding to a tgt_vocab-sized output
    (dict(n_dec=0, tie_embeddings=True, src_vocab=30, tgt_vocab=40),
     ["tie_embeddings=True", "src_vocab=30", "tgt_vocab=40"]),
])
def test_model_config_rejects(kw, words):
    with pytest.raises(ValueError) as e:
        ModelConfig(**kw)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_model_config_resolves_placements():
    cfg = ModelConfig(placement="pre")
    assert (cfg.enc_placement, cfg.dec_placement) == ("pre", "pre")
    cfg = ModelConfig(placement="post", dec_placement="pre")
    assert (cfg.enc_placement, cfg.dec_placement) == ("post", "pre")
    assert ModelConfig(n_dec=0).kind == "encoder"
    assert ModelConfig(n_enc=0).kind == "decoder"
    assert ModelConfig().kind == "encoder-decoder"
    # an init that needs a placement only checks the stacks that exist
    assert ModelConfig(n_dec=0, enc_placement="admin", dec_placement="pre", init="admin").init == "admin"


@pytest.mark.parametrize("kw, words", [
    (dict(steps=0), ["steps=0"]),
    (dict(batch_size=0), ["batch_size=0"]),
    (dict(lr=0), ["lr=0"]),
    (dict(lr=-1e-3), ["lr=-0.001"]),
    (dict(optimizer="lion"), ["optimizer='lion'", "'adam'", "'sgd'", "'radam'"]),
    (dict(betas=(0.9, 1.0)), ["betas="]),
    (dict(betas=(0.9,)), ["betas="]),
    (dict(momentum=1.0), ["momentum=1.0"]),
    (dict(weight_decay=-1), ["weight_decay=-1"]),
    (dict(schedule="cosine-annealing"), ["schedule='cosine-annealing'", "'inverse-sqrt'", "'wsd-sqrt'"]),
    (dict(warmup=-5), ["warmup=-5"]),
    (dict(clip=0), ["clip=0"]),
    (dict(label_smoothing=1.0), ["label_smoothing=1.0"]),
    (dict(eval_every=-1), ["eval_every=-1"]),
    (dict(eval_batches=0), ["eval_batches=0"]),
    (dict(checkpoint_every=10), ["checkpoint_every", "checkpoint_path"]),
    (dict(device="tpu"), ["device='tpu'"]),
    (dict(diverge_loss=0), ["diverge_loss=0"]),
    (dict(data_seed=-1), ["data_seed=-1"]),
    (dict(log_every=0), ["log_every=0"]),
    (dict(lr=float("inf")), ["lr=inf", "finite"]),
    (dict(lr=float("nan")), ["lr=nan"]),
    (dict(lr=10**400), ["lr=", "finite"]),
    (dict(lr=True), ["lr=True"]),
    (dict(momentum="0.9"), ["momentum='0.9'"]),
    (dict(momentum=None), ["momentum=None"]),
    (dict(weight_decay=None), ["weight_decay=None"]),
    (dict(weight_decay=float("inf")), ["weight_decay=inf"]),
    (dict(data_seed=1.5), ["data_seed=1.5"]),
    (dict(betas=None), ["betas=None"]),
    (dict(betas="ab"), ["betas='ab'"]),
    (dict(betas=(0.9, "0.98")), ["betas="]),
    (dict(betas=(True, 0.98)), ["betas="]),
    (dict(clip=float("inf")), ["clip=inf"]),
    (dict(diverge_loss=float("nan")), ["diverge_loss=nan"]),
    (dict(seed=-1), ["seed=-1"]),
    (dict(seed=1.5), ["seed=1.5"]),
    (dict(seed="0"), ["seed='0'"]),
    (dict(seed=None), ["seed=None"]),
    (dict(seed=2**64), ["seed=", "[0, "]),
    (dict(steps=100.0), ["steps=100.0", "integer"]),
    (dict(progress="yes"), ["progress='yes'"]),
    (dict(amp="on"), ["amp='on'"]),
    (dict(device="gpu"), ["device='gpu'", "'cuda:0'"]),
    (dict(device="meta"), ["device='meta'"]),
    (dict(device="cuda:abc"), ["device='cuda:abc'"]),
    (dict(device="cuda:130"), ["device='cuda:130'"]),  # torch.device would wrap it to cuda:-126
    (dict(device=0), ["device=0"]),
    (dict(checkpoint_path=5), ["checkpoint_path=5"]),
    (dict(checkpoint_path=""), ["checkpoint_path=''"]),
    (dict(checkpoint_path=b"run.pt"), ["checkpoint_path=b'run.pt'"]),
    (dict(amp=True, device="cpu"), ["amp=True", "device='cpu'"]),
])
def test_train_config_rejects(kw, words):
    with pytest.raises(ValueError) as e:
        TrainConfig(**kw)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_accepted_values_are_stored_as_plain_python_values():
    """NumPy scalars, a torch.device, a Path: accepted, stored as int / float / str."""
    import json
    import pathlib

    import numpy as np
    import torch

    m = ModelConfig(d_model=np.int64(32), n_heads=np.int32(4), dropout=np.float64(0.1), placement=np.str_("pre"))
    assert (type(m.d_model), type(m.n_heads), type(m.dropout), type(m.placement)) == (int, int, float, str)
    t = TrainConfig(lr=np.float32(1e-3), steps=np.int64(10), betas=[0.9, np.float64(0.99)], device=torch.device("cpu"),
                    checkpoint_every=5, checkpoint_path=pathlib.Path("runs") / "a.pt", seed=2**64 - 1, weight_decay=0)
    assert (type(t.lr), t.steps, t.betas, t.device, t.checkpoint_path) == (float, 10, (0.9, 0.99), "cpu", "runs/a.pt")
    assert TrainConfig(device="cuda:1", amp=True).device == "cuda:1"  # no CUDA needed to describe a CUDA run
    json.dumps([m.to_dict(), t.to_dict()])
    assert ModelConfig(n_dec=0, tie_embeddings=True).kind == "encoder"  # equal vocabularies: tying is fine


def test_replace_validates_again():
    cfg = ModelConfig()
    assert cfg.replace(d_model=128).d_model == 128
    with pytest.raises(ValueError, match="n_heads"):
        cfg.replace(n_heads=3)


def test_profiles(monkeypatch):
    monkeypatch.setenv("TFX_PROFILE", "quick")
    assert get_profile().name == "quick"
    monkeypatch.setenv("TFX_PROFILE", "huge")
    with pytest.raises(ValueError, match="TFX_PROFILE='huge'.*quick, book, full"):
        get_profile()
    with pytest.raises(ValueError, match="name='x'|'x'"):
        get_profile("x")
    monkeypatch.delenv("TFX_PROFILE")
    assert get_profile().name in ("book", "full")
    for name in ("quick", "book", "full"):
        P = get_profile(name)
        ModelConfig(**P.model_kwargs())  # the sizes are valid
        assert str(P).startswith(f"profile: {name} · device: ")


def test_load_task_by_name():
    from tfx.runs.data import load_task

    assert load_task("sort", length=5).max_len == 7
    assert get_profile("quick").load_task().name.startswith("reverse")
    with pytest.raises(ValueError, match="task='wmt'.*copy, reverse, sort"):
        load_task("wmt")
