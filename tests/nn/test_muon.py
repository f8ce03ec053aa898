"""Muon (jordan2024muon, liu2025muon: tfx.nn.optim.Muon) for the hidden matrices, with AdamW for
the rest (TrainConfig.optimizer_by_kind={"hidden": "muon"}): the Newton–Schulz orthogonalisation
against an SVD, the AdamW-matched update size, a test that fails if Muon does nothing, the
refusals, and an exact resume."""
from __future__ import annotations

import copy
import math

import pytest
import torch

import tfx
from tfx import ModelConfig, TrainConfig, build_model, train
from tfx.nn.mup import params_by_kind
from tfx.nn.optim import NS_COEFFICIENTS, Composite, Muon, lr_at, make_optimizer, newton_schulz, step_batch, take_step
from tfx.runs.train import UpdateNorm

TASK = tfx.synthetic("reverse", vocab=8, length=6)
MUON = TrainConfig(steps=12, lr=3e-3, optimizer="adamw", optimizer_by_kind={"hidden": "muon"}, momentum=0.95,
                   weight_decay=0.01, warmup=4, seed=2, eval_every=6, eval_batches=1, bleu_sentences=0)
SHAPES = [(32, 32), (64, 32), (32, 128)]  # square, tall (transposed inside), wide


def _model(**kw):
    base = dict(d_model=32, n_heads=4, d_ffn=64, n_enc=0, n_dec=2, placement="pre", dropout=0.1)
    base.update(kw)
    return build_model(ModelConfig.for_task(TASK, **base), seed=0)


def _loss(model, step, cfg=MUON):
    batch = step_batch(TASK, step, cfg)
    torch.manual_seed(step)  # the same dropout masks in every copy
    return model.loss_and_accuracy(batch.src, batch.tgt, 0.0, batch.src_padded, batch.tgt_padded)[0]


# ------------------------------------------------------------------ Newton–Schulz
def _ns_scalar(x, steps=5):
    """What NS does to one singular value x of G/‖G‖_F: x ← a·x + b·x³ + c·x⁵, ``steps`` times."""
    a, b, c = NS_COEFFICIENTS
    for _ in range(steps):
        x = a * x + b * x**3 + c * x**5
    return x


def test_newton_schulz_band_of_the_coefficients():
    """A derivation check of the band the next test uses: Jordan's coefficients do not converge
    to 1; five steps send every x ∈ [1.6e-3, 1] into [0.68, 1.21] (0.680–1.202 on a fine grid; from
    x ≈ 1.5e-3 on; smaller x stay below the band)."""
    x = torch.logspace(math.log10(1.6e-3), 0, 100_001, dtype=torch.float64)
    y = _ns_scalar(x)
    assert 0.68 <= y.min() and y.max() <= 1.21, (y.min(), y.max())


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_newton_schulz_approximates_the_svd_orthogonalisation(shape):
    """A derivation check: NS(G) against U·Vᵀ of G = U·Σ·Vᵀ. For G built with condition number
    100 (so every σ/‖G‖_F ≥ 1/(100·√32) > 1.6e-3) NS(G)'s singular values lie in the band above,
    [0.68, 1.21] (measured 0.682–1.147), and NS(G) = U·f(Σ)·Vᵀ points along U·Vᵀ:
    cos > 0.95 (measured 0.967–0.989 over these and Gaussian G; a Gaussian square G can have a
    σ below 1.6e-3·‖G‖_F, which five steps do not lift into the band)."""
    torch.manual_seed(0)
    m, n = shape
    k = min(m, n)
    for _ in range(3):
        U, _ = torch.linalg.qr(torch.randn(m, k))
        V, _ = torch.linalg.qr(torch.randn(n, k))
        G = U @ torch.diag(torch.logspace(0, 2, k)) @ V.T
        X = newton_schulz(G)
        assert X.shape == G.shape and X.dtype == G.dtype
        sv = torch.linalg.svdvals(X)
        assert 0.68 <= sv.min() and sv.max() <= 1.21, (sv.min(), sv.max())
        assert torch.nn.functional.cosine_similarity(X.flatten(), (U @ V.T).flatten(), dim=0) > 0.95
        Gg = torch.randn(m, n)
        Ug, _, Vhg = torch.linalg.svd(Gg, full_matrices=False)
        assert torch.nn.functional.cosine_similarity(newton_schulz(Gg).flatten(), (Ug @ Vhg).flatten(), dim=0) > 0.95


