"""Per-seed readings of recorded runs (tfx.runs.readings), on the book's recorded sweeps."""
import pytest

from tfx.runs import readings, results

LRS = ["1e-3", "3e-3", "1e-2", "3e-2", "1e-1", "3e-1"]


def test_best_and_high_rate_read_the_no_fix_curve(logits_records):
    best, high = readings.best_and_high_rate(logits_records, LRS)
    assert LRS.index(high) > LRS.index(best)


def test_entropy_collapse_groups_the_no_fix_runs_by_outcome(logits_records):
    """EC-1's groups are disjoint no-fix runs; the slow ones sit above the best rate."""
    best, _ = readings.best_and_high_rate(logits_records, LRS)
    ec = readings.entropy_collapse(logits_records, LRS, best)
    ids = [id(r) for g in ("failed", "learned", "slow") for r in ec[g]]
    assert len(ids) == len(set(ids)) and all(r.point["fix"] == "no fix" for r in ec["nofix"])
    assert all(LRS.index(r.point["lr"]) > LRS.index(best) for r in ec["slow"])
    if ec["rate_ratio"]:
        assert ec["rate_ratio"][0] <= ec["rate_ratio"][1]


def test_log_z_pull_pairs_every_seed_of_the_z_loss(logits_records):
    best, high = readings.best_and_high_rate(logits_records, LRS)
    z = readings.log_z_pull(logits_records, best, high)
    assert len(z["pulled"]) == len(results.select(logits_records, fix="z-loss"))
    assert set(z["log_z"]) == {"start (first probe)", *(f"{f}, lr {lr}" for lr in (best, high)
                                                        for f in ("no fix", "z-loss"))}


def test_stream_growth_is_the_top_over_the_bottom_and_the_largest_step():
    recs = results.load("lm", "book")
    if not recs:
        pytest.skip("no book records of experiments/lm.toml")
    growth, (jump, where) = readings.stream_growth(recs[0])
    assert growth > 0 and jump > 0 and isinstance(where, str)
