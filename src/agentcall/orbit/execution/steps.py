"""Adapters that run one worker message as a batcher step (`(conn, now) -> answer`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.worker_errors import ProtocolError
from agentcall.orbit.execution.acks import Ack, Peer
from agentcall.orbit.protocol.messages import Evidence, Heartbeat

Step = Callable[[AsyncConnection, datetime], Awaitable[Ack]]


async def call(method: Any, peer: Peer, message: Any, conn: AsyncConnection, now: datetime) -> Ack:
    result: Ack = await method(conn, now, peer, message)
    return result


async def call_evidence(
    method: Any, peer: Peer, message: Evidence, conn: AsyncConnection, now: datetime
) -> Ack:
    result: Ack = await method(conn, now, peer, message.ref, message.items)
    return result


async def heartbeat(
    method: Any, peer: Peer, message: Heartbeat, conn: AsyncConnection, now: datetime
) -> list[dict[str, JsonValue]]:
    result: list[dict[str, JsonValue]] = await method(conn, now, peer, message.refs)
    return result


async def guard(step: Step, attempt_id: str, conn: AsyncConnection, now: datetime) -> Ack:
    """Protocol refusals are answers, not failures (checks precede writes in every step)."""
    try:
        return await step(conn, now)
    except ProtocolError as exc:
        return Ack.refused(exc, attempt_id)
