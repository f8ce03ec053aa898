"""Every validation rule of ModelConfig / TrainConfig: a bad value raises a
ValueError that names the field (and the value or what is allowed)."""
import pytest

from tfx import ModelConfig, TrainConfig
from tfx.profiles import get_profile


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
    (dict(schedule="cosine"), ["schedule='cosine'", "'inverse-sqrt'"]),
    (dict(warmup=-5), ["warmup=-5"]),
    (dict(clip=0), ["clip=0"]),
    (dict(label_smoothing=1.0), ["label_smoothing=1.0"]),
    (dict(eval_every=-1), ["eval_every=-1"]),
    (dict(eval_batches=0), ["eval_batches=0"]),
    (dict(checkpoint_every=10), ["checkpoint_every", "checkpoint_path"]),
    (dict(device="tpu"), ["device='tpu'"]),
    (dict(diverge_loss=0), ["diverge_loss=0"]),
    (dict(stuck_fraction=0), ["stuck_fraction=0"]),
    (dict(log_every=0), ["log_every=0"]),
])
def test_train_config_rejects(kw, words):
    with pytest.raises(ValueError) as e:
        TrainConfig(**kw)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


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
    from tfx.data import load_task

    assert load_task("sort", length=5).max_len == 7
    assert get_profile("quick").load_task().name.startswith("reverse")
    with pytest.raises(ValueError, match="task='wmt'.*copy, reverse, sort"):
        load_task("wmt")