def test_newton_schulz_keeps_the_singular_vectors():
    """Each step is a polynomial in X·Xᵀ times X: U and V of G stay, only Σ changes."""
    torch.manual_seed(1)
    G = torch.randn(16, 24, dtype=torch.float64)
    U, _, Vh = torch.linalg.svd(G, full_matrices=False)
    X = newton_schulz(G).double()
    core = U.T @ X @ Vh.T  # diagonal if U, V are X's singular vectors
    assert torch.allclose(core, torch.diag(torch.diagonal(core)), atol=1e-5)


# ------------------------------------------------------------------ the optimiser
def test_muon_update_rms_is_matched_to_adamw():
    """One step from zero momentum, λ = 0: Δ = −lr · 0.2·√max(m, n) · NS(g). An exactly orthogonal
    O would give RMS(Δ)/lr = 0.2; NS's singular values (≈ 0.68–1.13, mean square ≈ 0.7–0.8) give
    0.16–0.18 for a Gaussian gradient (measured), so the check is [0.14, 0.22]; and Δ is checked
    against the formula itself (without the factor the RMS would be ≈ 0.85/√max(m, n), 0.075 for
    the 32×128 matrix)."""
    torch.manual_seed(0)
    for shape in SHAPES:
        p = torch.nn.Parameter(torch.zeros(shape))
        opt = Muon([p], lr=0.01, momentum=0.95)
        p.grad = torch.randn(shape)
        opt.step()
        rms = float(p.detach().pow(2).mean().sqrt()) / 0.01
        assert 0.14 < rms < 0.22, (shape, rms)
        assert torch.allclose(p.detach(), -0.01 * 0.2 * max(shape) ** 0.5 * newton_schulz(p.grad.lerp(
            0.05 * p.grad, 0.95)))  # Nesterov: (1 − β)·g + β·b₁, b₁ = (1 − β)·g


def test_muon_decays_decoupled_and_refuses_vectors():
    p = torch.nn.Parameter(torch.ones(4, 4))
    opt = Muon([p], lr=0.1, weight_decay=0.5)
    p.grad = torch.zeros(4, 4)  # no gradient signal: the step is the decay alone (NS(0) = 0)
    opt.step()
    assert torch.allclose(p.detach(), torch.full((4, 4), 1 - 0.1 * 0.5))
    with pytest.raises(ValueError, match="Muon orthogonalises 2-D matrices; got a parameter of shape \\(4,\\)"):
        Muon([torch.nn.Parameter(torch.zeros(4))])


def test_the_composite_gives_muon_the_hidden_matrices_and_adamw_the_rest():
    model = _model()
    opt = make_optimizer(model, MUON)
    assert isinstance(opt, Composite) and list(opt.optimizers) == ["muon", "adamw"]
    assert isinstance(opt.optimizers["muon"], Muon) and isinstance(opt.optimizers["adamw"], torch.optim.AdamW)
    assert [g["kind"] for g in opt.optimizers["muon"].param_groups] == ["hidden"]
    assert opt.optimizers["muon"].param_groups[0]["momentum"] == 0.95  # TrainConfig.momentum


def test_mup_rates_and_decay_hold_in_muon():
    model = tfx.build_model(ModelConfig.for_task(TASK, n_enc=0, n_dec=1, placement="pre", d_model=64, n_heads=2,
                                                 d_ffn=128, parameterization="mup", base_width=16), seed=0)
    opt = make_optimizer(model, MUON)
    (hidden,) = opt.optimizers["muon"].param_groups
    assert (hidden["lr"], hidden["weight_decay"]) == (MUON.lr / 4, MUON.weight_decay * 4)


