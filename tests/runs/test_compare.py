"""tfx.runs.compare: seeds as matched pairs, and whether a setting needs warmup."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from tfx.runs import compare


def _rec(seed, loss, diverged=False, **point):
    h = SimpleNamespace(chance_loss=6.0, floor_loss=0.0, eval_loss=[6.0, math.nan if loss is None else loss], bleu=[],
                        status="diverged" if diverged else "finished", reason="", diverged_step=5,
                        steps_done=10)
    return SimpleNamespace(seed=seed, point=point, history=h)


def _grid(without, with_):
    return ([_rec(s, v, diverged=v is None, warmup="none", lr="1e-2") for s, v in enumerate(without)]
            + [_rec(s, v, warmup="warmup", lr="1e-2") for s, v in enumerate(with_)])


def test_paired_is_seed_by_seed_and_signed():
    recs = _grid([5.0, 4.0, 3.0], [4.5, 4.2, 2.0])
    d = compare.paired(recs, "warmup", "none", "warmup", lr="1e-2")
    assert d == pytest.approx({0: 0.5, 1: -0.2, 2: 1.0})
    with pytest.raises(ValueError, match="axis='warmup' is also fixed"):
        compare.paired(recs, "warmup", "none", "warmup", warmup="none")
    with pytest.raises(ValueError, match="no records with warmup='long'"):
        compare.paired(recs, "warmup", "none", "long", lr="1e-2")


def test_warmup_need_verdicts_can_go_either_way():
    # learned: held-out loss ≤ 4.5 (a quarter of the way from chance 6 to 0)
    need = compare.warmup_need(_grid([6.0, 5.9, 6.1], [4.0, 4.1, 4.2]), lr="1e-2")
    assert need["worse_without"] and need["fails_without"]
    assert (need["learned_without"], need["learned_with"], need["n"]) == (0, 3, 3)
    # one seed ends lower without warmup: not worse in every seed
    mixed = compare.warmup_need(_grid([4.0, 4.3, 3.9], [4.1, 4.2, 4.0]), lr="1e-2")
    assert not mixed["worse_without"] and not mixed["fails_without"] and mixed["learned_without"] == 3
    # worse in every seed, but it still learned: ends worse, does not fail
    worse = compare.warmup_need(_grid([4.2, 4.3, 4.4], [4.0, 4.1, 4.2]), lr="1e-2")
    assert worse["worse_without"] and not worse["fails_without"]


def test_a_diverged_run_counts_against_its_setting():
    need = compare.warmup_need(_grid([None, 5.9, 6.1], [4.0, 4.1, 4.2]), lr="1e-2")
    assert need["gain"][0] == math.inf and need["worse_without"]
    assert math.isnan(compare.per_seed(_grid([None], [4.0]), warmup="none")[0])
