"""Result consumer: one consumer per dispatcher result queue (D-MQ-2).

Every delivery is stored (invalid ones flagged, never dropped) and ACKed only after
the store committed; a valid ``stopped/applied`` receipt triggers queue retirement.

Deliveries are stored in batches: the consumers only queue them, and :meth:`ResultConsumer.run`
takes whatever has arrived (up to ``BATCH_MAX``), checks each body, stores them all in one
transaction and then ACKs them with one ``basic.ack(multiple=true)`` per channel, up to the
batch's highest delivery tag. That ACK covers nothing unsettled besides the batch: batches
are taken in arrival order and each is settled (ACKed, or requeued when the store failed)
before the next one is taken. Stored order is arrival order.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime

from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractQueue

from agentcall.mocksaas.amqp.broker import CHANNEL_TIMEOUT_S, LINK_ERRORS, Broker
from agentcall.mocksaas.contracts import Contracts
from agentcall.mocksaas.domain.results import ResultFacts, check_result, facts_of
from agentcall.mocksaas.domain.timefmt import rfc3339
from agentcall.mocksaas.errors import BrokerError
from agentcall.mocksaas.metrics import Metrics
from agentcall.mocksaas.store import outbox, results
from agentcall.mocksaas.store.db import Database
from agentcall.mocksaas.topology import Topology

log = logging.getLogger("mocksaas.results")
OnStopApplied = Callable[[str, str], Awaitable[object]]
BATCH_MAX = 256  # the channel's prefetch: one batch can hold every unsettled delivery
Arrived = tuple[str, AbstractIncomingMessage]


class ResultConsumer:
    def __init__(
        self,
        broker: Broker,
        db: Database,
        contracts: Contracts,
        topology: Topology,
        clock: Callable[[], datetime],
        on_stop_applied: OnStopApplied,
        metrics: Metrics,
    ) -> None:
        self._broker = broker
        self._db = db
        self._contracts = contracts
        self._topology = topology
        self._clock = clock
        self._on_stop_applied = on_stop_applied
        self._metrics = metrics
        self._channel: AbstractChannel | None = None
        self._consuming: dict[str, tuple[AbstractQueue, str]] = {}
        self._arrived: asyncio.Queue[Arrived] = asyncio.Queue()
        self.received = 0

    async def start(self, dispatcher_id: str) -> None:
        """Consume the dispatcher's result queue; :class:`BrokerError` if the broker cannot."""
        if dispatcher_id in self._consuming:
            return
        try:
            await asyncio.wait_for(self._consume(dispatcher_id), CHANNEL_TIMEOUT_S)
        except LINK_ERRORS as exc:
            raise BrokerError(f"consuming results failed: {type(exc).__name__}: {exc}") from exc

    async def _consume(self, dispatcher_id: str) -> None:
        if self._channel is None or self._channel.is_closed:
            self._channel = await self._broker.connection.channel()
            await self._channel.set_qos(prefetch_count=BATCH_MAX)
        name = self._topology.queue_name("result", dispatcher_id)
        queue = await self._channel.get_queue(name, ensure=True)

        async def handler(message: AbstractIncomingMessage) -> None:
            self._arrived.put_nowait((dispatcher_id, message))

        tag = await queue.consume(handler)
        self._consuming[dispatcher_id] = (queue, tag)

    async def stop(self, dispatcher_id: str) -> None:
        """Stop consuming the result queue of a dispatcher (before it is purged)."""
        found = self._consuming.pop(dispatcher_id, None)
        if found is not None:
            queue, tag = found
            await queue.cancel(tag)

    def _store(self, conn: sqlite3.Connection, records: list[results.ReceivedResult]) -> None:
        """Insert, in order; an execute result carries no task_id, so take it from the
        command the SaaS published (as a SaaS joins on its own command_id)."""
        for record in records:
            facts = record.facts
            if facts.task_id is None and facts.command_id and facts.command_type == "call.execute":
                route = outbox.route_of_command(conn, record.dispatcher_id, facts.command_id)
                task_id = route and self._topology.task_of_route(route, record.dispatcher_id)
                record = replace(record, facts=replace(facts, task_id=task_id or None))
            results.insert(conn, record)

    def _check(self, dispatcher_id: str, raw: bytes) -> tuple[ResultFacts, list[str]]:
        """Index facts and violations of a body; never raises, whatever ``raw`` holds."""
        try:
            body, errors = check_result(self._contracts, dispatcher_id, raw)
            return facts_of(body), errors
        except Exception as exc:  # the last line: no body may stop the consumer
            self._metrics.handled.labels("results.check").inc()
            log.error(
                "checking a result failed; stored as invalid",
                extra={"fields": {"dispatcher_id": dispatcher_id, "error": repr(exc)}},
            )
            return ResultFacts(), [f"$: cannot be checked ({type(exc).__name__})"]

    async def run(self) -> None:
        """Store and settle what the consumers queued, one batch at a time (a loop)."""
        while True:
            batch = [await self._arrived.get()]
            while len(batch) < BATCH_MAX and not self._arrived.empty():
                batch.append(self._arrived.get_nowait())
            await self.handle(batch)

    async def handle(self, batch: list[Arrived]) -> None:
        """Check, store in one transaction, then settle one batch of deliveries."""
        stamp = rfc3339(self._clock())
        records = []
        for dispatcher_id, message in batch:
            facts, errors = self._check(dispatcher_id, message.body)
            redelivered = bool(message.redelivered)
            received = (dispatcher_id, stamp, redelivered, facts, tuple(errors), message.body)
            records.append(results.ReceivedResult(*received))
        try:
            await self._db.run(self._store, records)
        except Exception:  # the store failed: the broker redelivers them later
            self._metrics.handled.labels("results.store").inc()
            log.exception("storing results failed; requeued")
            for _, message in batch:
                await _settle(message.nack(requeue=True))
            return
        await _ack([message for _, message in batch])
        self.received += len(batch)
        for record in records:
            await self._stored(record)

    async def _stored(self, record: results.ReceivedResult) -> None:
        facts, errors = record.facts, record.errors
        self._metrics.results.labels("false" if errors else "true").inc()
        if errors:
            log.warning(
                "invalid result stored",
                extra={
                    "fields": {
                        "dispatcher_id": record.dispatcher_id,
                        "event_id": facts.event_id,
                        "errors": list(errors[:3]),
                    }
                },
            )
        if not errors and facts.is_stop_applied and facts.task_id:
            try:
                await self._on_stop_applied(record.dispatcher_id, facts.task_id)
            except Exception as exc:  # noqa: BLE001 - the retirement sweep retries it
                self._metrics.handled.labels("results.retire").inc()
                log.warning(
                    "retiring after a stop receipt failed",
                    extra={"fields": {"dispatcher_id": record.dispatcher_id, "error": repr(exc)}},
                )


async def _ack(messages: list[AbstractIncomingMessage]) -> None:
    """One multiple ACK per channel, at the highest delivery tag of its messages."""
    last: dict[int, AbstractIncomingMessage] = {}
    for message in messages:
        key = id(message.channel)
        if key not in last or (message.delivery_tag or 0) > (last[key].delivery_tag or 0):
            last[key] = message
    for message in last.values():
        await _settle(message.ack(multiple=True))


async def _settle(settling: Awaitable[None]) -> None:
    """Send an ACK or nack; on a channel that is gone the broker redelivers instead."""
    try:
        await settling
    except LINK_ERRORS as exc:
        log.debug("settling a result failed", extra={"fields": {"error": repr(exc)}})
