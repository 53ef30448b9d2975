"""Paced load for ``bench/dispatcher_commands.py --paced``: latency at a steady rate.

After the full-load run has measured the D's maximum rate, a fresh D identity is offered
``load`` (default 50 %) of that rate, steadily, for a fixed time: the publisher sends the
commands due every few milliseconds (persistent, mandatory, confirmed, confirms pipelined)
instead of all at once. What it reports is the D's own measure, read from its ``/status``
after the run: delivery of a ``call.execute`` (its ``Basic.Deliver`` handed to the D) to the
commit of its admission decision, p50/p99 over every command of the run (a fresh D, so no
sample of the full-load run is mixed in). The same samples feed the D's
``dispatcher_admission_latency_seconds`` histogram on ``/metrics``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aio_pika

TICK_S = 0.005  # the publisher wakes this often and sends what is due


@dataclass(frozen=True)
class Paced:
    rate: float  # offered commands/s
    seconds: float  # how long it was offered
    sent: int
    achieved: float  # commands/s the publisher really sent
    elapsed: float  # first publish to the last result delivered
    latency: dict[str, Any]  # the D's delivery -> decision commit p50/p99 (ms)
    cpu: dict[str, float]  # CPU seconds per process during the run


async def publish_paced(
    amqp: str, bodies: Callable[[int], tuple[str, str, bytes]], rate: float, seconds: float
) -> tuple[int, float]:
    """Publish ``bodies(i)`` at ``rate`` per second for ``seconds``; returns how many were
    sent and the time it took (every confirm received)."""
    total = max(1, int(rate * seconds))
    connection = await aio_pika.connect(amqp)
    async with connection:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchanges: dict[str, Any] = {}
        pending: list[asyncio.Future[Any]] = []
        started = time.monotonic()
        sent = 0
        while sent < total:
            due = min(total, int((time.monotonic() - started) * rate) + 1)
            for i in range(sent, due):
                exchange_name, route, body = bodies(i)
                if exchange_name not in exchanges:
                    exchanges[exchange_name] = await channel.get_exchange(
                        exchange_name, ensure=False
                    )
                message = aio_pika.Message(
                    body,
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    message_id=str(uuid.uuid4()),
                )
                publish = exchanges[exchange_name].publish(message, route, mandatory=True)
                pending.append(asyncio.ensure_future(publish))
            sent = due
            await asyncio.sleep(TICK_S)
        await asyncio.gather(*pending)
        return sent, time.monotonic() - started


def line(paced: Paced, load: float) -> str:
    latency = paced.latency
    return (
        f"at {load:.0%} of max ({paced.rate:,.0f}/s offered, {paced.achieved:,.0f}/s sent for"
        f" {paced.seconds:.0f} s, {paced.sent} commands): delivery->decision commit"
        f" p50={latency['p50_ms']} ms  p99={latency['p99_ms']} ms"
        f" ({latency['samples']} samples)"
    )
