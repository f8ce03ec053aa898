"""The model wing's registries, each kept once: placements (PLACEMENTS), initialisers (INITS,
with their functions in tfx.nn.init.INITIALISERS) and the named schemes (SCHEMES) the theory
builds and the book labels. A test here fails if one of them forks."""
import pytest

import tfx
from tfx.nn import config, init, model

TASK = tfx.synthetic("reverse", length=8)
SIZES = dict(d_model=32, n_heads=4, d_ffn=64)


def test_every_initialiser_name_has_its_function_and_no_other():
    assert init.INITIALISERS.keys() == config.INITS.keys()
    with pytest.raises(ValueError, match="init='fixup' is not an initialiser"):
        init.initialize(model.build_model(**SIZES), "fixup")


@pytest.mark.parametrize("scheme", list(config.SCHEMES))
def test_every_scheme_is_a_model_the_config_accepts(scheme):
    """Each scheme's options are ModelConfig fields with allowed values; it builds as an
    encoder–decoder, and as the decoder-only LM the theory of chapters 14–16 uses."""
    for n_enc, n_dec in ((2, 2), (0, 2)):
        cfg = config.ModelConfig.for_scheme(scheme, TASK, n_enc, n_dec, **SIZES)
        assert (cfg.n_enc, cfg.n_dec) == (n_enc, n_dec)
        assert all(getattr(cfg, k) == v for k, v in config.SCHEMES[scheme].items())
        assert cfg.placement in config.PLACEMENTS and cfg.init in config.INITS
    m = model.build_scheme(scheme, TASK, 1, 1, batch=TASK.batch(0, 4), **SIZES)
    assert m.cfg == config.ModelConfig.for_scheme(scheme, TASK, 1, 1, **SIZES)


def test_the_schemes_cover_every_placement_and_every_initialiser():
    cfgs = [config.ModelConfig(**opts) for opts in config.SCHEMES.values()]
    assert {c.placement for c in cfgs} == set(config.PLACEMENTS)
    assert {c.init for c in cfgs} == set(config.INITS)


def test_a_scheme_is_named_once_and_unknown_names_are_refused():
    options = [tuple(sorted(o.items())) for o in config.SCHEMES.values()]
    assert len(set(options)) == len(options)  # no two names for one model
    with pytest.raises(ValueError, match="scheme='xavier' is not allowed"):
        config.ModelConfig.for_scheme("xavier", TASK, 2, 2)  # an initialiser; Post-LN is 'post'
    cfg = config.ModelConfig.for_scheme("dyt", TASK, 0, 2, dyt_alpha=0.3, **SIZES)
    assert (cfg.norm, cfg.dyt_alpha, cfg.kind) == ("dyt", 0.3, "decoder")  # keywords join the scheme's options


def test_one_spelling_of_a_precision_and_torchs_name_derived_from_it():
    """'bf16', 'fp16', 'fp32' (AMP_DTYPES) are the names; torch's dtype and its name
    ('bfloat16', what a Record records) come from them."""
    import torch

    assert [config.torch_dtype(n) for n in config.AMP_DTYPES] == [torch.bfloat16, torch.float16, torch.float32]
    assert [config.autocast_dtype(n) for n in config.AMP_DTYPES] == [torch.bfloat16, torch.float16, None]
    assert [str(config.torch_dtype(n)).removeprefix("torch.") for n in config.AMP_DTYPES] == [
        "bfloat16", "float16", "float32"]
    with pytest.raises(ValueError, match="amp_dtype='bfloat16' is not allowed"):
        config.torch_dtype("bfloat16")
