"""One test per claim id of ../shared/claims.md: measurement against prediction,
within a stated tolerance. Select one with e.g. ``pytest -k LN_1``.

These run in the quick profile's sizes; the chapters show the same measurements
at book scale."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfx
from tfx import probes, theory


# ============================================================== LN-1 … LN-5


# ============================================================== GV-1 … GV-3, AM-1, AM-2, AD-1, AD-2
