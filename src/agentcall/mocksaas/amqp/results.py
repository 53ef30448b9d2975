"""Result consumer: one consumer per dispatcher result queue (D-MQ-2).

Every delivery is stored (invalid ones flagged, never dropped) and ACKed only after
the store committed; a valid ``stopped/applied`` receipt triggers queue retirement.
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
            await self._channel.set_qos(prefetch_count=256)
        name = self._topology.queue_name("result", dispatcher_id)
        queue = await self._channel.get_queue(name, ensure=True)

        async def handler(message: AbstractIncomingMessage) -> None:
            await self._handle(dispatcher_id, message)

        tag = await queue.consume(handler)
        self._consuming[dispatcher_id] = (queue, tag)

    async def stop(self, dispatcher_id: str) -> None:
        """Stop consuming the result queue of a dispatcher (before it is purged)."""
        found = self._consuming.pop(dispatcher_id, None)
        if found is not None:
            queue, tag = found
            await queue.cancel(tag)

    def _store(self, conn: sqlite3.Connection, record: results.ReceivedResult) -> int:
        """Insert; an execute result carries no task_id, so take it from the command the
        SaaS published (as a SaaS joins on its own command_id)."""
        facts = record.facts
        if facts.task_id is None and facts.command_id and facts.command_type == "call.execute":
            route = outbox.route_of_command(conn, record.dispatcher_id, facts.command_id)
            task_id = route and self._topology.task_of_route(route, record.dispatcher_id)
            record = replace(record, facts=replace(facts, task_id=task_id or None))
        return results.insert(conn, record)

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

    async def _handle(self, dispatcher_id: str, message: AbstractIncomingMessage) -> None:
        facts, errors = self._check(dispatcher_id, message.body)
        record = results.ReceivedResult(
            dispatcher_id,
            rfc3339(self._clock()),
            bool(message.redelivered),
            facts,
            tuple(errors),
            message.body,
        )
        try:
            await self._db.run(self._store, record)
        except Exception:  # the store failed: the broker redelivers it later
            self._metrics.handled.labels("results.store").inc()
            log.exception("storing a result failed; requeued")
            await message.nack(requeue=True)
            return
        await message.ack()
        self.received += 1
        self._metrics.results.labels("false" if errors else "true").inc()
        if errors:
            log.warning(
                "invalid result stored",
                extra={
                    "fields": {
                        "dispatcher_id": dispatcher_id,
                        "event_id": facts.event_id,
                        "errors": errors[:3],
                    }
                },
            )
        if not errors and facts.is_stop_applied and facts.task_id:
            await self._on_stop_applied(dispatcher_id, facts.task_id)
