"""The outbox relay: publishes stored results and marks them delivered only when safe.

Every pending row is published to ``agent-call.saas.v3`` with routing key
``d.<dispatcher_id>.out`` as a persistent, mandatory message on a channel with publisher
confirms; ``message_id`` is the event_id. A row becomes ``delivered`` only on a positive
confirm with no mandatory return (D-MQ-4). A nack, a return (e.g. the SaaS result queue
does not exist yet), a timeout or a lost connection leaves it ``pending``; it is
republished later with the same event_id and the same bytes, after the D's reconnect
policy's delay for the failed rounds in a row (``domain/reconnect.py``, capped at
``retry_s``). Rows blocked as too large
are never read here (D-ID-3).

A round is published on the confirm channel's aiormq layer in one write
(:func:`agentcall.dispatcher.mq.confirms.publish_round`): the properties are the ones aio-pika
would send (``content_type``, persistent, ``message_id``, ``type``, empty headers), every
message of the round is in flight at once (confirms pipelined), and only its own confirm
(or return, nack, timeout) decides each row. The channel is opened by aio-pika with
``on_return_raises``: a mandatory return fails that message (``PublishError``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

import aiormq

from agentcall.dispatcher.domain.reconnect import ReconnectPolicy
from agentcall.dispatcher.logs import log
from agentcall.dispatcher.mq.confirms import Outgoing, publish_round
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import RESULT_EXCHANGE
from agentcall.dispatcher.store import outbox
from agentcall.dispatcher.store.db import Database
from agentcall.dispatcher.store.outbox import OutboxRow
from agentcall.dispatcher.telemetry.port import NO_TELEMETRY, Telemetry
from agentcall.dispatcher.telemetry.tracing import NO_TRACING, Tracing

LOG = logging.getLogger("dispatcher.outbox")
CONFIRM_TIMEOUT_S = 60.0
PERSISTENT = 2


def properties(row: OutboxRow) -> aiormq.spec.Basic.Properties:
    """AMQP properties of a result: those of ``aio_pika.Message(body, content_type=...,
    delivery_mode=PERSISTENT, message_id=event_id, type=event_type)``."""
    return aiormq.spec.Basic.Properties(
        content_type="application/json",
        headers={},
        delivery_mode=PERSISTENT,
        priority=0,
        message_id=row.event_id,
        message_type=row.event_type,
    )


@dataclass(frozen=True)
class RelayStatus:
    published: int
    failures: int
    last_error: str | None


class OutboxRelay:
    def __init__(
        self,
        db: Database,
        link: AmqpLink,
        *,
        batch: int,
        retry_s: float,
        clock: Callable[[], datetime],
        telemetry: Telemetry = NO_TELEMETRY,
        jitter: Callable[[], float] = random.random,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        self._db = db
        self._tracing = tracing
        self._link = link
        self._telemetry = telemetry
        self._batch = batch
        self._retry = retry_s  # the idle poll, and the longest pause after failed rounds
        self._policy = ReconnectPolicy(base_s=retry_s / 8, cap_s=retry_s)
        self._jitter = jitter
        self._failed_rounds = 0  # rounds in a row with an unconfirmed publish
        self._clock = clock
        self._wake = asyncio.Event()
        self.published = 0
        self.failures = 0
        self.last_error: str | None = None

    def wake(self) -> None:
        self._wake.set()

    def status(self) -> RelayStatus:
        return RelayStatus(self.published, self.failures, self.last_error)

    async def run(self) -> None:
        while True:
            await self._link.connected.wait()
            self._wake.clear()
            rows = await self._db.read(outbox.pending, self._batch)
            if not rows:
                await self._idle(self._retry)
                continue
            failed = await self._publish_all(rows)
            self._failed_rounds = self._failed_rounds + 1 if failed else 0
            if failed:
                await asyncio.sleep(self._policy.delay(self._failed_rounds, self._jitter()))

    async def _idle(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            pass

    async def _channel(self) -> aiormq.Channel | None:
        """The confirm channel's aiormq layer, or None (the error is recorded)."""
        try:
            channel = await self._link.publisher_channel()
            raw = None if channel is None else await channel.get_underlay_channel()
        except (aiormq.exceptions.AMQPError, ConnectionError, OSError, RuntimeError) as exc:
            self.last_error = f"publisher channel: {exc!r}"[:200]
            return None
        assert raw is None or isinstance(raw, aiormq.Channel)  # its only implementation
        return raw

    async def _publish_all(self, rows: list[OutboxRow]) -> int:
        raw = await self._channel()
        if raw is None:
            return len(rows)
        started = time.monotonic()
        errors = await self._publish(raw, rows)
        if self._tracing.on:
            self._tracing.delivered([row.event_id for row in rows], errors, started)
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
        self._report(row for row, error in zip(rows, errors, strict=True) if error is None)
        return len(failures)

    def _report(self, delivered: Iterable[OutboxRow]) -> None:
        """Each confirmed call.result counts its call's outcome and recording status."""
        for row in delivered:
            if row.event_type != "call.result":
                continue
            try:  # the D's own body (schema-checked when stored): this never fails
                payload = json.loads(row.body)["payload"]
                outcome, reason = payload["outcome"], payload["reason_code"] or "none"
                recording = payload["recording"]["status"]
                task_id = str(payload.get("task_id") or "")
            except (ValueError, KeyError, TypeError):
                continue
            self._telemetry.call_result(outcome, reason, recording, task_id)

    async def _publish(self, channel: aiormq.Channel, rows: list[OutboxRow]) -> list[str | None]:
        """Per row None when confirmed and not returned, else a short error text."""
        messages = [Outgoing(row.body, row.routing_key, properties(row)) for row in rows]
        try:
            return await publish_round(channel, RESULT_EXCHANGE, messages, CONFIRM_TIMEOUT_S)
        except (aiormq.exceptions.AMQPError, ConnectionError, RuntimeError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:200]  # e.g. the channel closed meanwhile
            return [error] * len(rows)
