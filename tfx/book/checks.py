"""A theory claim's status from its checks (chapters 3–7).

A theory claim is judged by criteria fixed before the measurement (written in the
:mod:`tfx.theory` function that applies them), one per part of the claim, each ``True``
(the part reproduces) or ``False``. The status is the claims page's vocabulary
(:data:`tfx.book.claims.STATUSES`): every part reproduces → *reproduces*; some do →
*reproduces in part*; none → *does not reproduce*. A *derivation check* (one that follows
from the construction) is never a part: it is shown, named as such, and left out here.

    status = checks.glue_checks("LN-4", {"Post-LN exponent 0 inside its interval": True,
                                         "Pre-LN exponent −1/2 inside its interval": False})
"""
from __future__ import annotations

from .claims import glue_status, status_of_parts
from .notebook import glue


def status(parts: dict) -> str:
    """The status word for ``{part: reproduces?}`` (at least one part):
    :func:`tfx.book.claims.status_of_parts`."""
    return status_of_parts(parts.values())


def glue_checks(claim_id: str, parts: dict) -> str:
    """Glue ``status-<ID>`` (for the claims page) and ``parts-<ID>``, a line naming each part
    and whether it reproduces; returns the status."""
    word = status(parts)
    glue_status(claim_id, word)
    glue(f"parts-{claim_id}", "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in parts.items()))
    return word
