"""python -m tfx.bench: the FLOPs it counts are the model's (counted here by hand), the
utilisation divides measured rates by a GEMM peak measured in the same rounds, and the
command prints what it promises. Tiny sizes: the numbers are the bench's business."""
import itertools
import math

import pytest
import torch

from tfx.runs import bench

TINY = dict(d_model=16, n_heads=2, layers=1, batch=4, length=8, vocab=50)


def hand_counted_step_flops(d, ffn, vocab, batch, src_len, tgt_len):
    """FLOPs of one forward and backward of a 1+1 encoder–decoder, counted from its shapes.
    A matrix product (m × k)(k × n) costs 2mkn; its backward two more of the same size (the
    gradients of input and weight). Attention over Lq queries and Lk keys costs 2·(2·B·Lq·Lk·d)
    forward (QKᵀ, PV) and 2.5 times that backward (flash attention recomputes QKᵀ)."""
    enc, dec = batch * src_len, batch * tgt_len  # token positions in each stack
    linear = (2 * enc * (4 * d * d + 2 * d * ffn)  # encoder: q, k, v, out; fc1, fc2
              + 2 * dec * (4 * d * d + 2 * d * ffn)  # decoder: self-attention, FFN
              + 2 * dec * 2 * d * d + 2 * enc * 2 * d * d  # cross-attention: q, out on the decoder; k, v on memory
              + 2 * dec * d * vocab)  # output projection
    attention = sum(4 * batch * lq * lk * d for lq, lk in ((src_len, src_len), (tgt_len, tgt_len), (tgt_len, src_len)))
    return 3 * linear + 3.5 * attention


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_step_flops_are_the_hand_count(placement):
    cfg, (b,) = bench.custom_setup(placement, **TINY)
    model = bench.build_model(cfg)
    want = hand_counted_step_flops(16, 64, 50, batch=4, src_len=8, tgt_len=8)
    assert bench.step_flops(lambda: bench._loss(model.loss_and_accuracy)(b)) == want
    ref = bench.TorchReference.from_tfx(model)  # torch's layers do the same products
    assert bench.step_flops(lambda: ref.loss(b.src, b.tgt, b.src_padded, b.tgt_padded)) == want


def test_utilisation_divides_measured_rates(monkeypatch):
    """With a clock that advances ``dt`` per reading, every timed interval is ``dt``: the GEMM
    rates are their FLOPs / dt, and the utilisation is the step's FLOPs over the larger GEMM's.
    A peak typed in would not follow dt."""
    monkeypatch.setattr(bench, "SQUARE", 64)
    results = {}
    for dt in (1e-3, 2e-3):
        ticks = itertools.count()
        monkeypatch.setattr(bench, "_clock", lambda: next(ticks) * dt)
        results[dt] = r = bench.bench("pre", rounds=2, warmup=1, compile=False, **TINY)
        tokens_per_stack = 4 * 8
        assert r["gemm_square"] == pytest.approx(2 * 64**3 / dt)
        assert r["gemm_model"] == pytest.approx(2 * tokens_per_stack * 16 * 64 / dt)
        assert r["peak"] == max(r["gemm_square"], r["gemm_model"])
        for k in ("tfx", "torch"):
            assert r[f"{k}_ms"] == pytest.approx(1e3 * dt)
            assert r[f"{k}_util"] == pytest.approx(r[f"{k}_flops"] / (2 * 64**3))
    assert results[2e-3]["peak"] == pytest.approx(results[1e-3]["peak"] / 2)


def test_bench_on_this_cpu():
    r = bench.bench("post", rounds=2, warmup=1, compile=False, **TINY)
    assert r["device"] == "cpu" and r["tokens_per_step"] == 2 * 4 * 8 and r["threads"] == torch.get_num_threads()
    assert r["peak"] == max(r["gemm_square"], r["gemm_model"]) > 1e9  # any CPU multiplies faster than 1 GFLOP/s
    for k in ("tfx", "torch"):
        assert r[f"{k}_ms"] > 0 and r[f"{k}_flops"] == r["tfx_flops"]
        assert 0 < r[f"{k}_util"] < 1  # a tiny model's step is far from a 1024² GEMM's rate
    assert "tfx_compiled_ms" not in r


def test_train_overhead_against_a_bare_loop():
    o = bench.train_overhead("pre", steps=8, warmup=1, log_every=2, **TINY)
    assert o["train_ms"] > 0 and o["bare_ms"] > 0 and math.isfinite(o["ratio"])


@pytest.mark.parametrize("cpu_time", [False, True])
def test_profile_lists_the_matrix_products(cpu_time):
    table = bench.profile("pre", "custom", steps=2, warmup=1, cpu_time=cpu_time, **TINY)
    assert ("aten.mm" if cpu_time else "aten::mm") in table


def test_main_prints_a_table(capsys):
    threads = torch.get_num_threads()
    try:
        bench.main(["--size", "custom", "--d-model", "16", "--heads", "2", "--layers", "1", "--batch", "4",
                    "--length", "8", "--vocab", "50", "--rounds", "2", "--placements", "post", "--no-compile",
                    "--train-steps", "0", "--threads", "1"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "1 thread" in out and "fp32 GEMM: 1024²" in out and "util" in out and "tfx/torch speed ratio" in out
