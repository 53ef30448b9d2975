"""The small interfaces task control needs from the rest of the D.

Each has one real adapter (SaaS config cache, task consumer registry, AMQP drain, cell,
SQLite) and a tiny fake in ``tests/support/control_fakes.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agentcall.dispatcher.domain.control import (
    ControlCommand,
    ControlDecision,
    ControlJob,
    ReadFailure,
    TaskFacts,
)
from agentcall.dispatcher.domain.model import TaskConfig
from agentcall.dispatcher.domain.states import Barrier


@dataclass(frozen=True)
class DrainReport:
    """What one drain pass did: ``acked`` messages, ``queue_missing`` if already retired."""

    acked: int
    queue_missing: bool = False


@dataclass(frozen=True)
class Verdict:
    """A decision and the task config it may persist (only when ownership verified)."""

    decision: ControlDecision
    verified: TaskConfig | None


Choose = Callable[[TaskFacts], Verdict]
Progress = Callable[[int], Awaitable[None]]


class TaskReader(Protocol):
    """The authoritative task read of a control (D-CTL-2..4)."""

    async def read_fresh(self, task_id: str) -> TaskConfig | ReadFailure:
        """A task GET that bypasses (and refreshes) the config cache; never raises."""
        ...

    def forget(self, task_id: str) -> None:
        """Drop the task's cached config (discovery ``removed``, D-DISC-8)."""
        ...


class TaskConsumers(Protocol):
    """The task queue consumer registry."""

    async def suspend(self, task_id: str) -> None:
        """Cancel the task's consumer and return every prefetched-but-unaccepted delivery.

        Returns once the broker holds every such delivery again (requeued in place, never
        ACK-dropped, D-CTL-2) and the task stays unconsumed until :meth:`reopen`.
        """
        ...

    async def reopen(self, task_id: str) -> None:
        """Consume the task's same queue again, once the start-up gate allows (D-CTL-3)."""
        ...


class QueueDrainer(Protocol):
    async def drain(self, task_id: str, progress: Progress) -> DrainReport:
        """basic.get + silent ACK until nothing is unacked and the queue is empty (D-CTL-4)."""
        ...


class ActiveCalls(Protocol):
    async def hangup_task(self, task_id: str) -> int:
        """Ask the cell to hang up every live call of the task; returns how many."""
        ...


class ControlStore(Protocol):
    """Durable control state; every method is one transaction."""

    async def receive(self, command: ControlCommand, event_id: str, now: datetime) -> ControlJob:
        """Persist the processing; for pause/stop close admission in the same commit."""
        ...

    async def decide(self, job: ControlJob, choose: Choose, now: datetime) -> ControlJob:
        """Run ``choose`` on the task as persisted now; persist barrier and verdict at once.

        A verified config also records the authoritative status and revision (D-DISC-7)
        and creates the task row if discovery has not brought the task yet.
        """
        ...

    async def complete(self, job: ControlJob, body: dict[str, object], now: datetime) -> None:
        """Put the receipt in the outbox (its own event_id) and mark the job done."""
        ...

    async def job(self, seq: int) -> ControlJob: ...

    async def open_jobs(self) -> list[ControlJob]: ...

    async def barrier(self, task_id: str) -> Barrier | None: ...

    async def barriers(self) -> dict[str, Barrier]: ...

    async def drain_pending(self, task_id: str) -> bool:
        """True unless the task's drain was completed (and not restarted since)."""
        ...

    async def start_drain(self, task_id: str, now: datetime) -> None: ...

    async def note_drain(self, task_id: str, acked: int, now: datetime) -> None: ...

    async def finish_drain(self, task_id: str, now: datetime) -> None: ...

    async def reject_input(
        self, source: str, reason: str, detail: str, raw: bytes, now: datetime
    ) -> None:
        """Record a refused control body, redacted (size and SHA-256 only, D-MQ-5)."""
        ...
