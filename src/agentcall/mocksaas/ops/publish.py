"""Admin: publish call.execute / raw bodies, and set tenant quotas."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import timedelta
from typing import Any

from agentcall.mocksaas.domain.commands import (
    Envelope,
    call_execute,
    generated_callees,
    new_command_id,
)
from agentcall.mocksaas.domain.ids import check_task_id, check_tenant
from agentcall.mocksaas.domain.tasks import QueueState, can_publish_calls
from agentcall.mocksaas.errors import IdempotencyKeyReused, InvalidRequest, TaskNotPublishable
from agentcall.mocksaas.ops.fields import (
    IDEMPOTENCY_HEADER,
    Reply,
    choice,
    get_int,
    only,
    opt_bool,
    opt_int,
    opt_str,
    opt_str_list,
    opt_time,
    req_str,
)
from agentcall.mocksaas.ops.tasks import flushed, owned_task
from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.store import configs, dispatchers, idempotency, outbox, tasks
from agentcall.mocksaas.store.idempotency import StoredRequest
from agentcall.mocksaas.store.outbox import OutgoingMessage
from agentcall.mocksaas.store.tasks import TaskRow

MAX_CALLS = 10_000


def _callees(body: dict[str, Any]) -> list[str]:
    explicit = opt_str_list(body, "callees", MAX_CALLS)
    if explicit is not None:
        if "count" in body:
            raise InvalidRequest("count", "send either callees or count")
        return list(explicit)
    count = get_int(body, "count", 1, 1, MAX_CALLS)
    return generated_callees(count, get_int(body, "callee_start", 0, 0, 10**9))


def _call_messages(rt: Runtime, task: TaskRow, body: dict[str, Any]) -> list[OutgoingMessage]:
    callees = _callees(body)
    command_id = opt_str(body, "command_id")
    if command_id is not None and len(callees) != 1:
        raise InvalidRequest("command_id", "only with exactly one call")
    not_after = timedelta(seconds=get_int(body, "not_after_s", 900, -86_400, 7 * 86_400))
    env = Envelope(task.dispatcher_id, task.tenant_id, task.tenant_key)
    route = rt.topology.route("task", task.dispatcher_id, task.task_id)
    now = rt.now()
    messages = []
    for callee in callees:
        cid = command_id or new_command_id()
        b = call_execute(
            env,
            task.task_id,
            callee,
            command_id=cid,
            now=now,
            not_after=not_after,
            trace_id=opt_str(body, "trace_id"),
        )
        rt.check_out("command-next.call_execute", b)
        messages.append(
            OutgoingMessage(
                task.dispatcher_id,
                rt.topology.command_exchange,
                route,
                "call.execute",
                cid,
                json.dumps(b).encode(),
            )
        )
    return messages


def _fingerprint(task_id: str, body: dict[str, Any]) -> str:
    canonical = json.dumps({"task_id": task_id, "body": body}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def calls(
    rt: Runtime, d: str, task_id: str, body: dict[str, Any], key: str | None = None
) -> Reply:
    """Store ``call.execute`` for one or N callees of a running or paused task, then
    publish them once. 200 when every one is confirmed, 202 when some are stored but still
    pending (the relay publishes them when the broker is back: do not send them again).

    With an ``Idempotency-Key`` (``key``), a retry of the same request answers the same
    command ids and publishes nothing new; the key with another request is a 409.
    """
    only(body, {"count", "callees", "callee_start", "not_after_s", "command_id", "trace_id"})
    fingerprint = _fingerprint(task_id, body)

    def txn(conn: sqlite3.Connection) -> tuple[StoredRequest, bool]:
        earlier = idempotency.find(conn, d, key) if key is not None else None
        if earlier is not None:
            if earlier.fingerprint != fingerprint:
                raise IdempotencyKeyReused(
                    f"{IDEMPOTENCY_HEADER} {key} was used for another request"
                )
            return earlier, True
        task = owned_task(conn, d, task_id)
        if not can_publish_calls(task.status) or task.queue_state is not QueueState.ACTIVE:
            raise TaskNotPublishable(f"task {task_id} is {task.status.value}")
        messages = _call_messages(rt, task, body)
        stored = StoredRequest(
            fingerprint, outbox.add(conn, messages, rt.stamp()), [str(m.ref) for m in messages]
        )
        if key is not None:
            idempotency.save(conn, d, key, stored, rt.stamp())
        return stored, False

    stored, replayed = await rt.db.run(txn)
    if not replayed:
        rt.metrics.published.labels("call.execute").inc(len(stored.outbox_ids))
    states = await flushed(rt, stored.outbox_ids)
    commands = [
        {"command_id": c, "state": states.get(i, "pending")}
        for i, c in zip(stored.outbox_ids, stored.command_ids, strict=True)
    ]
    confirmed = sum(1 for c in commands if c["state"] == "confirmed")
    pending = len(commands) - confirmed
    out = {
        "command_ids": stored.command_ids,
        "confirmed": confirmed,
        "pending": pending,
        "commands": commands,
        "replayed": replayed,
    }
    return Reply(out, 202 if pending else 200)


async def raw(rt: Runtime, d: str, body: dict[str, Any]) -> dict[str, Any]:
    """Publish a raw (invalid) body to a task queue or the control queue (D-MQ-5 tests)."""
    only(body, {"target", "task_id", "body"})
    target = choice(body, "target", ("task", "control"), None)
    text = req_str(body, "body", 8_388_608)
    task_id = check_task_id(body.get("task_id")) if target == "task" else None
    await rt.db.run(dispatchers.get, d)
    if task_id is not None:  # an unroutable raw body would be retried for ever
        task = await rt.db.run(owned_task, d, task_id)
        if task.queue_state is not QueueState.ACTIVE:
            raise TaskNotPublishable(f"task {task_id} has no queue any more (retired)")
    route = rt.topology.route(target, d, task_id)
    msg = OutgoingMessage(d, rt.topology.command_exchange, route, "raw", task_id, text.encode())
    ids = await rt.db.run(outbox.add, [msg], rt.stamp())
    rt.metrics.published.labels("raw").inc()
    states = await flushed(rt, ids)
    return {"outbox_id": ids[0], "routing_key": route, "state": states.get(ids[0])}


async def set_quota(rt: Runtime, d: str, tenant_id: str, body: dict[str, Any]) -> dict[str, Any]:
    only(body, {"max_concurrent_calls", "unavailable", "tenant_key", "valid_for_s", "valid_until"})
    check_tenant(tenant_id, "tenant_id")
    unavailable = opt_bool(body, "unavailable") is True
    max_calls = opt_int(body, "max_concurrent_calls", 0, 1_000_000)
    if unavailable == (max_calls is not None):
        raise InvalidRequest(
            "max_concurrent_calls", "send max_concurrent_calls or unavailable=true (exactly one)"
        )
    valid_for_s = get_int(body, "valid_for_s", 3600, 1, 366 * 86_400)
    valid_until = opt_time(body, "valid_until")
    given_key = opt_str(body, "tenant_key")

    def txn(conn: sqlite3.Connection) -> dict[str, Any]:
        dispatchers.get(conn, d)
        key = given_key or tasks.tenant_key_of(conn, d, tenant_id)
        if key is None:
            raise InvalidRequest("tenant_key", "required: the tenant has no task on this D")
        q = configs.put_quota(
            conn, d, tenant_id, check_tenant(key, "tenant_key"), max_calls, valid_for_s, valid_until
        )
        return {
            "dispatcher_id": d,
            "tenant_id": q.tenant_id,
            "tenant_key": q.tenant_key,
            "quota_revision": q.quota_revision,
            "max_concurrent_calls": q.max_concurrent_calls,
            "unavailable": q.max_concurrent_calls is None,
            "valid_for_s": q.valid_for_s,
            "valid_until": valid_until.isoformat() if valid_until else None,
        }

    return await rt.db.run(txn)
