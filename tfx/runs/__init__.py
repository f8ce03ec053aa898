"""The runs wing: training, and many runs. It uses the model wing (tfx.nn), and a
theory probe where a run records one; it never draws.

    train       the loop: divergence caught, metrics without host syncs, checkpoints, resume
    diagnose    where a diverged run blew up (replays the last steps)
    data        synthetic seq2seq tasks; load_task
    corpus      the shipped German→English corpora, IWSLT'14 (full profile), BPE, BLEU
    profiles    quick / book / full: the sizes every chapter reads
    experiment  an experiment file (experiments/NAME.toml), checked field by field
    sweep       many runs in process (run_grid) or from a file (python -m tfx.sweep)
    results     the records a sweep writes, one JSON line per finished run
    outcome     the one rule: a run learned, is still learning, did not learn, or diverged
    effects     paired effects over seeds with 95 % intervals; each scheme at its best rate
    sensitivity final loss against the learning rate: a recipe's LR sensitivity
    compare     two settings of a sweep, seed by seed (does a setting need warmup?)
    lm          the English text a decoder-only language model reads
    probes      what a run records about its logits and its stream; traces reads them back
    reference   torch.nn.Transformer with a tfx model's weights (the parity test's and the bench's)
    bench       a training step's throughput against torch.nn.Transformer (python -m tfx.bench)
"""
