"""The validity window of every command the D receives (D-CMD-2, D-NOTE-3): one rule.

A ``call.execute`` and a ``task.control`` are judged by the same function, at the moment
the D decides them:

* a command is **expired** from ``not_after`` on: ``now >= not_after`` (the boundary
  instant itself is already too late);
* a command whose ``issued_at`` lies more than the clock-skew allowance in the future
  (``issued_at > now + skew``; default 120 s, ``DISPATCHER_CLOCK_SKEW_S``) has an
  **invalid validity window**: it is rejected and never dialled.

The window check comes first: a command from "the future" is refused as such even if its
``not_after`` has passed as well.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

DEFAULT_CLOCK_SKEW_S = 120.0


class Validity(StrEnum):
    VALID = "valid"
    EXPIRED = "command_expired"
    INVALID_WINDOW = "invalid_validity_window"


def expired(not_after: datetime, now: datetime) -> bool:
    """``not_after`` is the first instant at which the command is no longer valid."""
    return now >= not_after


def validity(
    issued_at: datetime, not_after: datetime, now: datetime, skew_s: float = DEFAULT_CLOCK_SKEW_S
) -> Validity:
    """Whether a command may still be acted on at ``now`` (reason code = the value)."""
    if issued_at > now + timedelta(seconds=skew_s):
        return Validity.INVALID_WINDOW
    if expired(not_after, now):
        return Validity.EXPIRED
    return Validity.VALID
