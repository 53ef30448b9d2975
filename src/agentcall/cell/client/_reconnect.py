"""The cell client's reconnect policy: how long the event stream waits after a lost or refused
connection before it tries again. Pure.

Capped exponential backoff with equal jitter by the failures in a row, counted from zero
again once a connection said hello (one success resets it)::

    failures  1     2      3      ...  n
    delay     between half and all of min(cap, base * 2**(n-1))

Any object with the same ``delay(failures, jitter)`` method may replace it (a service that
embeds the client passes its own policy, so all of its loops back off alike).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Backoff(Protocol):
    def delay(self, failures: int, jitter: float) -> float: ...


@dataclass(frozen=True)
class ReconnectPolicy:
    """``base_s`` and ``cap_s`` above 0; ``jitter`` a random number in [0, 1)."""

    base_s: float = 0.1
    cap_s: float = 5.0

    def __post_init__(self) -> None:
        if not (self.base_s > 0 and self.cap_s > 0):
            raise ValueError("a reconnect policy needs a positive base_s and cap_s")

    def delay(self, failures: int, jitter: float) -> float:
        """Seconds to wait after ``failures`` failures in a row (1: the first one)."""
        if failures < 1:
            raise ValueError("failures counts from 1")
        ceiling = min(self.cap_s, self.base_s * float(2 ** min(failures - 1, 62)))
        return ceiling / 2 + ceiling / 2 * min(max(jitter, 0.0), 1.0)


STREAM = ReconnectPolicy()
