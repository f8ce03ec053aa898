"""tfx: why Transformers are hard to train, in code that runs.

Every residual/normalisation scheme and initialiser of the papers (Post-LN,
Pre-LN, Admin, T-Fixup, Lipschitz init, ReZero, DeepNorm; after 2020 Peri-LN,
OLMo 2's output norm, Sub-LN, DyT, LayerNorm scaling, QK-norm, soft-capping), the
probes that measure them, and a trainer that survives divergence.

    import tfx
    data = tfx.load_corpus()
    cfg = tfx.ModelConfig.for_task(data, n_enc=12, n_dec=12, placement="admin", init="admin")
    model = tfx.build_model(cfg, batch=data.batch(0, 32))
    history = tfx.train(model, data, steps=200, warmup=0)

The library has four wings, and imports run one way (tests/test_architecture.py):

    tfx.nn      the model: config, batch, blocks, model, init, constants, hooks, optim
    tfx.theory  what the papers predict, beside the probe that measures it (uses nn)
    tfx.runs    training and many runs (uses nn, and the probes a run records)
    tfx.book    what a chapter needs to show it (uses every wing; nothing imports it)

The short names below are the ones notebooks use; everything else is imported from
its wing (``from tfx.theory import jacobian``).
"""
from . import nn, runs, theory
from .nn.batch import Batch
from .nn.config import ModelConfig, TrainConfig
from .nn.init import initialize, reparameterize_admin
from .nn.model import Transformer, build_model, build_scheme
from .runs.corpus import load_corpus
from .runs.data import load_task, synthetic
from .runs.profiles import get_profile
from .runs.train import History, train

__version__ = "0.1.0"

__all__ = ["Batch", "History", "ModelConfig", "TrainConfig", "Transformer", "build_model", "build_scheme", "get_profile",
           "initialize", "load_corpus", "load_task", "reparameterize_admin", "synthetic", "train"]
