"""tfx.nn.constants: the numbers each fix sets (Admin's profiling-free ω, Lipschitz half-widths,
T-Fixup's multipliers, DeepNorm's α and β in both conventions)."""
import math

import numpy as np
import pytest
import torch

from tfx.nn import constants


def test_admin_omega_profiling_free():
    assert constants.admin_omega_profiling_free(1) == pytest.approx(math.sqrt(2 / math.log(2) - 1))
    assert constants.admin_omega_profiling_free(1) == pytest.approx(1.37310, abs=1e-5)
    assert constants.admin_omega_profiling_free(12) == pytest.approx(2.01701, abs=1e-5)
    assert constants.admin_omega_profiling_free(36) == pytest.approx(math.sqrt(37 / math.log(37) - 1))
    assert np.allclose(constants.admin_omega_profiling_free(np.array([1, 12])), [1.37310, 2.01701], atol=1e-5)
    with pytest.raises(ValueError):
        constants.admin_omega_profiling_free(0)


def test_lipschitz_init_bounds():
    e, l = constants.lipschitz_init_bounds(512, 32000, 2048)
    assert e == pytest.approx(math.sqrt(2 / 32512)) and l == pytest.approx(1 / math.sqrt(2048))
    # a linear layer with U(-l, l) weights has weight variance l^2/3 = 1/(3 isize)
    w = torch.empty(256, 2048).uniform_(-l, l)
    assert w.var().item() == pytest.approx(1 / (3 * 2048), rel=0.02)


def test_tfixup_scale_factors():
    f = constants.tfixup_scale_factors(6, 6)
    assert f["encoder"]["weights"] == pytest.approx(0.67 * 6 ** -0.25)
    assert f["encoder"]["embedding"] == pytest.approx(54 ** -0.25)
    assert f["decoder"]["weights"] == f["decoder"]["embedding"] == pytest.approx(54 ** -0.25)
    assert "decoder" not in constants.tfixup_scale_factors(6, 0)


def test_deepnorm_constants():
    c = constants.deepnorm_constants(6, 0)
    assert c["encoder"]["alpha"] == pytest.approx(12 ** 0.25)        # 1.8612
    assert c["encoder"]["beta"] == pytest.approx(48 ** -0.25)        # 0.3799
    assert c["encoder"]["alpha"] == pytest.approx(1.86121, abs=1e-5)
    c = constants.deepnorm_constants(0, 24)
    assert c["decoder"]["alpha"] == pytest.approx(48 ** 0.25) and "encoder" not in c
    c = constants.deepnorm_constants(6, 6)
    assert c["encoder"]["alpha"] == pytest.approx(0.81 * 6 ** (5 / 16))
    assert c["encoder"]["alpha"] == pytest.approx(1.41794, abs=1e-5)
    assert c["encoder"]["beta"] == pytest.approx(0.87 * 6 ** (-5 / 16))
    assert c["decoder"]["alpha"] == pytest.approx(18 ** 0.25)
    assert c["decoder"]["beta"] == pytest.approx(72 ** -0.25)
    # the paper's 200-layer model: 100 encoder + 100 decoder layers
    c = constants.deepnorm_constants(100, 100)
    assert c["encoder"]["alpha"] == pytest.approx(0.81 * 100 ** (5 / 16))
    with pytest.raises(ValueError):
        constants.deepnorm_constants(0, 0)


def test_deepnorm_conventions_differ_only_for_the_encoder_of_an_encoder_decoder():
    for N, M in ((6, 0), (0, 6), (6, 6), (3, 12)):
        paper = constants.deepnorm_constants(N, M, "paper")
        ts = constants.deepnorm_constants(N, M, "torchscale")
        assert paper == constants.deepnorm_constants(N, M)
        for stack in paper:
            assert ts[stack]["alpha"] == paper[stack]["alpha"]
            if stack == "encoder" and M and N:
                assert ts[stack]["beta"] == pytest.approx(1.15 * (N**4 * M) ** (-1 / 16))
                assert ts[stack]["beta"] / paper[stack]["beta"] == pytest.approx(1.15 / 0.87)
            else:
                assert ts[stack]["beta"] == paper[stack]["beta"]
    with pytest.raises(ValueError, match="convention='fairseq'"):
        constants.deepnorm_constants(6, 6, "fairseq")
