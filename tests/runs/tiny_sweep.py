"""A tiny experiment and the helpers the sweep tests share (tests/runs/test_sweep_files.py,
test_ray_executor.py): three runs, with dropout so that an inexact resume would show."""
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TINY = """
description = "three tiny runs, with dropout so that an inexact resume would show"
seeds = [0]
checkpoint_every = 10
model = { d_model = 16, n_heads = 2, d_ffn = 32, n_enc = 1, n_dec = 1, dropout = 0.1 }
train = { steps = 200, batch_size = 4, eval_batches = 1 }
task = "reverse"

[grid.lr]
a = { train.lr = 1e-3 }
b = { train.lr = 2e-3 }
c = { train = { lr = 3e-3, warmup = 20 } }

[profiles.quick]
seeds = [0]
"""


def write_experiment(tmp_path, text=TINY, name="tiny"):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def comparable(rec):
    """A record without the fields that depend on when and how fast it ran."""
    d = rec.to_dict() if hasattr(rec, "to_dict") else dict(rec)
    for k in ("wall_time", "finished_at"):
        d.pop(k)
    d["history"] = {k: v for k, v in d["history"].items() if k != "wall_time"}
    return json.loads(json.dumps(d))  # NaN-safe comparison of lists goes through the same JSON


def sweep_env():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TFX_PROFILE", None)
    return env
