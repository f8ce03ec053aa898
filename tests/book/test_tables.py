"""tfx.book.tables: the tables every part shares, one renderer for each."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tfx.book import tables
from tfx.runs.effects import paired

UP = paired({0: 1.0, 1: 2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # reproduces
MIXED = paired({0: 1.0, 1: -2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # unresolved
DOWN = paired({0: -1.0, 1: -2.0, 2: -1.5}, {0: 0.0, 1: 0.0, 2: 0.0}, "higher")  # reversed


def _rec(seed, loss, **point):  # the records the training chapters' tests use
    from test_training_pages import _rec as rec
    return rec(seed, loss, **point)


def test_a_pipe_inside_a_table_cell_is_escaped():
    assert tables.cell("median |g|") == "median \\|g\\|"
    assert tables.cell("two\nlines") == "two lines"


def test_signed_keeps_two_significant_digits_where_two_decimals_would_print_zero():
    assert tables.Signed.format(1.234) == "+1.23" and tables.Signed.format(-0.0012) == "-0.0012"
    assert tables.Signed.format(0.0) == "+0.00"


def test_effects_table_has_one_row_per_effect_with_its_verdict_and_escaped_label():
    table = tables.effects_table([("a |g| b", UP), ("c", MIXED), ("d", DOWN)], head="what")
    lines = table.splitlines()
    assert lines[0] == ("| what | mean difference | 95 % interval | seeds on the predicted side | verdict |")
    assert len(lines) == 2 + 3
    assert "a \\|g\\| b" in lines[2] and lines[2].endswith("| reproduces |")
    assert lines[3].endswith("| not resolved at this scale |") and lines[4].endswith("| reversed |")
    assert "+1.50 nats" in lines[2] and "3 of 3 (higher)" in lines[2]
    assert "{:+.1f}".format(UP.mean) in tables.effects_table([("a", UP)], fmt="{:+.1f}")
    one_seed = paired({0: 1.0}, {0: 0.0}, "higher")
    assert "| — (one seed) |" in tables.effects_table([("x", one_seed)])
    with pytest.raises(ValueError, match="items"):
        tables.effects_table([])


def test_a_registered_comparison_is_shown_by_what_it_says():
    """The claim chapters pass (Comparison, Effect) pairs; the row reads the comparison's words."""
    row = tables.effects_table([(SimpleNamespace(says="Post-LN ends higher"), UP)]).splitlines()[2]
    assert row.startswith("| Post-LN ends higher | +1.50 nats |") and "namespace" not in row
    flat = paired({0: 0.01, 1: -0.02}, {0: 0.0, 1: 0.0}, "equal", margin=0.25, unit="")
    row = tables.effects_table([("flat", flat)]).splitlines()[2]
    assert "within ±0.25" in row and "nats" not in row


def test_outcome_counts_and_table_read_tfx_runs_outcome():
    recs = [_rec(0, 0.5, arch="A", depth="2"), _rec(1, 5.9, arch="A", depth="2"),
            _rec(0, 0.4, arch="B", depth="2"), _rec(1, 0.3, arch="B", depth="2")]
    assert tables.outcome_counts(recs[:2]) == "learned 1, did not learn 1 of 2"
    table = tables.outcome_table(recs, rows="arch", cols="depth", col_names={"2": "two layers"})
    assert table.splitlines()[0] == "| arch | two layers |"
    assert "| B | learned 2 of 2 |" in table


def test_seed_table_has_a_column_per_seed_and_marks_a_missing_one():
    table = tables.seed_table({"Pre-LN": {0: 58.0, 1: 59.2}, "Post-LN": [1.4]}, "ratio", "{:.1f}")
    lines = table.splitlines()
    assert lines[0] == "| ratio | seed 0 | seed 1 |"
    assert lines[2] == "| Pre-LN | 58.0 | 59.2 |" and lines[3] == "| Post-LN | 1.4 | – |"


