"""The small models the probe tests share (tests/test_{change,dependency,gradients,hidden}.py)."""
import tfx

TASK = tfx.synthetic("reverse", length=6)
BATCH = TASK.batch(0, 8)
SIZES = dict(d_model=32, n_heads=2, d_ffn=64)


def model(n_enc=2, n_dec=2, seed=0, **kw):
    """An encoder–decoder of SIZES on TASK; Admin profiles on BATCH."""
    cfg = tfx.ModelConfig.for_task(TASK, n_enc=n_enc, n_dec=n_dec, **{**SIZES, **kw})
    return tfx.build_model(cfg, batch=BATCH if kw.get("init") == "admin" else None, seed=seed)


def tiny(placement="post", N=3, **kw):
    """(an N-layer encoder of width 16, its 8-symbol reverse task, a batch of 4)."""
    task = tfx.synthetic("reverse", vocab=8, length=5)
    m = tfx.build_model(n_enc=N, n_dec=0, placement=placement, d_model=16, n_heads=2, d_ffn=32,
                        src_vocab=task.src_vocab, tgt_vocab=task.tgt_vocab, **kw)
    return m, task, task.batch(0, 4)
