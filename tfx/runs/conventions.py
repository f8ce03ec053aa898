"""Does DeepNorm's convention for κ_e matter in training? The paper's and torchscale's
constants differ for an encoder–decoder's encoder (``tfx.nn.constants.DEEPNORM_CONVENTIONS``);
:func:`convention_effect` retrains recorded runs with the other one and pairs them by seed."""
from __future__ import annotations


def convention_effect(records, label: str, task, convention: str = "torchscale"):
    """Retrain the DeepNorm runs labelled ``label`` (same configs and seeds) with the encoder
    κ_e of ``convention`` (:func:`tfx.theory.scaling.use_deepnorm_convention_`); returns the
    paired effect on the final held-out loss (``convention`` − paper) and the new runs'
    outcomes."""
    from types import SimpleNamespace

    from ..theory import scaling
    from . import effects, outcome
    from .sweep import build_for_run, by_label
    from .train import train

    paper = by_label(records)[label]
    new = {}
    for r in paper:
        tc = r.train_config
        model = build_for_run(r.config, task, tc, None)
        scaling.use_deepnorm_convention_(model, convention)
        new[r.seed] = SimpleNamespace(history=train(model, task, tc))
    e = effects.paired({s: effects.end_loss(run) for s, run in new.items()},
                       {r.seed: effects.end_loss(r) for r in paper}, "lower",
                       f"DeepNorm, {convention}", label)
    return e, [outcome.judge(run).verdict for run in new.values()]
