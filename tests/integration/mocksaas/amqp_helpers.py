"""Raw AMQP helpers for observing the topology and talking as the Dispatcher would."""

from __future__ import annotations

import json
from typing import Any

import aio_pika
import aiormq
from aio_pika.abc import AbstractIncomingMessage, AbstractRobustConnection

RESULT_EXCHANGE = "agent-call.saas.v3"


async def message_count(conn: AbstractRobustConnection, queue: str) -> int | None:
    """Messages ready in ``queue`` (passive declare), or None when it does not exist."""
    channel = await conn.channel()
    try:
        q = await channel.declare_queue(queue, passive=True)
        count = q.declaration_result.message_count
        return int(count)
    except aiormq.exceptions.ChannelNotFoundEntity:
        return None
    finally:
        if not channel.is_closed:
            await channel.close()


async def publish_result(conn: AbstractRobustConnection, dispatcher_id: str, body: Any) -> None:
    """Publish like the D: result exchange, route d.<D>.out, persistent, mandatory, confirmed."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    channel = await conn.channel(publisher_confirms=True, on_return_raises=True)
    exchange = await channel.get_exchange(RESULT_EXCHANGE, ensure=False)
    await exchange.publish(
        aio_pika.Message(raw, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
        routing_key=f"d.{dispatcher_id}.out",
        mandatory=True,
    )
    await channel.close()


async def drain(conn: AbstractRobustConnection, queue: str) -> list[AbstractIncomingMessage]:
    """basic.get every ready message (acked)."""
    channel = await conn.channel()
    q = await channel.get_queue(queue, ensure=False)
    out = []
    while (m := await q.get(fail=False, no_ack=True)) is not None:
        out.append(m)
    await channel.close()
    return out
