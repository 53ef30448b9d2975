"""The admission service: decode deliveries, gather verified config, decide, settle.

For a batch of deliveries: invalid bodies become redacted facts and are dead-lettered
(D-MQ-5); deliveries of a task whose consumer was cancelled meanwhile go back to their
queue (``nack(requeue=true)``, never ACK-dropped); valid commands are decided in one
transaction (:mod:`agentcall.dispatcher.admission.transaction`) and each delivery is settled only
after that commit (D-MQ-4), per channel in as few frames as that allows
(:mod:`agentcall.dispatcher.mq.settle`). Accepted executions are then handed to the call supervisor.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TypeVar

from agentcall.dispatcher import contracts
from agentcall.dispatcher.admission.transaction import (
    Inputs,
    Invalid,
    Item,
    Outcome,
    Valid,
    run_batch,
)
from agentcall.dispatcher.domain.callids import call_result_event_id
from agentcall.dispatcher.domain.model import ExecuteCommand, TenantQuota
from agentcall.dispatcher.domain.outage import SIP, STALE, Read, ReadKey
from agentcall.dispatcher.domain.validity import DEFAULT_CLOCK_SKEW_S
from agentcall.dispatcher.logs import handled
from agentcall.dispatcher.mq.consumers import Delivery
from agentcall.dispatcher.mq.settle import ChannelAcks, Settle
from agentcall.dispatcher.saas.cache import ConfigCache, TaskLookup
from agentcall.dispatcher.saas.outage import SaasOutages
from agentcall.dispatcher.saas.parse import parse_command
from agentcall.dispatcher.store import rejected
from agentcall.dispatcher.store.db import Database
from agentcall.dispatcher.telemetry.port import NO_TELEMETRY, Telemetry
from agentcall.dispatcher.telemetry.tracing import NO_TRACING, Decided, Tracing

LOG = logging.getLogger("dispatcher.admission")
T = TypeVar("T")


def classify(delivery: Delivery) -> Item:
    """A delivery as a command, or as an invalid input to record and dead-letter (D-MQ-5).

    No body can make this raise: what the decoder refuses, what it accepts but cannot
    become a command (a date beyond the datetime range), and — last line — anything
    unforeseen (logged and counted as ``admission.decode``) are all :class:`Invalid`.
    """
    raw, source = delivery.body, f"mq:{delivery.queue}"
    try:
        body = contracts.decode(contracts.Kind.CALL_EXECUTE, raw)
        assert isinstance(body, dict)
        command = parse_command(body)
        for at in (command.issued_at, command.not_after):
            at.astimezone(UTC)  # OverflowError for e.g. 0001-01-01T00:00:00+23:59
    except contracts.ContractError as exc:
        reason = "invalid_json" if exc.keyword in ("json", "maxBytes") else "schema_violation"
        return Invalid(source, reason, str(exc), raw)
    except (ValueError, OverflowError) as exc:
        return Invalid(source, "schema_violation", f"unusable value ({type(exc).__name__})", raw)
    except Exception as exc:  # the last line: no body may stop the intake (D-MQ-5)
        handled(LOG, "admission.decode", exc, queue=delivery.queue)
        return Invalid(source, "undecodable", f"decoding failed ({type(exc).__name__})", raw)
    return Valid(command, delivery.task_id)


def accepted_arrivals(
    received: Sequence[T], items: Sequence[Item], outcome: Outcome
) -> dict[str, T]:
    """When the command of each execution accepted in a batch arrived (``received`` and
    ``items`` in delivery order). Every valid item has one decision, in order, and the
    accepted executions follow the accepted decisions in order; nothing here may stop
    admission, hence no strict zip."""
    valid = [r for r, item in zip(received, items, strict=False) if isinstance(item, Valid)]
    arrived = [
        r
        for r, (decision, _) in zip(valid, outcome.decisions, strict=False)
        if decision == "accepted"
    ]
    return dict(zip(outcome.accepted, arrived, strict=False))


def decided_commands(
    deliveries: Sequence[Delivery], items: Sequence[Item], outcome: Outcome
) -> list[Decided]:
    """The valid commands of a batch with their decisions, for their traces."""
    valid = [(d, i) for d, i in zip(deliveries, items, strict=False) if isinstance(i, Valid)]
    executions = iter(outcome.accepted)
    found = []
    for (delivery, item), (decision, reason) in zip(valid, outcome.decisions, strict=False):
        command = item.command
        decided = Decided(delivery, command.command_id, command.task_id, decision, reason)
        if decision == "accepted":
            execution_id = next(executions, None)
            event_id = None if execution_id is None else call_result_event_id(execution_id)
            decided = replace(decided, execution_id=execution_id, result_event_id=event_id)
        found.append(decided)
    return found


@dataclass(frozen=True)
class AdmissionStatus:
    latency: dict[str, float | None]
    decide: dict[str, float | None]
    commands: dict[str, int]


class AdmissionService:
    def __init__(
        self,
        db: Database,
        cache: ConfigCache,
        *,
        dispatcher_id: str,
        routing_key: str,
        clock: Callable[[], datetime],
        is_consuming: Callable[[str], bool],
        on_accepted: Callable[[list[str]], None],
        on_outbox: Callable[[], None],
        outages: SaasOutages | None = None,
        hold: Callable[[list[str]], Awaitable[None]] | None = None,
        skew_s: float = DEFAULT_CLOCK_SKEW_S,
        telemetry: Telemetry = NO_TELEMETRY,
        amd: str | None = None,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        self._telemetry = telemetry
        self._tracing = tracing
        self._amd = amd
        self._outages = outages
        self._hold = hold
        self._skew_s = skew_s
        self._db = db
        self._cache = cache
        self._dispatcher_id = dispatcher_id
        self._routing_key = routing_key
        self._clock = clock
        self._is_consuming = is_consuming
        self._on_accepted = on_accepted
        self._on_outbox = on_outbox
        self.counts: Counter[str] = Counter()
        self.latencies: deque[float] = deque(maxlen=20_000)
        self.decide_times: deque[float] = deque(maxlen=20_000)

    async def process(self, batch: list[Delivery]) -> None:
        live = [d for d in batch if self._is_consuming(d.task_id)]
        gone = [d for d in batch if not self._is_consuming(d.task_id)]
        await _settle(gone, [Settle.REQUEUE] * len(gone))
        if not live:
            return
        items = [self._own(classify(d), d) for d in live]
        inputs = await self._inputs(items)
        outcome = await self._db.write(run_batch, items, inputs)
        await self._held(outcome.held | outcome.stale, outcome.stale)
        done = time.monotonic()
        self.latencies.extend(done - d.received for d in live)
        self.decide_times.extend(outcome.decide_s)
        self._observe(live, items, outcome, done)
        for decision, reason in outcome.decisions:
            self.counts[f"{decision}:{reason}"] += 1
        tasks = [item.command.task_id for item in items if isinstance(item, Valid)]
        decided = zip(tasks, (d for d, _ in outcome.decisions), strict=False)
        self._telemetry.commands_decided(list(decided))
        self.counts["dead_lettered"] += outcome.settles.count(Settle.DEAD_LETTER)
        await _settle(live, outcome.settles)
        self._on_outbox()
        if outcome.accepted:
            self._on_accepted(outcome.accepted)

    async def quarantine(self, delivery: Delivery, exc: Exception) -> None:
        """A delivery whose processing fails even alone: logged and counted, recorded
        redacted and dead-lettered (D-MQ-5), so the commands after it go on."""
        handled(LOG, "admission.process", exc, queue=delivery.queue)
        detail = f"processing failed ({type(exc).__name__})"
        source = f"mq:{delivery.queue}"
        await self._db.write(_record_rejected, source, detail, delivery.body, self._clock())
        self.counts["dead_lettered"] += 1
        await _settle([delivery], [Settle.DEAD_LETTER])

    def _own(self, item: Item, delivery: Delivery) -> Item:
        """A command naming another dispatcher is dead-lettered like an invalid body,
        exactly as a task.control is (D-NOTE-4): no result, never dialled."""
        if isinstance(item, Valid) and item.command.dispatcher_id != self._dispatcher_id:
            source = f"mq:{delivery.queue}"
            return Invalid(source, "wrong_dispatcher", "dispatcher_id is not this D", delivery.body)
        return item

    async def _inputs(self, items: list[Item]) -> Inputs:
        valid = [i.command for i in items if isinstance(i, Valid)]
        task_ids = sorted({c.task_id for c in valid})
        if not task_ids:
            return Inputs(self._dispatcher_id, self._routing_key, None, {}, {}, self._clock())
        sip = await self._cache.sip()
        lookups = await asyncio.gather(*(self._cache.task(t) for t in task_ids))
        configs: dict[str, TaskLookup] = dict(zip(task_ids, lookups, strict=True))
        tenants = sorted({(c.config.tenant_id, c.config.tenant_key) for c in lookups if c.config})
        quotas = await asyncio.gather(*(self._cache.quota(t, k) for t, k in tenants))
        by_tenant: dict[tuple[str, str], TenantQuota | None] = dict(
            zip(tenants, quotas, strict=True)
        )
        held = self._report(sip is None, configs, by_tenant, valid)
        return Inputs(
            self._dispatcher_id,
            self._routing_key,
            sip,
            configs,
            by_tenant,
            self._clock(),
            held,
            self._skew_s,
            self._amd,
        )

    def _report(
        self,
        no_sip: bool,
        configs: dict[str, TaskLookup],
        quotas: dict[tuple[str, str], TenantQuota | None],
        commands: list[ExecuteCommand],
    ) -> dict[str, str]:
        """Transient read failures become outages; returns the tasks they hold."""
        outages = self._outages
        if outages is None:
            return {}
        if no_sip:
            self._outage(SIP)
        for task_id, lookup in configs.items():
            if lookup.config is None:
                self._outage(ReadKey(Read.TASK, task_id))
        for (tenant_id, tenant_key), quota in quotas.items():
            if quota is None:
                self._outage(ReadKey(Read.QUOTA, tenant_id), tenant_key)
        if not outages.active:
            return {}
        held: dict[str, str] = {}
        for command in commands:
            config = configs[command.task_id].config
            tenant = config.tenant_id if config else command.tenant_id
            key = outages.blocking(command.task_id, tenant)
            if key is not None:
                held[command.task_id] = str(key)
        return held

    def _outage(self, key: ReadKey, tenant_key: str = "") -> None:
        assert self._outages is not None
        failed = self._cache.failure(key)
        if failed is None or key in self._outages.active:
            return  # no failure, or the retry loop owns it already
        if self._outages.transient(failed.status, failed.code):
            self._outages.fail(key, failed.status, failed.code, tenant_key)

    async def _held(self, tasks: set[str], stale: set[str]) -> None:
        """Stop consuming what an outage holds before its deliveries go back (no storm)."""
        if self._outages is not None:
            for task_id in sorted(stale):
                key = ReadKey(Read.TASK, task_id)
                if key not in self._outages.active:
                    self._outages.fail(key, 200, STALE)
        if tasks and self._hold is not None:
            await self._hold(sorted(tasks))

    def _observe(
        self, live: list[Delivery], items: list[Item], outcome: Outcome, done: float
    ) -> None:
        """Report each delivery's latency and when each accepted command arrived."""
        for delivery in live:
            self._telemetry.admission_latency(done - delivery.received)
        if outcome.accepted:
            received = [d.received for d in live]
            self._telemetry.accepted(accepted_arrivals(received, items, outcome))
        if self._tracing.on:
            self._tracing.decided(decided_commands(live, items, outcome), done)

    def status(self) -> AdmissionStatus:
        return AdmissionStatus(self.percentiles(), self.decide_percentiles(), dict(self.counts))

    def decide_percentiles(self) -> dict[str, float | None]:
        """Time of the pure admission decision itself, in microseconds."""
        samples = sorted(self.decide_times)
        if not samples:
            return {"p50_us": None, "p99_us": None}
        return {
            "p50_us": _quantile_ms(samples, 0.50) * 1000,
            "p99_us": _quantile_ms(samples, 0.99) * 1000,
        }

    def percentiles(self) -> dict[str, float | None]:
        samples = sorted(self.latencies)
        if not samples:
            return {"p50_ms": None, "p99_ms": None, "samples": 0}
        return {
            "p50_ms": _quantile_ms(samples, 0.50),
            "p99_ms": _quantile_ms(samples, 0.99),
            "samples": len(samples),
        }


def _record_rejected(
    conn: sqlite3.Connection, source: str, detail: str, raw: bytes, now: datetime
) -> None:
    rejected.record(conn, source=source, reason="unprocessable", detail=detail, raw=raw, now=now)


def _quantile_ms(ordered: list[float], q: float) -> float:
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)


async def _settle(deliveries: list[Delivery], settles: list[Settle]) -> None:
    """Settle committed decisions, grouped by channel (one multiple ACK where it may)."""
    by_channel: dict[int, tuple[ChannelAcks, list[tuple[int, Settle]]]] = {}
    for delivery, settle in zip(deliveries, settles, strict=True):
        entry = by_channel.setdefault(id(delivery.acks), (delivery.acks, []))
        entry[1].append((delivery.tag, settle))
    for acks, items in by_channel.values():
        await acks.settle(items)
