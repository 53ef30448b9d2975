"""Runtime: wires the store, the broker, the contracts and the background loops.

Loops (named asyncio tasks, watched together by the server): the results store (what
the result consumers on the broker connection received), the outbox relay and the
retirement sweep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from agentcall.mocksaas.amqp.broker import Broker
from agentcall.mocksaas.amqp.relay import Relay
from agentcall.mocksaas.amqp.results import ResultConsumer
from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from agentcall.mocksaas.domain.tasks import QueueState, TaskStatus, should_retire
from agentcall.mocksaas.domain.timefmt import rfc3339
from agentcall.mocksaas.errors import MockSaasError
from agentcall.mocksaas.metrics import Metrics
from agentcall.mocksaas.settings import Settings
from agentcall.mocksaas.store import dispatchers, tasks
from agentcall.mocksaas.store.db import Database
from agentcall.mocksaas.topology import Topology

log = logging.getLogger("mocksaas")


class EmittedBodyInvalid(MockSaasError):
    hint = "a Mock SaaS bug: the body it built breaks contracts/dispatcher; report it"


def utcnow() -> datetime:
    return datetime.now(UTC)


class Runtime:
    def __init__(self, settings: Settings, clock: Callable[[], datetime] = utcnow) -> None:
        directory = settings.contracts_dir or find_contracts_dir()
        self.settings = settings
        self.clock = clock
        self.contracts = Contracts(directory)
        self.topology = Topology.load(directory)
        self.db = Database(settings.db_path)
        self.broker = Broker(settings.amqp_url)
        self.metrics = Metrics()
        self.relay = Relay(self.db, self.broker, clock, self.metrics)
        self.results = ResultConsumer(
            self.broker, self.db, self.contracts, self.topology, clock, self.retire, self.metrics
        )
        self.loops: list[asyncio.Task[None]] = []
        self._retire_lock = asyncio.Lock()

    def now(self) -> datetime:
        return self.clock()

    def stamp(self) -> str:
        return rfc3339(self.clock())

    def check_out(self, kind: str, body: Any) -> None:
        """Every body the Mock SaaS emits must validate (unless a fault is injected)."""
        problems = self.contracts.violations(kind, body)
        if problems:
            raise EmittedBodyInvalid(f"{kind}: {'; '.join(map(str, problems[:3]))}")

    async def start(self) -> None:
        await self.broker.connect()
        for dispatcher_id in await self.db.run(dispatchers.all_ids):
            await self.open_dispatcher(dispatcher_id)
            for task in await self.db.run(tasks.list_for, dispatcher_id):
                if task.queue_state is QueueState.ACTIVE:
                    await self.broker.declare(self.topology.for_task(dispatcher_id, task.task_id))
        self.loops = [
            asyncio.create_task(self.results.run(), name="results"),
            asyncio.create_task(self.relay.run(self.settings.relay_interval_s), name="relay"),
            asyncio.create_task(self._sweep_loop(), name="retirement-sweep"),
        ]
        await self.relay.flush()

    async def open_dispatcher(self, dispatcher_id: str) -> None:
        """Declare the per-D topology and consume its result queue."""
        await self.broker.declare(self.topology.for_dispatcher(dispatcher_id))
        await self.results.start(dispatcher_id)

    async def stop(self) -> None:
        for loop in self.loops:
            loop.cancel()
        await asyncio.gather(*self.loops, return_exceptions=True)
        await self.broker.close()
        self.db.close()

    # ---- queue retirement (§0, §3.4) ----------------------------------------
    async def retire(self, dispatcher_id: str, task_id: str) -> bool:
        """Unbind + delete the task queue, then append the ``removed`` tombstone."""
        async with self._retire_lock:
            task = await self.db.run(tasks.find, task_id)
            if task is None or task.dispatcher_id != dispatcher_id:
                return False
            if not should_retire(task.status, task.queue_state):
                return False
            await self.broker.retire(self.topology.for_task(dispatcher_id, task_id))
            await self.db.run(_mark_removed, task_id, self.stamp())
            self.metrics.retired.inc()
            log.info(
                "task queue retired; removed tombstone appended",
                extra={"fields": {"dispatcher_id": dispatcher_id, "task_id": task_id}},
            )
            return True

    async def retire_due(self) -> int:
        done = 0
        for dispatcher_id, task_id in await self.db.run(tasks.retirable):
            done += await self.retire(dispatcher_id, task_id)
        return done

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.relay_interval_s)
            try:
                await self.retire_due()
            except MockSaasError as exc:
                log.warning("retirement sweep failed", extra={"fields": {"error": str(exc)}})


def _mark_removed(conn: Any, task_id: str, at: str) -> None:
    task = tasks.find(conn, task_id)
    assert task is not None
    tasks.append_event(
        conn,
        replace(
            task,
            status=TaskStatus.REMOVED,
            task_revision=task.task_revision + 1,
            queue_state=QueueState.RETIRED,
            retired_at=at,
        ),
        at,
    )
