"""Retrain one recorded run from its record alone, as the code importable here trains it.

    python -m tfx.runs.retrain RECORD.json OUT.json     # OUT: the History as a dict

Reads only what every record since the first sweeps holds (label, config, train_config,
seed, task, profile) and calls only what every tfx since then has (``ModelConfig``,
``TrainConfig``, ``tfx.runs.profiles.load_task_or_fallback``, ``tfx.runs.sweep.run_one``),
so :mod:`tfx.runs.carry` can run it under an older copy of tfx (``PYTHONPATH``) to tell a
change of code from a change of machine. One torch thread, as a sweep trains.
"""
import json
import sys


def retrain(d: dict) -> dict:
    import torch

    from tfx.nn.config import ModelConfig, TrainConfig
    from tfx.runs import profiles, sweep

    torch.set_num_threads(1)
    known = lambda cls, x: {k: v for k, v in x.items() if k in cls.__dataclass_fields__}  # noqa: E731
    seq_len = profiles.get_profile(d["profile"], check_task=False).seq_len
    task = profiles.load_task_or_fallback(d["task"], length=seq_len)
    tc = TrainConfig(**{**known(TrainConfig, d["train_config"]), "betas": tuple(d["train_config"]["betas"])})
    rec = sweep.run_one(d["label"], ModelConfig(**known(ModelConfig, d["config"])), task, tc, d["seed"])
    return rec.history.to_dict()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        record = json.load(f)
    with open(sys.argv[2], "w") as f:
        json.dump(retrain(record), f)
