"""Admin: task configs and the authoritative task status (persist first, then publish)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from typing import Any

from agentcall.mocksaas.domain.commands import Envelope, task_control
from agentcall.mocksaas.domain.ids import check_task_id, check_tenant
from agentcall.mocksaas.domain.task_config import TaskSpec, build_task_config
from agentcall.mocksaas.domain.tasks import (
    ControlAction,
    QueueState,
    TaskStatus,
    plan_status_change,
)
from agentcall.mocksaas.errors import (
    Conflict,
    InvalidRequest,
    MockSaasError,
    NotFound,
    TaskQueueLimit,
)
from agentcall.mocksaas.ops.fields import choice, only, opt_bool, opt_str
from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.store import dispatchers, outbox, tasks
from agentcall.mocksaas.store.outbox import OutgoingMessage
from agentcall.mocksaas.store.tasks import TaskRow

SPEC_FIELDS = {f for f in TaskSpec.__dataclass_fields__}
PUT_FIELDS = SPEC_FIELDS | {"tenant_id", "tenant_key", "status", "over_queue_limit"}
POLICIES = ("drain", "hangup")


def merge_spec(old: TaskSpec | None, body: dict[str, Any]) -> TaskSpec:
    data = old.to_json() if old else {}
    data.update({k: v for k, v in body.items() if k in SPEC_FIELDS})
    try:
        return TaskSpec.from_json(data)
    except (ValueError, TypeError) as exc:
        raise InvalidRequest("mode", str(exc)) from exc


def _check_config(rt: Runtime, task: TaskRow) -> None:
    body = build_task_config(task.identity, task.status.value, task.task_revision, task.spec)
    problems = rt.contracts.violations("config-read.task_config", body)
    if problems:
        raise InvalidRequest(f"config{problems[0].path[1:]}", problems[0].message)


def owned_task(conn: sqlite3.Connection, dispatcher_id: str, task_id: str) -> TaskRow:
    dispatchers.get(conn, dispatcher_id)
    task = tasks.find(conn, task_id)
    if task is None or task.dispatcher_id != dispatcher_id:
        raise NotFound(f"task {task_id} is not assigned to dispatcher {dispatcher_id}")
    return task


def _room_for_queue(conn: sqlite3.Connection, rt: Runtime, d: str, over: bool = False) -> None:
    """D-MQ-6: at most 256 task queues not yet retired per dispatcher, unless ``over``:
    a misbehaving SaaS that assigns more, to show the Dispatcher refusing it (D-NOTE-5)."""
    dispatchers.get(conn, d)
    if not over and tasks.active_queue_count(conn, d) >= rt.topology.max_task_queues:
        raise TaskQueueLimit(
            f"dispatcher {d} already has {rt.topology.max_task_queues} task queues not yet retired"
        )


def _created(
    rt: Runtime,
    conn: sqlite3.Connection,
    d: str,
    task_id: str,
    body: dict[str, Any],
    over: bool = False,
) -> TaskRow:
    _room_for_queue(conn, rt, d, over)
    status = TaskStatus(choice(body, "status", ("running", "paused"), "running"))
    return TaskRow(
        d,
        task_id,
        check_tenant(body.get("tenant_id"), "tenant_id"),
        check_tenant(body.get("tenant_key"), "tenant_key"),
        status,
        1,
        merge_spec(None, body),
        QueueState.ACTIVE,
        0,
        None,
        None,
        rt.stamp(),
    )


def _updated(old: TaskRow, body: dict[str, Any]) -> TaskRow:
    if old.status is TaskStatus.REMOVED:
        raise Conflict(f"task {old.task_id} was removed; task ids are never reused")
    for field in ("tenant_id", "tenant_key"):
        if field in body and body[field] != getattr(old, field):
            raise InvalidRequest(field, "a task's tenant identity cannot change")
    if "status" in body and body["status"] != old.status.value:
        raise InvalidRequest("status", "use POST …/tasks/{task_id}/status to change it")
    return replace(old, spec=merge_spec(old.spec, body), task_revision=old.task_revision + 1)


async def put_task(rt: Runtime, d: str, task_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create or update; a new task's queue + binding are declared before anything else."""
    only(body, PUT_FIELDS)
    check_task_id(task_id)
    rt.topology.check_task_names(d, task_id)
    existing = await rt.db.run(tasks.find, task_id)
    declared = existing is None
    over = opt_bool(body, "over_queue_limit") is True
    body = {k: v for k, v in body.items() if k != "over_queue_limit"}
    if declared:
        await rt.db.run(_room_for_queue, rt, d, over)
        await rt.broker.declare(rt.topology.for_task(d, task_id))

    def txn(conn: sqlite3.Connection) -> TaskRow:
        old = tasks.find(conn, task_id)
        if old is not None and old.dispatcher_id != d:
            raise Conflict(f"task {task_id} belongs to another dispatcher")
        new = _created(rt, conn, d, task_id, body, over) if old is None else _updated(old, body)
        _check_config(rt, new)
        return tasks.append_event(conn, new, rt.stamp())

    try:
        return (await rt.db.run(txn)).public()
    except MockSaasError:
        if declared and await rt.db.run(tasks.find, task_id) is None:  # no orphan queue
            await rt.broker.delete_queues([rt.topology.queue_name("task", d, task_id)])
        raise