def test_muon_orthogonalises_the_hidden_updates():
    """Fails if Muon does nothing (or is plain momentum SGD): after one step, every singular value
    of a hidden matrix's update Δ/(lr·0.2·√max(m, n)) along a gradient direction with
    σ/‖g‖_F ≥ 1.6e-3 lies in NS's band [0.68, 1.21] (measured 0.682–1.202), where the gradient's
    own singular values spread by a factor > 100 (measured 296–601): the update is
    orthogonalised (at step 1 the Nesterov momentum is ∝ g). The other kinds move exactly as
    AdamW alone moves them."""
    model = _model(dropout=0.0)
    reference = copy.deepcopy(model)
    opt = make_optimizer(model, MUON)
    ref_opt = make_optimizer(reference, MUON.replace(optimizer_by_kind=None))
    before = [p.detach().clone() for p in model.parameters()]
    lr = lr_at(4, MUON)  # the peak rate
    take_step(opt, _loss(model, 1), lr=lr)
    take_step(ref_opt, _loss(reference, 1), lr=lr)
    hidden = {id(p) for p in params_by_kind(model)["hidden"]}
    assert len(hidden) == 12
    for (name, p), q, old in zip(model.named_parameters(), reference.parameters(), before):
        if id(p) in hidden:
            delta = p.detach() - old * (1 - lr * MUON.weight_decay)  # the decay, then the orthogonal step
            sv = torch.linalg.svdvals(delta) / (lr * 0.2 * max(p.shape) ** 0.5)
            gv = torch.linalg.svdvals(p.grad)
            top = gv / gv.norm() >= 1.6e-3
            assert top.sum() >= 10, name
            assert 0.68 <= sv[top].min() and sv[top].max() <= 1.21, (name, sv[top].min(), sv[top].max())
            assert gv[top].max() / gv[top].min() > 100, name
        else:
            assert torch.equal(p, q), name


def test_a_muon_run_trains_and_its_update_norm_is_the_step_taken():
    """The trainer with {hidden: muon, others: adamw}: the loss falls; UpdateNorm (which copies θ
    for an optimiser it cannot read, as Muon) gives ‖θ_t − θ_{t−1}‖ of the Composite."""
    h = train(_model(), TASK, MUON)
    assert h.loss[-1] < h.loss[0] and all(u > 0 for u in h.update_norm)
    assert h.loss != train(_model(), TASK, MUON.replace(optimizer_by_kind=None)).loss
    model = _model(dropout=0.0)
    opt = make_optimizer(model, MUON)
    upd = UpdateNorm(opt)
    assert [part.kind for part in upd.parts] == [None, "adam"]  # Muon: the copy of θ
    for step in range(1, 4):
        old = [p.detach().clone() for p in model.parameters()]
        take_step(opt, _loss(model, step), lr=lr_at(step, MUON), before_update=upd.before)
        want = torch.linalg.vector_norm(torch.stack([(p.detach() - o).norm() for p, o in zip(model.parameters(), old)]))
        assert float(upd.after()) == pytest.approx(float(want), rel=1e-4)


def test_a_muon_run_resumes_exactly(tmp_path):
    """Checkpoint at step 6, resume in a fresh model: the same history as 12 steps straight
    (Muon's momentum buffers are in the checkpoint)."""
    path = str(tmp_path / "ck.pt")
    straight = train(_model(), TASK, MUON)
    first = train(_model(), TASK, MUON.replace(steps=6, checkpoint_every=6, checkpoint_path=path))
    assert first.steps_done == 6
    ck = torch.load(path, weights_only=True)
    assert set(ck["optimizer"]) == {"muon", "adamw"} and ck["optimizer"]["muon"]["state"]
    resumed = train(_model(), TASK, MUON.replace(checkpoint_every=6, checkpoint_path=path), resume=True)
    assert resumed.step == straight.step
    assert resumed.loss == straight.loss and resumed.update_norm == straight.update_norm


# ------------------------------------------------------------------ refusals
def test_muon_alone_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="optimizer='muon' would give Muon the embedding, vector, readout.*"
                                         "optimizer_by_kind=\\{'hidden': 'muon'\\}"):
        TrainConfig(optimizer="muon")


@pytest.mark.parametrize("kind", ["embedding", "vector", "readout"])
def test_muon_for_another_kind_is_refused_naming_the_field(kind):
    with pytest.raises(ValueError, match=f"optimizer_by_kind=.*gives 'muon' to {kind}.*'hidden' alone"):
        TrainConfig(optimizer="adamw", optimizer_by_kind={"hidden": "muon", kind: "muon"})
