"""Profiles: how big the book's experiments are, chosen once for the whole book.

  quick  CI and nbval: every notebook ≤ 90 s on 2 CPU cores
  book   the default on a CPU; what the built HTML shows (the whole book executes in well over an
         hour on 2 cores; the sweeps it reads are recorded, not rerun)
  full   the default when CUDA is present (Colab, a workstation): paper-like sizes, real data

``TFX_PROFILE=quick|book|full`` overrides the choice.

The ``full`` profile trains on IWSLT'14 De-En from the Hugging Face hub. Where that
cannot be loaded (no network, no ``tfx-book[full]`` extras) it says so in a warning and
falls back to the larger shipped LibreOffice corpus; the profile line every notebook prints
(``str(P)``) names the task actually used, so a figure never hides the switch.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from dataclasses import asdict, dataclass

from ..nn.optim import pick_device

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
    task_note: str = ""  # why the task is not the profile's usual one ('' when it is)

    def model_kwargs(self, train: bool = False) -> dict:
        """ModelConfig sizes for this profile (``train=True``: the trained models' width)."""
        d = self.train_d_model if train else self.d_model
        return {"d_model": d, "n_heads": self.n_heads, "d_ffn": 4 * d}

    def load_task(self, seed: int = 0):
        """The task this profile trains on (``tfx.runs.data.load_task(self.task)``); see
        :func:`load_task_or_fallback` for IWSLT'14."""
        return load_task_or_fallback(self.task, seed=seed, length=self.seq_len)

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        note = " (IWSLT'14 unavailable)" if self.task_note else ""
        return f"profile: {self.name} · device: {self.device} · task: {self.task}{note}"


_PROFILES = {
    "quick": dict(d_model=64, n_heads=4, d_ffn=256, depths=(2, 4, 6, 8), deep=6, seeds=1, batch_size=16,
                  seq_len=12, train_d_model=64, train_steps=150, train_lr=3e-3, task="reverse"),
    "book": dict(d_model=128, n_heads=4, d_ffn=512, depths=(2, 6, 12, 18, 24), deep=12, seeds=3, batch_size=32,
                 seq_len=12, train_d_model=64, train_steps=600, train_lr=1e-3, task="reverse"),
    "full": dict(d_model=512, n_heads=8, d_ffn=2048, depths=(6, 12, 18, 24), deep=18, seeds=3, batch_size=64,
                 seq_len=16, train_d_model=512, train_steps=10000, train_lr=5e-4, task="iwslt14"),
}


FALLBACK_TASK = "libreoffice-de-en-large"  # shipped with tfx (26k pairs): always there


@functools.lru_cache(maxsize=None)
def resolve_task(name: str) -> tuple[str, str]:
    """``(task to use, note)``: ``name`` itself with an empty note, or, for ``iwslt14``
    when it cannot be loaded, the shipped corpus and a sentence saying why (warned once)."""
    if name != "iwslt14":
        return name, ""
    from .corpus import iwslt14_unavailable

    why = iwslt14_unavailable()
    if why is None:
        return name, ""
    note = (f"IWSLT'14 cannot be loaded ({why}); training on the shipped LibreOffice corpus "
            f"'{FALLBACK_TASK}' instead, a smaller task than the papers' (technical help text).")
    warnings.warn(note, stacklevel=3)
    return FALLBACK_TASK, note


def _load_task(name: str, seed: int = 0, length: int = 12):
    """``tfx.runs.data.load_task`` (looked up at each call)."""
    from . import data

    return data.load_task(name, seed=seed, length=length)


def load_task_or_fallback(name: str, seed: int = 0, length: int = 12):
    """The task called ``name`` (``tfx.runs.data.load_task``: a name of ``tfx.runs.data.TASKS``); for
    ``iwslt14`` the shipped corpus when IWSLT'14 cannot be loaded (checked by
    :func:`resolve_task`, or failing now), with a warning that says so."""
    used, _ = resolve_task(name)
    if used != name:
        return _load_task(used, seed=seed, length=length)
    try:
        return _load_task(name, seed=seed, length=length)
    except Exception as e:  # reachable a moment ago, failing now: say so, never crash
        if name != "iwslt14":
            raise
        warnings.warn(f"loading IWSLT'14 failed ({type(e).__name__}: {e}); training on the shipped "
                      f"LibreOffice corpus '{FALLBACK_TASK}' instead.", stacklevel=2)
        return _load_task(FALLBACK_TASK, seed=seed, length=length)


def get_profile(name: str | None = None, check_task: bool = True) -> Profile:
    """The profile called ``name``, else ``$TFX_PROFILE``, else 'full' with CUDA and 'book' without.

    ``check_task``: check that the profile's task can be loaded (IWSLT'14 for ``full``)
    and otherwise use the shipped corpus, with a warning and ``task_note`` saying so."""
    device = str(pick_device())
    source = "name"
    if name is None:
        name, source = os.environ.get("TFX_PROFILE") or ("full" if device == "cuda" else "book"), "TFX_PROFILE"
    if name not in PROFILE_NAMES:
        raise ValueError(f"{source}={name!r} is not a profile; choose one of: {', '.join(PROFILE_NAMES)}")
    P = Profile(name=name, device=device, **_PROFILES[name])
    if check_task:
        task, note = resolve_task(P.task)
        P = dataclasses.replace(P, task=task, task_note=note)
    return P