async def show(rt: Runtime, d: str, task_id: str) -> dict[str, Any]:
    task = await rt.db.run(owned_task, d, task_id)
    out = task.public()
    if task.status is not TaskStatus.REMOVED:
        out["config"] = build_task_config(
            task.identity, task.status.value, task.task_revision, task.spec
        )
    return out


async def list_for(rt: Runtime, d: str) -> dict[str, Any]:
    await rt.db.run(dispatchers.get, d)
    return {"tasks": [t.public() for t in await rt.db.run(tasks.list_for, d)]}


def _control_message(
    rt: Runtime, task: TaskRow, action: ControlAction, policy: str, reason: str
) -> OutgoingMessage:
    env = Envelope(task.dispatcher_id, task.tenant_id, task.tenant_key)
    body = task_control(
        env, task.task_id, action, now=rt.now(), active_call_policy=policy, reason=reason
    )
    rt.check_out("command-next.task_control", body)
    rt.metrics.published.labels("task.control").inc()
    return OutgoingMessage(
        task.dispatcher_id,
        rt.topology.command_exchange,
        rt.topology.route("control", task.dispatcher_id),
        "task.control",
        task.task_id,
        json.dumps(body).encode(),
    )


async def flushed(rt: Runtime, ids: list[int]) -> dict[int, str]:
    await rt.relay.flush()
    return await rt.db.run(outbox.states, ids) if ids else {}


async def set_status(rt: Runtime, d: str, task_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Persist the status (+ event) and enqueue the matching control in one transaction,
    then publish it (contract §3.4: the SaaS persists first, then publishes)."""
    only(body, {"status", "active_call_policy", "reason"})
    requested = TaskStatus(
        choice(body, "status", ("running", "paused", "stopped", "finished"), None)
    )
    policy = choice(body, "active_call_policy", POLICIES, "drain")
    reason = opt_str(body, "reason", 512) or f"mocksaas: set {requested.value}"

    def txn(conn: sqlite3.Connection) -> tuple[TaskRow, ControlAction | None, list[int]]:
        task = owned_task(conn, d, task_id)
        change = plan_status_change(task.status, requested)
        if change.appends_event:
            task = tasks.append_event(
                conn,
                replace(task, status=change.new_status, task_revision=task.task_revision + 1),
                rt.stamp(),
            )
        if change.control is None:
            return task, None, []
        msg = _control_message(rt, task, change.control, policy, reason)
        return task, change.control, outbox.add(conn, [msg], rt.stamp())

    task, action, ids = await rt.db.run(txn)
    states = await flushed(rt, ids)
    control = (
        None
        if action is None
        else {"action": action.value, "outbox_id": ids[0], "state": states.get(ids[0])}
    )
    return {"task": task.public(), "control": control}


async def publish_control(
    rt: Runtime, d: str, task_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """A control without any status change (for out-of-order and mismatch scenarios)."""
    only(body, {"action", "active_call_policy", "reason"})
    action = ControlAction(choice(body, "action", ("pause", "resume", "stop"), None))
    policy = choice(body, "active_call_policy", POLICIES, "drain")
    reason = opt_str(body, "reason", 512) or "mocksaas: explicit control"

    def txn(conn: sqlite3.Connection) -> list[int]:
        task = owned_task(conn, d, task_id)
        return outbox.add(conn, [_control_message(rt, task, action, policy, reason)], rt.stamp())

    ids = await rt.db.run(txn)
    states = await flushed(rt, ids)
    return {"action": action.value, "outbox_id": ids[0], "state": states.get(ids[0])}
