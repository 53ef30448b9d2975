"""A worker's `heartbeat` (worker-protocol.md §3.5), and the re-binding of held attempts on
`hello`: each current lease is renewed (at most to its attempt deadline); an attempt whose
lease is not current any more is reported `lost` and leaves the connection's count."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial

from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.execution import steps
from agentcall.orbit.execution.acks import Peer
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.protocol.messages import AttemptRef, Heartbeat
from agentcall.orbit.store.connector import HotConnection

Statuses = list[dict[str, JsonValue]]


async def heartbeat(hub: Hub, peer: Peer, message: Heartbeat) -> Statuses:
    """One status per attempt named: `ok`, `cancel_requested` or `lost`."""
    step = partial(steps.heartbeat, hub.upkeep.heartbeat, peer, message)
    statuses: Statuses = await hub.batcher.run(step)
    for status in statuses:
        if status["status"] == "lost":
            hub.ended(str(status["attempt_id"]))
    return statuses


async def rebind(hub: Hub, peer: Peer, held: Sequence[AttemptRef]) -> tuple[Statuses, datetime]:
    """The statuses of the attempts a reconnecting worker holds, now bound to its new
    connection, and the database time of the check (for `hello_ok`)."""

    async def step(conn: HotConnection, now: datetime) -> tuple[Statuses, datetime]:
        if not held:
            return [], now
        return await hub.upkeep.heartbeat(conn, now, peer, held, rebind=True), now

    return await hub.batcher.run(step)
