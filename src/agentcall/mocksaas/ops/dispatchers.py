"""Admin: dispatchers and their SIP snapshot."""

from __future__ import annotations

import secrets
import sqlite3
from typing import Any

from agentcall.mocksaas.domain import discovery
from agentcall.mocksaas.domain.ids import check_dispatcher_id, new_dispatcher_id
from agentcall.mocksaas.domain.sip import SipOptions, adopt_snapshot, build_sip_snapshot
from agentcall.mocksaas.domain.tasks import QueueState
from agentcall.mocksaas.errors import InvalidRequest
from agentcall.mocksaas.ops.fields import (
    choice,
    only,
    opt_bool,
    opt_int,
    opt_object,
    opt_str,
    opt_str_list,
)
from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.store import configs, dispatchers, tasks
from agentcall.mocksaas.store.dispatchers import Dispatcher


def describe(rt: Runtime, d: Dispatcher) -> dict[str, Any]:
    t = rt.topology
    did = d.dispatcher_id
    return {
        **d.public(),
        "topology": {
            "command_exchange": t.command_exchange,
            "result_exchange": t.result_exchange,
            "control_queue": t.queue_name("control", did),
            "control_route": t.route("control", did),
            "result_queue": t.queue_name("result", did),
            "result_route": t.route("result", did),
            "task_queue_template": t.queues["task"].name.replace("<dispatcher_id>", did),
        },
    }


async def create(rt: Runtime, body: dict[str, Any]) -> dict[str, Any]:
    only(body, {"dispatcher_id", "secret", "discovery_page_size", "authorized"})
    raw_id = body.get("dispatcher_id")
    dispatcher_id = new_dispatcher_id() if raw_id is None else check_dispatcher_id(raw_id)
    secret = opt_str(body, "secret", 512) or secrets.token_urlsafe(24)
    size = body.get("discovery_page_size")
    d = Dispatcher(
        dispatcher_id,
        secret,
        opt_bool(body, "authorized") is not False,
        None if size is None else discovery.check_page_size(size),
        0,
        rt.stamp(),
    )
    await rt.broker.declare(rt.topology.for_dispatcher(dispatcher_id))
    await rt.db.run(dispatchers.insert, d)
    await rt.results.start(dispatcher_id)
    return describe(rt, d)


async def update(rt: Runtime, dispatcher_id: str, body: dict[str, Any]) -> dict[str, Any]:
    only(body, {"authorized", "discovery_page_size"})
    size = body.get("discovery_page_size")
    d = await rt.db.run(
        dispatchers.update,
        dispatcher_id,
        opt_bool(body, "authorized"),
        None if size is None else discovery.check_page_size(size),
    )
    return describe(rt, d)


async def show(rt: Runtime, dispatcher_id: str) -> dict[str, Any]:
    return describe(rt, await rt.db.run(dispatchers.get, dispatcher_id))


async def list_all(rt: Runtime) -> dict[str, Any]:
    return {"dispatchers": [describe(rt, d) for d in await rt.db.run(dispatchers.list_all)]}


async def purge(rt: Runtime, dispatcher_id: str) -> dict[str, Any]:
    """Delete the dispatcher's queues (task, control, result) and every stored row."""
    await rt.db.run(dispatchers.get, dispatcher_id)
    await rt.results.stop(dispatcher_id)
    names = [
        rt.topology.queue_name("task", dispatcher_id, t.task_id)
        for t in await rt.db.run(tasks.list_for, dispatcher_id)
        if t.queue_state is QueueState.ACTIVE
    ]
    names += [rt.topology.queue_name(role, dispatcher_id) for role in ("control", "result")]
    await rt.broker.delete_queues(names)
    await rt.db.run(dispatchers.purge, dispatcher_id)
    return {"dispatcher_id": dispatcher_id, "deleted_queues": names}


SIP_FIELDS = {
    "snapshot",
    "time_zone",
    "allowed_targets",
    "max_concurrent_calls",
    "trunk_id",
    "extra_trunk_ids",
    "caller_profile_id",
    "caller_id",
    "mode",
    "enabled",
}


def _targets(body: dict[str, Any], default: tuple[str, ...]) -> tuple[str, ...]:
    """The whitelist as sent ([] = nobody may be called, D-NOTE-6); absent = the default."""
    given = opt_str_list(body, "allowed_targets")
    return default if given is None else given


def sip_options(body: dict[str, Any]) -> SipOptions:
    base = SipOptions()
    mcc: int | None = base.max_concurrent_calls
    if "max_concurrent_calls" in body:
        mcc = opt_int(body, "max_concurrent_calls", 0, 1_000_000)
    return SipOptions(
        time_zone=opt_str(body, "time_zone", 64) or base.time_zone,
        allowed_targets=_targets(body, base.allowed_targets),
        max_concurrent_calls=mcc,
        trunk_id=opt_str(body, "trunk_id") or base.trunk_id,
        caller_profile_id=opt_str(body, "caller_profile_id") or base.caller_profile_id,
        caller_id=opt_str(body, "caller_id", 64) or base.caller_id,
        mode=choice(body, "mode", ("mock", "real"), base.mode),
        enabled=opt_bool(body, "enabled") is not False,
        extra_trunk_ids=opt_str_list(body, "extra_trunk_ids", 255) or (),
    )


async def set_sip(rt: Runtime, dispatcher_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Set the approved SIP snapshot: an explicit ``snapshot`` or the default builder."""
    only(body, SIP_FIELDS)
    snapshot = opt_object(body, "snapshot")
    if snapshot is not None and len(body) > 1:
        raise InvalidRequest("snapshot", "send either snapshot or builder fields, not both")
    opts = sip_options(body) if snapshot is None else None
    now = rt.now()

    def build(revision: int) -> dict[str, Any]:
        if opts is not None:
            built = build_sip_snapshot(dispatcher_id, revision, opts, now)
        else:
            assert snapshot is not None
            built = adopt_snapshot(dispatcher_id, revision, snapshot)
        problems = rt.contracts.violations("config-read.sip_config", built)
        if problems:
            raise InvalidRequest(f"snapshot{problems[0].path[1:]}", problems[0].message)
        return built

    def txn(conn: sqlite3.Connection) -> dict[str, Any]:
        dispatchers.get(conn, dispatcher_id)
        return configs.put_sip(conn, dispatcher_id, build)

    return await rt.db.run(txn)


async def events(rt: Runtime, dispatcher_id: str, after: int, limit: int) -> dict[str, Any]:
    def txn(conn: sqlite3.Connection) -> dict[str, Any]:
        d = dispatchers.get(conn, dispatcher_id)
        log = tasks.event_log(conn, dispatcher_id, after)[:limit]
        return {
            "dispatcher_id": dispatcher_id,
            "head": d.head,
            "events": [{"event_id": e.event_id, **e.item()} for e in log],
        }

    return await rt.db.run(txn)
