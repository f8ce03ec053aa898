"""The model wing: what is trained. It imports no other wing of tfx.

    config     ModelConfig and TrainConfig: validated dataclasses (a bad field is named), and the
               registries: placements, initialisers (INITS), named schemes (SCHEMES), precisions
    batch      the padded Batch every model eats, and the special token ids
    blocks     where the norm sits: Post-LN, Pre-LN, Admin, ReZero, DeepNorm, none, Peri-LN,
               output-norm, Sub-LN; LayerNorm, RMSNorm, DyT; QK-norm and soft-capping
    model      the encoder, decoder and encoder–decoder Transformer; build_model, build_scheme
    init       one function per initialiser, its formula and paper in the docstring
    constants  the numbers each fix chooses from the depth (Admin's ω, T-Fixup, Lipschitz, DeepNorm, Sub-LN)
    hooks      seeing inside one forward pass (Admin's profiling, every probe, the diagnosis)
    optim      Adam, AdamW, SGD, RAdam and the warmup schedule, from a TrainConfig; Composite, one
               optimiser per kind of parameter (TrainConfig.optimizer_by_kind)
"""
