"""The status snapshot served as ``GET /status`` and rendered by ``dispatcher status``.

Never contains the secret, payloads, phone numbers or transcripts.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from typing import TYPE_CHECKING, Any

from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from agentcall.dispatcher.store import executions, inbox, outbox, rejected, tasks
from agentcall.dispatcher.store import recordings as recording_store
from agentcall.dispatcher.store.codec import iso

if TYPE_CHECKING:
    from agentcall.dispatcher.service import Dispatcher


class ErrorLog:
    """The last errors of every loop, newest first, for /status."""

    def __init__(self, size: int = 50) -> None:
        self._items: deque[dict[str, str]] = deque(maxlen=size)

    def add(self, source: str, error: str) -> None:
        from agentcall.dispatcher.service import utcnow

        self._items.appendleft({"at": iso(utcnow()), "source": source, "error": error[:300]})

    def latest(self) -> list[dict[str, str]]:
        return list(self._items)


def _store_facts(conn: sqlite3.Connection) -> dict[str, Any]:
    return {
        "tasks": tasks.load_tasks(conn),
        "cursor": tasks.get_cursor(conn),
        "outbox": outbox.counts(conn),
        "blocked": outbox.blocked(conn),
        "executions": executions.state_counts(conn),
        "recordings": recording_store.counts(conn),
        "inbox": inbox.decision_counts(conn),
        "rejected_count": rejected.count(conn),
        "rejected_latest": rejected.latest(conn, 10),
    }


def _admission_state(d: Dispatcher, barrier: Barrier, status: TaskStatus) -> str:
    if not d.gate.open:
        return "closed: dispatcher gate"
    if barrier is not Barrier.NONE:
        return f"closed: {barrier} barrier"
    if status is not TaskStatus.RUNNING:
        return f"closed: task {status}"
    return "open"


async def snapshot(d: Dispatcher) -> dict[str, Any]:
    facts = await d.db.read(_store_facts)
    disc = d.discovery.status
    task_rows = [
        {
            "task_id": t.task_id,
            "tenant_id": t.tenant_id,
            "status": t.status.value,
            "task_revision": t.task_revision,
            "barrier": t.barrier.value,
            "admission": _admission_state(d, t.barrier, t.status),
            "consumer": d.consumers.states.get(t.task_id, "closed"),
        }
        for t in sorted(facts["tasks"].values(), key=lambda t: t.task_id)
    ]
    errors = d.errors.latest()
    for source, error in (
        ("discovery", disc.last_error),
        ("amqp", d.link.last_error),
        ("outbox", d.relay.last_error),
        ("cell", d.calls.last_error),
    ):
        if error:
            errors.append({"source": source, "error": error})
    return {
        "dispatcher_id": d.settings.dispatcher_id,
        "started_at": iso(d.started_at),
        "now": iso(d.clock()),
        "healthy": d.failed is None,
        "failed": d.failed,
        "admission": {
            "open": d.gate.open,
            "why_closed": d.gate.reasons,
            "latency": d.admission.percentiles(),
            "decide": d.admission.decide_percentiles(),
        },
        "discovery": {
            "cursor": facts["cursor"],
            "caught_up": disc.caught_up,
            "caught_up_at": iso(disc.caught_up_at) if disc.caught_up_at else None,
            "pages_applied": disc.pages_applied,
            "pages_with_tasks": disc.pages_with_tasks,
            "rows_applied": disc.rows_applied,
            "pages_rejected": disc.pages_rejected,
            "errors": disc.errors,
            "last_error": disc.last_error,
        },
        "config": d.cache.summary(),
        "tasks": task_rows,
        "commands": dict(d.admission.counts),
        "inbox": facts["inbox"],
        "outbox": facts["outbox"],
        "outbox_blocked": facts["blocked"],
        "relay": {"published": d.relay.published, "failures": d.relay.failures},
        "executions": facts["executions"],
        "calls": {"cell_boot_id": d.calls.boot_id, **dict(d.calls.counts)},
        "recordings": {
            "bucket": d.recordings.bucket if d.recordings else None,
            **facts["recordings"],
            **{f"loop_{k}": v for k, v in (d.recordings.counts if d.recordings else {}).items()},
        },
        "amqp": {"connected": d.link.connected.is_set(), "connections": d.link.reconnects},
        "intake": {"waiting": d.intake.waiting, "batches": d.intake.batches},
        "rejected_inputs": {"count": facts["rejected_count"], "latest": facts["rejected_latest"]},
        "control": d.control.snapshot(),
        "last_errors": errors[:20],
    }
