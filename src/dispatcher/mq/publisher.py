"""The outbox relay: publishes stored results and marks them delivered only when safe.

Every pending row is published to ``agent-call.saas.v3`` with routing key
``d.<dispatcher_id>.out`` as a persistent, mandatory message on a channel with publisher
confirms; ``message_id`` is the event_id. A row becomes ``delivered`` only on a positive
confirm with no mandatory return (D-MQ-4). A nack, a return (e.g. the SaaS result queue
does not exist yet), a timeout or a lost connection leaves it ``pending``; it is
republished later with the same event_id and the same bytes. Rows blocked as too large
are never read here (D-ID-3).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

import aio_pika
import aiormq
from aio_pika.abc import AbstractExchange

from dispatcher.logs import log
from dispatcher.mq.link import AmqpLink
from dispatcher.mq.names import RESULT_EXCHANGE
from dispatcher.store import outbox
from dispatcher.store.db import Database
from dispatcher.store.outbox import OutboxRow

LOG = logging.getLogger("dispatcher.outbox")
CONFIRM_TIMEOUT_S = 60.0


class OutboxRelay:
    def __init__(
        self,
        db: Database,
        link: AmqpLink,
        *,
        batch: int,
        retry_s: float,
        clock: Callable[[], datetime],
    ) -> None:
        self._db = db
        self._link = link
        self._batch = batch
        self._retry = retry_s
        self._clock = clock
        self._wake = asyncio.Event()
        self.published = 0
        self.failures = 0
        self.last_error: str | None = None

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._link.connected.wait()
            self._wake.clear()
            rows = await self._db.read(outbox.pending, self._batch)
            if not rows:
                await self._idle(self._retry)
                continue
            failed = await self._publish_all(rows)
            if failed:
                await asyncio.sleep(self._retry)

    async def _idle(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            pass

    async def _publish_all(self, rows: list[OutboxRow]) -> int:
        try:
            channel = await self._link.publisher_channel()
        except (aiormq.exceptions.AMQPError, ConnectionError, OSError) as exc:
            self.last_error = f"publisher channel: {exc!r}"[:200]
            return len(rows)
        if channel is None:
            return len(rows)
        exchange = await channel.get_exchange(RESULT_EXCHANGE, ensure=False)
        errors = await asyncio.gather(*(self._publish(exchange, row) for row in rows))
        delivered = [row.seq for row, error in zip(rows, errors, strict=True) if error is None]
        failures = [(row.seq, e) for row, e in zip(rows, errors, strict=True) if e is not None]
        if delivered:
            await self._db.write(outbox.mark_delivered, delivered, self._clock())
        if failures:
            await self._db.write(outbox.mark_failed, failures)
            self.failures += len(failures)
            self.last_error = failures[0][1]
            log(LOG, logging.WARNING, "outbox.retry", failed=len(failures), error=failures[0][1])
        self.published += len(delivered)
        return len(failures)

    async def _publish(self, exchange: AbstractExchange, row: OutboxRow) -> str | None:
        """None when confirmed and not returned, else a short error text."""
        message = aio_pika.Message(
            body=row.body,
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            message_id=row.event_id,
            type=row.event_type,
        )
        try:
            confirm = await exchange.publish(
                message, row.routing_key, mandatory=True, timeout=CONFIRM_TIMEOUT_S
            )
        except aio_pika.exceptions.PublishError:
            return "returned: no queue bound for the result route (mandatory)"
        except aio_pika.exceptions.DeliveryError:
            return "nacked by the broker"
        except (TimeoutError, aiormq.exceptions.AMQPError, ConnectionError, RuntimeError) as exc:
            return f"{type(exc).__name__}: {exc}"[:200]
        if isinstance(confirm, aiormq.spec.Basic.Ack):
            return None
        return "returned: not confirmed"
