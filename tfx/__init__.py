"""tfx: why Transformers are hard to train, in code that runs.

Every residual/normalisation scheme and initialiser of the papers (Post-LN,
Pre-LN, Admin, T-Fixup, Lipschitz init, ReZero, DeepNorm), the probes that
measure them, and a trainer that survives divergence.

    import tfx
    data = tfx.data.load_corpus()
    cfg = tfx.ModelConfig.for_task(data, n_enc=12, n_dec=12, placement="admin", init="admin")
    model = tfx.build_model(cfg, batch=data.batch(0, 32))
    history = tfx.train(model, data, steps=200, warmup=0)
"""
from . import (bounds, change, constants, data, dependency, fit, gradients, hidden, hooks, init, jacobian, notebook,
               plot, profiles, results, scaling, sweep)
from .config import ModelConfig, TrainConfig
from .data import Batch, load_task, synthetic
from .init import initialize, reparameterize_admin
from .model import Transformer, build_model
from .profiles import get_profile
from .train import History, train

__version__ = "0.1.0"
