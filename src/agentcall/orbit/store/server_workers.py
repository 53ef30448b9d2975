"""`orbit_server_workers` (agentcall.orbit.domain.worker_directory): each server process's connected
workers, written by the process in its registration transaction (`Servers.beat`), read by the
others' listings, deleted with a dead process's registration."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.worker_directory import Changes, WorkerRecord
from agentcall.orbit.store import connector
from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import orbit_server_workers


async def apply(conn: HotConnection, server_id: str, changes: Changes) -> None:
    """Write one round's changes of this process's rows (inside the caller's transaction)."""
    if changes.reset:
        await forget(conn, [server_id])
    if changes.delete:
        await connector.execute(
            conn, "unrecord_workers", {"server_id": server_id, "ids": list(changes.delete)}
        )
    if changes.write:
        rows = [_row(server_id, record) for record in changes.write]
        await connector.insert_all(conn, [Insert(orbit_server_workers, rows)])


async def forget(conn: HotConnection, server_ids: Sequence[str]) -> None:
    await connector.execute(conn, "unrecord_servers_workers", {"server_ids": list(server_ids)})


async def recorded(
    conn: HotConnection, namespace_id: str, server_id: str, expire_s: float
) -> list[WorkerRecord]:
    """The namespace's workers recorded by the other processes whose registration was renewed
    within `expire_s` (on the database clock, read by the same statement)."""
    params = {"namespace_id": namespace_id, "server_id": server_id}
    rows = await connector.fetch(conn, "recorded_workers", params)
    return [
        _record(row)
        for row in rows
        if row.server_heartbeat_at >= row.now_at - timedelta(seconds=expire_s)
    ]


def _row(server_id: str, record: WorkerRecord) -> dict[str, Any]:
    return {
        "connection_id": record.connection_id,
        "server_id": server_id,
        "namespace_id": record.namespace_id,
        "server": record.server,
        "name": record.name,
        "instance_id": record.instance_id,
        "sdk": record.sdk,
        "host": record.host,
        "pid": record.pid,
        "queues": json.dumps(list(record.queues)),
        "handlers": json.dumps([[h.handler, h.handler_version] for h in record.handlers]),
        "slots": record.slots,
        "in_flight": record.in_flight,
        "connected_at": record.connected_at,
        "last_heartbeat_at": record.last_heartbeat_at,
    }


def _record(row: Any) -> WorkerRecord:
    handlers = tuple(HandlerKey(str(h), str(v)) for h, v in json.loads(row.handlers))
    return WorkerRecord(
        row.connection_id,
        row.namespace_id,
        row.server,
        row.name,
        row.instance_id,
        row.sdk,
        row.host,
        None if row.pid is None else int(row.pid),
        tuple(json.loads(row.queues)),
        handlers,
        int(row.slots),
        int(row.in_flight),
        row.connected_at,
        row.last_heartbeat_at,
    )
