"""The namespace's connected workers across every server process of one database
(docs/orbit/console.md): each process records the workers connected to it in
`orbit_server_workers` during its registration round (`agentcall.orbit.domain.peers`, about once a
second), writing only the rows that changed since its last round; a listing shows this
process's workers as they are now and the other live processes' as they last recorded them.
Rows of a process whose registration expired are not shown, and are deleted with its
registration. Pure: what a round writes, and what one worker looks like to a token.

A process that finds its own registration gone (another deleted it as dead after a long
stall), whose last round failed, or whose rows have not been rewritten whole for a while
(a commit whose outcome it could not know) records all its workers again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.times import format_time


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """One connected worker as the listing shows it (and as its row stores it)."""

    connection_id: str
    namespace_id: str
    server: str  # the server process it is connected to ("host:pid")
    name: str
    instance_id: str
    sdk: str | None
    host: str | None
    pid: int | None
    queues: tuple[str, ...]  # in the worker's order
    handlers: tuple[HandlerKey, ...]  # sorted
    slots: int
    in_flight: int
    connected_at: datetime
    last_heartbeat_at: datetime


IDLE_STEP_S = 5  # an idle connection's heartbeat moves in steps of this (rows stay put between)


def heartbeat_at(seen_at: datetime, holds_attempts: bool, now: datetime) -> datetime:
    """The last heartbeat a worker connection shows. While it holds attempts: its last lease
    heartbeat (`seen_at`). While idle it sends none (heartbeats are about leases,
    worker-protocol.md §3.5), yet it is alive: the connection is open, and WebSocket
    ping/pong closes one whose peer stops answering. So an idle connection shows `now`,
    rounded down to IDLE_STEP_S (never before `seen_at`), and does not look dead."""
    if holds_attempts:
        return seen_at
    step = int(now.timestamp()) // IDLE_STEP_S * IDLE_STEP_S
    return max(seen_at, datetime.fromtimestamp(step, now.tzinfo))


@dataclass(frozen=True, slots=True)
class Changes:
    """What one round writes: the rows of `delete` (connection ids) go, then `write` is
    inserted; with `reset`, every row of the process goes first instead. A written row is
    always deleted first, so a round never fails on a row it believes absent."""

    write: tuple[WorkerRecord, ...]
    delete: tuple[str, ...]
    reset: bool = False

    def __bool__(self) -> bool:
        return bool(self.write or self.delete or self.reset)


def changes(
    recorded: Mapping[str, WorkerRecord] | None, current: Sequence[WorkerRecord]
) -> Changes:
    """The writes that turn the rows as last recorded into `current`. `recorded` None (not
    known: the first round, a failed one, one whose registration had to be re-inserted, or
    the periodic full rewrite) rewrites every row of the process."""
    if recorded is None:
        return Changes(tuple(current), (), reset=True)
    now = {record.connection_id for record in current}
    write = tuple(r for r in current if recorded.get(r.connection_id) != r)
    gone = {cid for cid in recorded if cid not in now}
    return Changes(write, tuple(sorted(gone | {r.connection_id for r in write})))


def view(record: WorkerRecord, queue_ids: frozenset[str]) -> dict[str, JsonValue] | None:
    """The worker as a token of `queue_ids` sees it (only those of its queues), or None when
    it serves none of them."""
    shown: list[JsonValue] = [queue for queue in record.queues if queue in queue_ids]
    if not shown:
        return None
    data: dict[str, JsonValue] = {
        "connection_id": record.connection_id,
        "server": record.server,
        "name": record.name,
        "instance_id": record.instance_id,
    }
    for key, value in (("sdk", record.sdk), ("host", record.host), ("pid", record.pid)):
        if value is not None:
            data[key] = value
    handlers: list[JsonValue] = [
        {"handler": h.handler, "handler_version": h.handler_version} for h in record.handlers
    ]
    data.update(
        {
            "queues": shown,
            "handlers": handlers,
            "slots": record.slots,
            "in_flight": record.in_flight,
            "connected_at": format_time(record.connected_at),
            "last_heartbeat_at": format_time(record.last_heartbeat_at),
        }
    )
    return data


def listing(
    records: Sequence[WorkerRecord], namespace_id: str, queue_ids: frozenset[str]
) -> list[dict[str, JsonValue]]:
    """The views of the namespace's workers serving any of `queue_ids`, by name, then
    connection id (each connection once: this process's own record wins over a row)."""
    seen: set[str] = set()
    views = []
    for record in records:
        if record.namespace_id != namespace_id or record.connection_id in seen:
            continue
        seen.add(record.connection_id)
        found = view(record, queue_ids)
        if found is not None:
            views.append(found)
    return sorted(views, key=lambda v: (str(v["name"]), str(v["connection_id"])))
