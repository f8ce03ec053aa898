"""tfx: why Transformers are hard to train, in code that runs.

Every residual/normalisation scheme and initialiser of the papers (Post-LN,
Pre-LN, Admin, T-Fixup, Lipschitz init, ReZero, DeepNorm), the probes that
measure them, and a trainer that survives divergence.

    import tfx
    data = tfx.data.load_corpus()
    cfg = tfx.ModelConfig.for_task(data, n_enc=12, n_dec=12, placement="admin", init="admin")
    model = tfx.build_model(cfg, batch=data.batch(0, 32))
    history = tfx.train(model, data, steps=200, warmup=0)

Modules, one question of the book each; each holds the papers' formula (and its sympy
derivation) beside the probe that measures it in a model:

    blocks      where does the norm sit? (Post-LN, Pre-LN, Admin, ReZero, DeepNorm side by side)
    model, init the Transformer; each initialiser, with its formula and paper
    jacobian    what does LayerNorm's Jacobian do to a gradient?               (LN-1)
    hidden      how large does the hidden state grow at initialisation?       (LN-2, LN-3)
    gradients   how large are the gradients at initialisation, layer by layer,
                and the updates Adam and SGD make from them?                  (LN-4, LN-5, GV-1, GV-3)
    dependency  how much does each sub-layer's output depend on each branch?  (AM-1, AD-1)
    change      how much does the output move when the weights move?          (AM-2, AD-2)
    bounds      how large can an update or a residual be? (T-Fixup, Lipschitz init)
    scaling     how should the residual be scaled with depth? (ReZero, DeepNorm)
    constants   what constants do the fixes choose? (Admin's ω, T-Fixup, Lipschitz, DeepNorm)
    fit         does a measurement follow the predicted shape? (line and power-law fits)
    hooks       how do we see inside one forward pass? (the probes' shared hooks)
    train, diagnose, adam   training that survives divergence; where a run blew up; Adam's steps
    data, corpus, profiles, sweep, experiment, results, plot, explorer, widgets, claims
    sweep_explorers   what did every seed of one cell of a recorded sweep do?
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
