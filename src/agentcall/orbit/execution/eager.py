"""Eager dispatch (worker-protocol.md §5 "Eager dispatch"): a submitted task that a connection
of this process can take at once is leased in its own submit transaction, so that an idle
worker gets it without a lease round (notify, lease transaction, durable commit) in between.
Temporal's eager activity dispatch makes the same trade for the same reason.

Which connection, and whether at all, is `orbit.domain.dispatch.eager_seat` (an idle
connection with a free slot, queue and handler served, no older ready work pending in the
queue; one task per connection and transaction) plus the lease eligibility of
`orbit.domain.leasing` (ready now, within its deadlines, attempts left). The submit group
(`orbit.store.submit_group`) asks `claim(tasks, now)` inside its transaction, writes what the
claims add (the tasks as LEASED revision 2, their attempts, the LEASED events: the same rows
a lease round writes), and after the commit calls `deliver()`; if the transaction fails it
calls `release()`, which frees the reserved slots. A slot is reserved in this process at
claim time, so a dispatch round running meanwhile cannot hand it out twice.

The submit's receipt is still its acceptance snapshot (WAITING, revision 1: O-SUB-1); the task
itself is LEASED by the time the receipt is sent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.dispatch import Seat, eager_seat
from agentcall.orbit.domain.leasing import HandlerKey, LeaseCandidate, WorkerOffer, is_eligible
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.domain.task import Task
from agentcall.orbit.execution.acks import Grant
from agentcall.orbit.execution.hub import Hub, Link
from agentcall.orbit.execution.kernel import attempt_row, leased_event_row, new_grant
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import task_attempts, tasks
from agentcall.orbit.store.tasks import task_row


@dataclass(slots=True)
class Claims:
    """The tasks of one submit transaction leased eagerly, and their connections."""

    hub: Hub
    now: datetime
    on_delivered: Callable[[int], None]
    grants: list[tuple[Link, Grant]] = field(default_factory=list)

    @property
    def task_ids(self) -> frozenset[str]:
        return frozenset(grant.task.id for _, grant in self.grants)

    def inserts(self) -> list[Insert]:
        """The claimed tasks' rows (LEASED) and their attempts, in that order."""
        if not self.grants:
            return []
        leased = [_leased_row(grant, self.now) for _, grant in self.grants]
        attempts = [attempt_row(grant, link.peer, self.now) for link, grant in self.grants]
        return [Insert(tasks, leased), Insert(task_attempts, attempts)]

    def event_rows(self) -> list[dict[str, Any]]:
        """The LEASED events (task_events rows), written with the acceptance events."""
        return [leased_event_row(grant, self.now) for _, grant in self.grants]

    def deliver(self) -> None:
        """After the commit: send each lease (one frame per connection with batch framing)."""
        if not self.grants:
            return
        for link, grant in self.grants:
            self.hub.spawn((link.urgent or link.send)(grant.message()))
        self.hub.granted([grant for _, grant in self.grants])
        self.on_delivered(len(self.grants))
        for connection_id in {link.peer.connection_id for link, _ in self.grants
                              if not link.open}:  # fmt: skip
            self.hub.spawn(self.hub.disconnect(connection_id))  # closed meanwhile: shorten

    def release(self) -> None:
        """The transaction failed: nothing was leased; free the reserved slots."""
        for link, grant in self.grants:
            link.in_flight.discard(grant.attempt_id)
            self.hub.owner.pop(grant.attempt_id, None)
        self.grants.clear()


class EagerDispatch:
    """`on_delivered(n)`: n eager leases were committed and sent (a metric)."""

    def __init__(
        self, hub: Hub, lease_ttl_ms: int, on_delivered: Callable[[int], None] = lambda n: None
    ) -> None:
        self.hub = hub
        self.lease_ttl_ms = lease_ttl_ms
        self.on_delivered = on_delivered

    def claim(self, accepted: Sequence[Task], now: datetime) -> Claims:
        """Reserve a slot for each task a connection can take now (see the module text)."""
        claims = Claims(self.hub, now, self.on_delivered)
        links = [link for link in self.hub.links.values() if link.open]
        if not links:
            return claims
        seats = [Seat(link.free, link.peer.queues, link.handlers, link.pending,
                      idle=not link.in_flight) for link in links]  # fmt: skip
        for task in accepted:
            key = HandlerKey(task.handler, task.handler_version)
            index = eager_seat(seats, task.queue_id, key) if _ready(task, key, now) else None
            if index is None:
                continue
            link = links[index]
            grant = new_grant(task, 1, now, self.lease_ttl_ms)
            link.in_flight.add(grant.attempt_id)
            self.hub.owner[grant.attempt_id] = link.peer.connection_id
            seats[index] = replace(seats[index], free=link.free, idle=False)
            claims.grants.append((link, grant))
        return claims


def _ready(task: Task, key: HandlerKey, now: datetime) -> bool:
    """Leasable now, whoever serves it: WAITING, available, within deadlines, attempts left."""
    candidate = LeaseCandidate(task.state, task.queue_id, key, task.available_at,
                               task.start_deadline_at, task.deadline_at, task.attempt_count,
                               task.retry.max_attempts)  # fmt: skip
    return is_eligible(candidate, WorkerOffer(frozenset({task.queue_id}), frozenset({key})), now)


def _leased_row(grant: Grant, now: datetime) -> dict[str, object]:
    """The new task's row as a lease round would leave it: LEASED, revision + 1, one lease."""
    task = grant.task
    check_transition(task.state, TaskState.LEASED)
    return {**task_row(task), "state": TaskState.LEASED.value, "revision": task.revision + 1,
            "lease_count": 1, "current_attempt_id": grant.attempt_id,
            "updated_at": now}  # fmt: skip
