"""A theory claim's status from its checks (chapters 3–9, 18).

A theory claim is judged by criteria fixed before the measurement (written in the
:mod:`tfx.theory` function that applies them), one per part of the claim, each ``True`` (the
part reproduces), ``False`` (the prediction failed its own test) or a paired effect's verdict
word. The status follows the one rule of :func:`tfx.book.claims.status_of`: every part
reproduces → *reproduces*; some reproduce and some fail → *mixed*; and so on.

A *derivation check* (one that follows from the construction: an identity, a proof, a fold
that is exact algebra) is never a part of a claim's evidence. A claim that *is* such a check
(LN-2, LP-2, AD-2) gets the status *derivation verified* from :func:`glue_derivation`, which
refuses to call a failed identity anything: a failed derivation check is a bug in the book.

    status = checks.glue_checks("LN-4", {"Post-LN exponent 0 inside its interval": True,
                                         "Pre-LN exponent −1/2 inside its interval": False})
    checks.glue_derivation("AD-2", {"the folded model gives the same logits (≤ 1e-5)": True})
"""
from __future__ import annotations

from .claims import DERIVATION, glue_status, part_verdict, status_of_parts
from .notebook import glue


class DerivationFailed(AssertionError):
    """A check true by construction did not hold: the code, not the claim, is wrong."""


def status(parts: dict) -> str:
    """The status word for ``{part: True/False/verdict}`` (at least one part):
    :func:`tfx.book.claims.status_of_parts`."""
    return status_of_parts(parts.values())


def _answer(v) -> str:
    """'yes' / 'no' for a criterion (numpy's bools too), the verdict word for an effect."""
    return part_verdict(v) if isinstance(v, str) else ("yes" if v else "no")


def glue_checks(claim_id: str, parts: dict) -> str:
    """Glue ``status-<ID>`` (for the claims page) and ``parts-<ID>``, a line naming each part
    and whether it reproduces; returns the status."""
    word = status(parts)
    glue_status(claim_id, word)
    glue(f"parts-{claim_id}", "; ".join(f"{k}: {_answer(v)}" for k, v in parts.items()))
    return word


def glue_derivation(claim_id: str, checks: dict) -> str:
    """Glue ``status-<ID>`` = *derivation verified* and ``parts-<ID>`` for a claim whose checks
    all follow from the construction; raises :class:`DerivationFailed` naming any that failed."""
    if not checks:
        raise ValueError(f"{claim_id}: a derivation needs at least one check")
    failed = [k for k, ok in checks.items() if not ok]
    if failed:
        raise DerivationFailed(f"{claim_id}: derivation checks failed (a bug, not a finding): {'; '.join(failed)}")
    glue_status(claim_id, DERIVATION)
    glue(f"parts-{claim_id}", "derivation checks: " + "; ".join(f"{k}: yes" for k in checks))
    return DERIVATION
