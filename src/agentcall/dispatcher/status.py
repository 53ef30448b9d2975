"""The status snapshot served as ``GET /status`` and rendered by ``dispatcher status``.

Built from two typed parts: :class:`StoreFacts`, read from the state database in one
call, and :class:`Components`, the ``status()`` of every component, collected by the
assembly (:mod:`agentcall.dispatcher.service`). Never contains the secret, payloads, phone numbers
or transcripts.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentcall.dispatcher.admission.service import AdmissionStatus
from agentcall.dispatcher.calls.service import CallsStatus
from agentcall.dispatcher.control.plane import ControlStatus
from agentcall.dispatcher.discovery.cellgate import CellGateStatus
from agentcall.dispatcher.discovery.gate import GateStatus
from agentcall.dispatcher.discovery.service import DiscoveryStatus
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from agentcall.dispatcher.logs import HANDLED
from agentcall.dispatcher.mq.consumers import ConsumersStatus
from agentcall.dispatcher.mq.intake import IntakeStatus
from agentcall.dispatcher.mq.link import LinkStatus
from agentcall.dispatcher.mq.publisher import RelayStatus
from agentcall.dispatcher.readiness import readiness
from agentcall.dispatcher.recording.service import RecordingsStatus
from agentcall.dispatcher.saas.cache import CacheStatus
from agentcall.dispatcher.saas.outage import OutagesStatus
from agentcall.dispatcher.store import executions, inbox, outbox, recordings, rejected, tasks
from agentcall.dispatcher.store.codec import iso


def _wall_clock() -> datetime:
    return datetime.now(UTC)


class ErrorLog:
    """The last errors of every loop, newest first, for /status."""

    def __init__(self, size: int = 50, clock: Callable[[], datetime] = _wall_clock) -> None:
        self._items: deque[dict[str, str]] = deque(maxlen=size)
        self._clock = clock

    def add(self, source: str, error: str) -> None:
        self._items.appendleft({"at": iso(self._clock()), "source": source, "error": error[:300]})

    def latest(self) -> list[dict[str, str]]:
        return list(self._items)


@dataclass(frozen=True)
class StoreFacts:
    """What /status reads from the state database (one read, one snapshot)."""

    tasks: dict[str, LocalTask]
    cursor: int
    outbox: dict[str, int]
    blocked: list[dict[str, Any]]
    executions: dict[str, int]
    recordings: dict[str, int]
    inbox: dict[str, int]
    rejected_count: int
    rejected_latest: list[dict[str, Any]]
    oldest_pending: datetime | None = None


def store_facts(conn: sqlite3.Connection) -> StoreFacts:
    return StoreFacts(
        tasks=tasks.load_tasks(conn),
        cursor=tasks.get_cursor(conn),
        outbox=outbox.counts(conn),
        blocked=outbox.blocked(conn),
        executions=executions.state_counts(conn),
        recordings=recordings.counts(conn),
        inbox=inbox.decision_counts(conn),
        rejected_count=rejected.count(conn),
        rejected_latest=rejected.latest(conn, 10),
        oldest_pending=outbox.oldest_pending(conn),
    )


@dataclass(frozen=True)
class Components:
    """The ``status()`` of every component of one D, at one moment."""

    dispatcher_id: str
    started_at: datetime
    now: datetime
    failed: str | None
    errors: list[dict[str, str]]
    gate: GateStatus
    admission: AdmissionStatus
    discovery: DiscoveryStatus
    config: CacheStatus
    consumers: ConsumersStatus
    link: LinkStatus
    relay: RelayStatus
    calls: CallsStatus
    recordings: RecordingsStatus | None
    intake: IntakeStatus
    control: ControlStatus
    outages: OutagesStatus | None = None
    cell: CellGateStatus | None = None
    state_file: str | None = None  # why the state file is lost (store.guard), if it is


def _admission_state(gate: GateStatus, barrier: Barrier, status: TaskStatus) -> str:
    if not gate.open:
        return "closed: dispatcher gate"
    if barrier is not Barrier.NONE:
        return f"closed: {barrier} barrier"
    if status is not TaskStatus.RUNNING:
        return f"closed: task {status}"
    return "open"


def _tasks(facts: StoreFacts, c: Components) -> list[dict[str, Any]]:
    return [
        {
            "task_id": t.task_id,
            "tenant_id": t.tenant_id,
            "status": t.status.value,
            "task_revision": t.task_revision,
            "barrier": t.barrier.value,
            "admission": _admission_state(c.gate, t.barrier, t.status),
            "consumer": c.consumers.of(t.task_id),
        }
        for t in sorted(facts.tasks.values(), key=lambda t: t.task_id)
    ]


def _discovery(cursor: int, disc: DiscoveryStatus) -> dict[str, Any]:
    return {
        "cursor": cursor,
        "caught_up": disc.caught_up,
        "caught_up_at": iso(disc.caught_up_at) if disc.caught_up_at else None,
        "pages_applied": disc.pages_applied,
        "pages_with_tasks": disc.pages_with_tasks,
        "rows_applied": disc.rows_applied,
        "pages_rejected": disc.pages_rejected,
        "rejected_by_reason": dict(disc.rejected_by_reason),
        "errors": disc.errors,
        "last_error": disc.last_error,
    }


def _cell(cell: CellGateStatus | None) -> dict[str, Any]:
    if cell is None:
        return {}
    return {
        "verified": cell.verified,
        "expected_cell_id": cell.expected_cell_id,
        "reported_cell_id": cell.reported_cell_id,
        "expected_config_sha256": cell.expected_config_sha256,
        "reported_config_sha256": cell.reported_config_sha256,
        "problem": cell.problem,
        "mismatches": cell.mismatches,
        "checked_at": iso(cell.checked_at) if cell.checked_at else None,
    }


def _recordings(facts: StoreFacts, loop: RecordingsStatus | None) -> dict[str, Any]:
    return {
        "bucket": loop.bucket if loop else None,
        **facts.recordings,
        **{f"loop_{k}": v for k, v in (loop.counts if loop else {}).items()},
    }


def _errors(c: Components) -> list[dict[str, str]]:
    errors = list(c.errors)
    for source, error in (
        ("discovery", c.discovery.last_error),
        ("amqp", c.link.last_error),
        ("outbox", c.relay.last_error),
        ("cell", c.calls.last_error),
    ):
        if error:
            errors.append({"source": source, "error": error})
    return errors[:20]


def _backlog(facts: StoreFacts, now: datetime) -> dict[str, Any]:
    oldest = facts.oldest_pending
    return {
        "pending": facts.outbox.get("pending", 0),
        "oldest_pending_at": iso(oldest) if oldest else None,
        "oldest_pending_age_s": max(0.0, (now - oldest).total_seconds()) if oldest else 0.0,
    }


def snapshot(facts: StoreFacts, c: Components) -> dict[str, Any]:
    """The /status body (its keys in this order); ``readiness`` is decided from the rest."""
    body = _body(facts, c)
    return {**body, "readiness": readiness(body)}


def _body(facts: StoreFacts, c: Components) -> dict[str, Any]:
    return {
        "dispatcher_id": c.dispatcher_id,
        "started_at": iso(c.started_at),
        "now": iso(c.now),
        "healthy": c.failed is None,
        "failed": c.failed,
        "admission": {
            "open": c.gate.open,
            "why_closed": c.gate.why_closed,
            "latency": c.admission.latency,
            "decide": c.admission.decide,
        },
        "discovery": _discovery(facts.cursor, c.discovery),
        "config": dict(c.config),
        "outages": dict(c.outages) if c.outages else {"active": [], "read_failures": {}},
        "cell_identity": _cell(c.cell),
        "tasks": _tasks(facts, c),
        "commands": c.admission.commands,
        "inbox": facts.inbox,
        "outbox": facts.outbox,
        "outbox_blocked": facts.blocked,
        "outbox_backlog": _backlog(facts, c.now),
        "relay": {"published": c.relay.published, "failures": c.relay.failures},
        "executions": facts.executions,
        "calls": {
            "cell_boot_id": c.calls.cell_boot_id,
            "cell_reachable": c.calls.cell_reachable,
            **c.calls.counts,
        },
        "recordings": _recordings(facts, c.recordings),
        "amqp": {"connected": c.link.connected, "connections": c.link.connections},
        "intake": {"waiting": c.intake.waiting, "batches": c.intake.batches},
        "rejected_inputs": {"count": facts.rejected_count, "latest": facts.rejected_latest},
        "control": c.control,
        "last_errors": _errors(c),
        "handled_errors": dict(HANDLED),
        "state_file": {"intact": c.state_file is None, "problem": c.state_file},
    }
