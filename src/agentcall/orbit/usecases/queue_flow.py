"""A queue's flow settings and what they hold back (`GET` and `PATCH /v1/queues/{id}`,
docs/orbit/flow-control.md), and the `waiting_reason` of one WAITING task. Reading needs
tasks:read, changing needs queues:admin and records `queues.update` in the audit log; a queue
outside the token's scope is not found."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.audit import audit_entry
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.flow import WaitingReason
from agentcall.orbit.domain.flow_settings import QueueFlow, parse_patch, settings_view
from agentcall.orbit.domain.flow_status import QueueStatus, queue_status, waiting_reason
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store import audit, flow, inspect
from agentcall.orbit.store.db import Database


@dataclass(frozen=True, slots=True)
class QueueReport:
    name: str
    flow: QueueFlow
    status: QueueStatus | None  # None: the queue has no flow settings


def _visible(principal: Principal, queue_id: str) -> None:
    if queue_id not in principal.queue_ids:
        raise NotFound("queue not found")


async def read_queue(
    db: Database, principal: Principal, queue_id: str, need: Permission = Permission.READ
) -> QueueReport:
    """`need`: tasks:read, or queues:admin for the answer to a change."""
    principal.require(need)
    _visible(principal, queue_id)

    async def once() -> QueueReport:
        async with db.read() as conn:
            names = await inspect.queue_names(conn, [queue_id])
            if queue_id not in names:
                raise NotFound("queue not found")
            settings = await flow.read(conn, queue_id)
            if not settings.settings.active:
                return QueueReport(names[queue_id], settings, None)
            now = await db.now(conn)
            state = await flow.state(conn, queue_id)
            waiting = await flow.waiting_by_key(conn, queue_id, now)
        status = queue_status(settings.settings, state, waiting, now)
        return QueueReport(names[queue_id], settings, status)

    return await db.retrying(once)


async def set_queue_flow(
    db: Database, principal: Principal, queue_id: str, body: JsonValue
) -> QueueFlow:
    """Replace the queue's flow settings if `expected_revision` is theirs (else 409), with
    the audit entry `queues.update` (the new revision and settings) in the same transaction."""
    principal.require(Permission.QUEUE_ADMIN)
    _visible(principal, queue_id)
    expected, settings = parse_patch(body)

    async def once() -> QueueFlow:
        async with db.hot_write() as conn:
            now = await db.now(conn)
            saved = await flow.save(conn, queue_id, expected, settings, now)
            detail: dict[str, JsonValue] = {"revision": saved.revision}
            detail["flow"] = settings_view(settings)
            entry = audit_entry(principal, "queues.update", "queue", queue_id, detail)
            await audit.insert_entries(conn, [entry], now)  # commits with the change
            return saved

    async def known() -> bool:
        async with db.read() as conn:
            return queue_id in await inspect.queue_names(conn, [queue_id])

    if not await db.retrying(known):  # a database failure: 503, as for the change itself
        raise NotFound("queue not found")
    return await db.retrying(once)


async def task_waiting_reason(db: Database, task: Task, now: datetime) -> WaitingReason | None:
    """Why a ready WAITING task of a flow-controlled queue is not leased (None: it is not
    held by a limit). Only called for queues with flow settings."""
    if task.state is not TaskState.WAITING or task.available_at > now:
        return None
    key = task.flow.concurrency_key
    async with db.single_read() as conn:
        queue = await flow.read(conn, task.queue_id)
        running, bucket = await flow.key_state(conn, task.queue_id, queue.settings, key)
    return waiting_reason(queue.settings, key, running, bucket, now)


async def flow_statuses(db: Database, queue_ids: list[str]) -> dict[str, QueueStatus]:
    """What holds back each of these flow-controlled queues now (for the metrics, read when
    scraped: a few grouped queries per queue, never on the lease path). A queue whose settings
    are gone is left out."""

    async def once() -> dict[str, QueueStatus]:
        out: dict[str, QueueStatus] = {}
        async with db.read() as conn:
            now = await db.now(conn)
            for queue_id in queue_ids:
                settings = (await flow.read(conn, queue_id)).settings
                if not settings.active:
                    continue
                state = await flow.state(conn, queue_id)
                waiting = await flow.waiting_by_key(conn, queue_id, now)
                out[queue_id] = queue_status(settings, state, waiting, now)
        return out

    return await db.retrying(once)