def test_seed_table_formats_each_row_its_own_way():
    """A count and a ratio in one table: each row its own format, a row not named "{:.2f}"."""
    table = tables.seed_table({"spikes": {0: 17, 1: 0}, "ratio": {0: 0.994}, "other": {1: 2.0}},
                              "seed's", {"spikes": "{:d}", "ratio": "{:.3f}"})
    lines = table.splitlines()
    assert lines[2:] == ["| spikes | 17 | 0 |", "| ratio | 0.994 | – |", "| other | – | 2.00 |"]


def test_the_sensitivity_table_renders_exactly():
    """Loss = floor + |log10 lr − log10 best| on three rates (+0.01 for seed 1): A's excess over
    its best is 1, 0, 1 (mean 0.67), B's 2, 1, 0 (mean 1.00); the best losses 2.00, 2.01, 2.00 and
    1.00, 1.01, 1.00 have medians 2.00 and 1.00; every seed learns at all three rates."""
    from test_training_pages import _gpu_grid

    recs = _gpu_grid({"A": 1e-3, "B": 1e-2}, {"A": 2.0, "B": 1.0}, seeds=3)
    assert tables.sensitivity_table(recs, "arch", ["A", "B"], depth="6") == (
        "| arch | LR sensitivity (nats), median (range) | best held-out loss (nats), median "
        "| learning rates learned at, per seed |\n|---|---|---|---|\n"
        "| A | 0.67 (0.67–0.67) | 2.00 | 3, 3, 3 |\n| B | 1.00 (1.00–1.00) | 1.00 | 3, 3, 3 |")


def test_gpu_records_shows_records_or_one_sentence():
    assert tables.gpu_records({"depth": []}, {"depth": ("arch", "depth")}) == (
        "GPU results for depth are not in yet; the box at the end of the page says how to "
        "run them.")
    recs = [_rec(s, 0.5, arch="A", depth="2", **{"train.warmup": w}) for s in (0, 1) for w in ("none", "w")]
    for r in recs:
        r.device, r.code_version, r.finished_at, r.carried_from = "cuda", "abc", "2026-11-27", []
        r.fixture = True
    text = tables.gpu_records({"depth": recs, "lm": []},
                              {"depth": ("arch", "depth"), "lm": ("arch", "depth")})
    assert "**depth**: 4 runs · FIXTURES" in text and "device cuda" in text
    assert "warmup **none**" in text and "warmup **w**" in text  # one table per warmup
    assert "train." not in text  # a config path is headed by its last part
    assert text.endswith("GPU results for lm are not in yet; the box at the end of the page "
                         "says how to run them.")


def test_rate_name_writes_a_rate_as_the_experiment_files_do():
    from tfx.book.tables import rate_name

    assert [rate_name(x) for x in (3e-3, 1e-1, 1e-4, 3e-5, 1.0, 10.0)] == [
        "3e-3", "1e-1", "1e-4", "3e-5", "1e+0", "1e+1"]


def test_effect_text_gives_the_mean_and_interval_without_a_verdict():
    e = paired({s: d for s, d in enumerate([-1.0, -1.2, -0.9, -1.1, -1.0])}, dict.fromkeys(range(5), 0.0),
               "lower", "a", "b", unit="nats")
    text = tables.effect_text(e)
    assert text.startswith(f"{e.mean:+.2f} nats (95 % interval {e.low:+.2f} to {e.high:+.2f})")
    assert e.verdict not in text
    assert "one seed" in tables.effect_text(paired({0: -1.0}, {0: 0.0}, "lower", "a", "b", unit="nats"))


def test_label_table_has_a_row_per_label_or_is_none():
    assert tables.label_table([]) is None
    run = lambda label, status, losses, bleu: SimpleNamespace(  # noqa: E731
        label=label, status=status, history=SimpleNamespace(eval_loss=losses), bleu=bleu)
    table = tables.label_table([run("a", "learned", [2.0, 1.5], 30.04), run("b", "diverged", [], None),
                                run("a", "did not learn", [3.0], None)])
    assert "| a | learned, did not learn | 1.500, 3.000 | 30.0 |" in table
    assert "| b | diverged | nan | — |" in table
