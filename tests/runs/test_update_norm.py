"""UpdateNorm: ‖θ_t − θ_{t−1}‖ read from the optimiser's state equals the step actually taken,
for every optimiser the trainer builds, and on the path fused CUDA kernels take (the step count
a device tensor), which is exercised here on the CPU and on CUDA where there is one."""
from __future__ import annotations

import pytest
import torch

from tfx.nn.config import TrainConfig
from tfx.nn.optim import make_optimizer, take_step
from tfx.runs.train import UpdateNorm

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def params(device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(*shape, generator=g).to(device)) for shape in ((5, 3), (3,), (2, 2))]


def objective(ps):
    return sum((p ** 2).sum() * (i + 1) + p.sum() for i, p in enumerate(ps))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("optimizer,extra", [("adam", {}), ("adamw", {"weight_decay": 0.1}),
                                             ("sgd", {"momentum": 0.9}), ("radam", {})])
def test_update_norm_is_the_step_taken(device, optimizer, extra):
    ps = params(device)
    opt = make_optimizer(ps, TrainConfig(optimizer=optimizer, lr=3e-2, **extra), torch.device(device))
    upd = UpdateNorm(opt)
    for _ in range(3):
        old = [p.detach().clone() for p in ps]
        take_step(opt, objective(ps), before_update=upd.before)
        got = float(upd.after())
        want = float(torch.linalg.vector_norm(torch.stack([(p.detach() - o).norm() for p, o in zip(ps, old)])))
        assert got == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize("optimizer,extra", [("adam", {}), ("adamw", {"weight_decay": 0.1})])
def test_the_device_step_count_path_agrees_with_the_host_path(optimizer, extra):
    """Fused kernels on CUDA keep Adam's step count on the device; UpdateNorm then computes the
    bias corrections as tensors (no host sync). Both paths must give the same Δ."""
    ps = params("cpu")
    opt = make_optimizer(ps, TrainConfig(optimizer=optimizer, lr=3e-2, **extra), torch.device("cpu"))
    upd = UpdateNorm(opt)
    for _ in range(2):
        take_step(opt, objective(ps))
    group = opt.param_groups[0]
    state = [opt.state[p] for p in ps]
    t = state[0]["step"]
    host = upd._adam_delta(group, ps, state, float(t))
    device = upd._adam_delta(group, ps, state, t.clone())  # a tensor step count, as on CUDA
    for a, b in zip(host, device):
        torch.testing.assert_close(a, b)
