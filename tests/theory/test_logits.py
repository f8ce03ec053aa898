"""tfx.theory.logits: the QK-norm bound, soft-capping, entropy collapse, and the z-loss algebra (chapter 15)."""
import math

import pytest
import torch

from tfx.nn.config import ModelConfig
from tfx.nn.model import build_model
from tfx.runs import diagnose
from tfx.theory import logits


def test_entropy_falls_from_ln_n_to_zero_as_logits_grow():
    z = torch.randn(1000, 16, generator=torch.Generator().manual_seed(0))
    h = [float(logits.softmax_entropy(s * z).mean()) for s in (0.0, 1.0, 10.0, 100.0)]
    assert h[0] == pytest.approx(math.log(16), rel=1e-6)
    assert h[0] > h[1] > h[2] > h[3] and h[3] < 0.05


def test_qk_norm_bound_holds_in_a_model_and_binds_without_it():
    """With QK-norm every attention logit of a model at initialisation is within √d_h (unit gains);
    the same model without QK-norm, with its inputs scaled up, exceeds it."""
    d, heads = 64, 4
    bound = logits.qk_norm_logit_bound(d // heads)
    assert bound == pytest.approx(4.0)
    x = 30.0 * torch.randn(2, 12, d, generator=torch.Generator().manual_seed(1))
    for qk, within in ((True, True), (False, False)):
        m = build_model(ModelConfig(n_enc=0, n_dec=1, d_model=d, n_heads=heads, placement="pre", qk_norm=qk))
        attn = m.decoder.layers[0].self_attn.f
        z = diagnose._attention_logits(attn, x)
        assert (float(z.abs().max()) <= bound + 1e-5) is within
    assert logits.qk_norm_logit_bound(16, 2.0, -0.5) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="d_head"):
        logits.qk_norm_logit_bound(0)


def test_softcap_is_the_identity_for_small_logits_and_never_exceeds_the_cap():
    z = torch.tensor([0.01, -0.5, 40.0, -1e4])
    out = logits.softcap(z, 50.0)
    assert float(out[0]) == pytest.approx(0.01, rel=1e-6) and float(out.abs().max()) <= 50.0
    assert float(out[3]) == pytest.approx(-50.0)


def test_the_cross_entropy_ignores_a_common_shift_and_the_z_loss_does_not():
    d = logits.derive_logit_shift(V=3)
    assert d.d_ce_d_shift == 0
    assert d.zloss_matches
    y = torch.tensor([1.5, -0.3, 0.2], requires_grad=True)
    log_z = torch.logsumexp(y, 0)
    (log_z ** 2).backward()
    assert torch.allclose(y.grad, 2 * log_z.detach() * torch.softmax(y.detach(), 0))
    ce = lambda v: torch.nn.functional.cross_entropy(v[None], torch.tensor([0]))  # noqa: E731
    assert float(ce(y.detach() + 7.0)) == pytest.approx(float(ce(y.detach())), abs=1e-6)


def test_bound_cap_zloss_gives_the_bound_the_cap_and_the_z_loss_share():
    out = logits.bound_cap_zloss()  # chapter 15's exercises: d_h 64, cap 50, log Z 7, 5 nats
    assert out["bound"] == pytest.approx(8.0)
    assert out["cap"] == pytest.approx(8 - 50 * math.tanh(8 / 50), rel=1e-4)  # float32
    assert out["zloss"] == pytest.approx(4.9e-3) and out["zloss-share"] == pytest.approx(0.098)
