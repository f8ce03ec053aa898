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


def test_pull_to_zero_pairs_runs_by_seed_and_learning_rate():
    from types import SimpleNamespace as NS

    from tfx.runs import traces as pr
    from tfx.runs.train import History

    def rec(seed, lr, log_z):
        return NS(seed=seed, train_config=NS(lr=lr), history=History(step=[1, 2], log_z=[7.0, log_z]))

    unfixed = [rec(0, 1e-2, 8.0), rec(1, 1e-2, -4.0), rec(0, 1e-1, 2.0)]
    fixed = [rec(0, 1e-2, 2.0), rec(1, 1e-2, -4.0), rec(0, 1e-1, 3.0), rec(5, 1e-2, 0.0)]
    assert pr.pull_to_zero(fixed, unfixed) == [0.75, 0.0, -0.5]  # the unpaired seed 5 is left out
    assert 0 < pr.HELD_SHARE < 1


def test_stream_profile_drops_the_stack_outputs_and_reads_the_chosen_step():
    from tfx.runs import traces as pr
    from tfx.runs.train import History

    h = History(stream_names=["decoder.layers.0.self_attn", "decoder.layers.0.ffn", "decoder.output"],
                stream_var=[[1.0, 2.0, 9.0], [1.5, 4.0, 7.0]])
    assert pr.stream_profile(h) == (["decoder.layers.0.self_attn", "decoder.layers.0.ffn"], [1.5, 4.0])
    assert pr.stream_profile(h, 0)[1] == [1.0, 2.0]
