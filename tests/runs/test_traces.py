"""tfx.runs.traces: a run's probes read back as curves, and when two groups of runs part."""
import pytest


def test_trace_reduces_over_modules_and_separation_step_compares_runs():
    from tfx.runs import traces as pr
    from tfx.runs.train import History

    def run(entropy_rows, steps=(10, 20, 30)):
        return History(probe_step=list(steps), attn_entropy=entropy_rows,
                       attn_logit_max=[[1.0, 3.0]] * len(steps))

    low = run([[[1.0, 2.0]], [[0.1, 2.0]], [[0.01, 2.0]]])
    high = [run([[[0.9, 2.0]], [[0.8, 1.0]], [[0.7, 1.0]]]), run([[[1.5, 2.0]], [[0.9, 1.0]], [[0.5, 1.0]]])]
    assert pr.trace(low, "attn_entropy_min") == ([10, 20, 30], [1.0, 0.1, 0.01])
    assert pr.trace(low, "attn_logit_max")[1] == [3.0, 3.0, 3.0]
    assert pr.separation_step([low], high, "attn_entropy_min") == 20  # at 10, 1.0 is not below 0.9
    assert pr.separation_step(high, [low], "attn_entropy_min") is None
    assert pr.separation_step([], high, "attn_entropy_min") is None
    assert pr.trace(History(), "attn_logit_max") == ([], [])
    with pytest.raises(ValueError, match="name"):
        pr.trace(low, "logits")
