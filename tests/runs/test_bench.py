"""python -m tfx.bench runs on a CPU and reports what it promises (tiny sizes: the numbers are the
bench's business, this checks the plumbing)."""
import math

from tfx.runs import bench

TINY = dict(d_model=16, n_heads=2, layers=1, batch=4, length=8, vocab=50)


def test_bench_reports_every_variant():
    r = bench.bench("pre", rounds=2, warmup=1, compile=False, **TINY)
    assert r["tokens_per_step"] == 2 * 4 * 8 and r["device"] == "cpu" and math.isnan(r["peak_flops"])
    for k in ("tfx", "torch"):
        assert r[f"{k}_ms"] > 0 and r[f"{k}_tok_s"] > 0 and r[f"{k}_tflops"] > 0
    assert r["ratio"] == r["torch_ms"] / r["tfx_ms"] and "tfx_compiled_ms" not in r


def test_train_overhead_against_a_bare_loop():
    o = bench.train_overhead("pre", steps=8, warmup=1, log_every=2, **TINY)
    assert o["train_ms"] > 0 and o["bare_ms"] > 0 and o["ratio"] == o["bare_ms"] / o["train_ms"]


def test_main_prints_a_table(capsys):
    bench.main(["--d-model", "16", "--heads", "2", "--layers", "1", "--batch", "4", "--length", "8",
                "--vocab", "50", "--rounds", "2", "--placements", "post", "--no-compile", "--train-steps", "0"])
    out = capsys.readouterr().out
    assert "tfx/torch speed ratio" in out and "dense bf16 peak unknown" in out
