"""The Dispatcher's one reconnect policy: how long every loop of the D waits after a failure
before it tries again. Pure.

Every retry loop of the D uses it — the AMQP link (a lost or refused broker connection), the
control-queue consumer, the outbox relay after a publish that was not confirmed, the control
lanes, the discovery rounds, the SaaS reads held by an outage (D-NOTE-2) and the cell's event
stream (the cell client takes it as its ``reconnect`` policy). A loop counts its failures in
a row, asks :meth:`ReconnectPolicy.delay` for the wait before the next try, and counts from
zero again after one success (a link that came up and is lost later waits the shortest delay)::

    failures  1     2      3      4  ...  n
    ceiling   base  2base  4base  ...     min(cap, base * 2**(n-1))
    delay     between half and all of the ceiling ("equal jitter")

The jitter is a random number in [0, 1) passed in, so D processes (or loops) that failed
together do not retry together, and the policy stays testable by a table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReconnectPolicy:
    """Capped exponential backoff with equal jitter; ``base_s`` and ``cap_s`` above 0."""

    base_s: float
    cap_s: float

    def __post_init__(self) -> None:
        if not (self.base_s > 0 and self.cap_s > 0):
            raise ValueError("a reconnect policy needs a positive base_s and cap_s")

    def delay(self, failures: int, jitter: float) -> float:
        """Seconds to wait after ``failures`` failures in a row (1: the first failure)."""
        if failures < 1:
            raise ValueError("failures counts from 1")
        ceiling = min(self.cap_s, self.base_s * float(2 ** min(failures - 1, 62)))
        return ceiling / 2 + ceiling / 2 * min(max(jitter, 0.0), 1.0)


AMQP_LINK = ReconnectPolicy(base_s=0.2, cap_s=5.0)
"""The broker connection and the control-queue consumer: a broker back after a restart is
found within 5 s; a broker that stays down is tried every 2.5-5 s."""

CELL_EVENTS = ReconnectPolicy(base_s=0.1, cap_s=5.0)
"""The cell's event stream: a cell back after a restart is read again within 5 s."""
