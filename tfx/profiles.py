"""Profiles: how big the book's experiments are, chosen once for the whole book.

  quick  CI and nbval: every notebook ≤ 90 s on 2 CPU cores
  book   the default on a CPU; what the built HTML shows (whole book ≤ 30 min on 2 cores)
  full   the default when CUDA is present (Colab, a workstation): paper-like sizes, real data

``TFX_PROFILE=quick|book|full`` overrides the choice. Sizes follow ../shared/pilot.md.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import torch

PROFILE_NAMES = ("quick", "book", "full")


@dataclass(frozen=True)
class Profile:
    name: str
    d_model: int  # width of the models in init-time experiments
    n_heads: int
    d_ffn: int
    depths: tuple  # numbers of layers N swept by the depth experiments
    deep: int  # a depth at which Post-LN without warmup fails to train
    seeds: int  # independent repetitions of each measurement
    batch_size: int
    seq_len: int  # length of the synthetic sequences
    train_d_model: int  # width of the models that are trained
    train_steps: int
    train_lr: float
    task: str  # what the training experiments learn: a synthetic task or a corpus
    device: str = "cpu"

    def model_kwargs(self, train: bool = False) -> dict:
        """ModelConfig sizes for this profile (``train=True``: the trained models' width)."""
        d = self.train_d_model if train else self.d_model
        return {"d_model": d, "n_heads": self.n_heads, "d_ffn": 4 * d}

    def load_task(self, seed: int = 0):
        """The task this profile trains on (``tfx.data.load_task(self.task)``)."""
        from .data import load_task

        return load_task(self.task, seed=seed, length=self.seq_len)

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"profile: {self.name} · device: {self.device}"


_PROFILES = {
    "quick": dict(d_model=64, n_heads=4, d_ffn=256, depths=(2, 4, 6, 8), deep=6, seeds=1, batch_size=16,
                  seq_len=12, train_d_model=64, train_steps=150, train_lr=3e-3, task="reverse"),
    "book": dict(d_model=128, n_heads=4, d_ffn=512, depths=(2, 6, 12, 18, 24), deep=12, seeds=3, batch_size=32,
                 seq_len=12, train_d_model=64, train_steps=600, train_lr=1e-3, task="reverse"),
    "full": dict(d_model=512, n_heads=8, d_ffn=2048, depths=(6, 12, 18, 24), deep=18, seeds=3, batch_size=64,
                 seq_len=16, train_d_model=512, train_steps=10000, train_lr=5e-4, task="iwslt14"),
}


def get_profile(name: str | None = None) -> Profile:
    """The profile called ``name``, else ``$TFX_PROFILE``, else 'full' with CUDA and 'book' without."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    source = "name"
    if name is None:
        name, source = os.environ.get("TFX_PROFILE") or ("full" if device == "cuda" else "book"), "TFX_PROFILE"
    if name not in PROFILE_NAMES:
        raise ValueError(f"{source}={name!r} is not a profile; choose one of: {', '.join(PROFILE_NAMES)}")
    return Profile(name=name, device=device, **_PROFILES[name])
