"""tfx: why Transformers are hard to train, in code that runs.

Every residual/normalisation scheme and initialiser of the papers (Post-LN,
Pre-LN, Admin, T-Fixup, Lipschitz init, ReZero, DeepNorm), the probes that
measure them, and a trainer that survives divergence.
"""
from .config import ModelConfig, TrainConfig
from .data import Batch, synthetic
from .model import Transformer, build_model
from .init import initialize, reparameterize_admin

__version__ = "0.1.0"
from .train import History, train
from . import notebook, plot, sweep  # noqa: E402  (tfx.notebook.setup(), tfx.plot.figure(), tfx.sweep.run_grid())
