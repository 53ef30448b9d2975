"""Task control assembled from the D's components: one object for the service to wire.

``run()`` is one supervised loop: it re-queues unfinished control processings and
interrupted drains (restart), then consumes the control queue forever. Controls are not
held behind the start-up gate (D-DISC-6). ``after_discovery`` is the discovery hook.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypedDict

from aio_pika.abc import AbstractChannel

from agentcall.dispatcher.cell.port import CellPort
from agentcall.dispatcher.control.adapters import (
    CacheTaskReader,
    CellActiveCalls,
    RegistryConsumers,
)
from agentcall.dispatcher.control.consumer import ControlQueueConsumer
from agentcall.dispatcher.control.drain import AmqpDrainer
from agentcall.dispatcher.control.lanes import TaskLanes
from agentcall.dispatcher.control.procedures import ControlProcessor
from agentcall.dispatcher.control.service import ControlService
from agentcall.dispatcher.control.transaction import SqliteControlStore
from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier
from agentcall.dispatcher.domain.validity import DEFAULT_CLOCK_SKEW_S
from agentcall.dispatcher.mq.consumers import TaskConsumers
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.saas.cache import ConfigCache
from agentcall.dispatcher.store.db import Database


class ControlQueueStatus(TypedDict):
    queue: str
    state: str
    last_error: str | None


class ControlStatus(TypedDict):
    """Task control in /status: its queue consumer, counts, busy lanes, drains."""

    consumer: ControlQueueStatus
    received: int
    dead_lettered: int
    lanes: dict[str, dict[str, object]]
    drained: dict[str, int]


class ControlPlane:
    def __init__(
        self,
        *,
        dispatcher_id: str,
        routing_key: str,
        db: Database,
        cache: ConfigCache,
        registry: TaskConsumers,
        wake_consumers: Callable[[], None],
        link: AmqpLink,
        cell: CellPort,
        clock: Callable[[], datetime],
        on_receipt: Callable[[], None],
        drain_parallel: int = 16,
        skew_s: float = DEFAULT_CLOCK_SKEW_S,
    ) -> None:
        self._link = link
        self.store = SqliteControlStore(db, routing_key)
        self.lanes = TaskLanes()
        self.processor = ControlProcessor(
            self.store,
            CacheTaskReader(cache),
            RegistryConsumers(registry, wake_consumers),
            AmqpDrainer(self._channel, dispatcher_id, parallel=drain_parallel),
            CellActiveCalls(db, cell),
            clock=clock,
            on_receipt=on_receipt,
            skew_s=skew_s,
        )
        self.service = ControlService(
            self.store, self.processor, self.lanes, dispatcher_id=dispatcher_id, clock=clock
        )
        self.consumer = ControlQueueConsumer(self._channel, dispatcher_id, self.service.handle)

    async def _channel(self) -> AbstractChannel:
        await self._link.connected.wait()
        return await self._link.channel()

    async def run(self) -> None:
        await self.service.recover()
        try:
            await self.consumer.run()
        finally:
            await self.lanes.close()

    def after_discovery(
        self, stored: dict[str, LocalTask], changed: tuple[DiscoveredTask, ...]
    ) -> None:
        """Rows a page persisted with a barrier (closed, removed…): align their consumers."""
        self.service.after_discovery(
            task.task_id
            for task in changed
            if task.task_id in stored and stored[task.task_id].barrier is not Barrier.NONE
        )

    def status(self) -> ControlStatus:
        service = self.service.status()
        return {
            "consumer": {
                "queue": self.consumer.queue,
                "state": self.consumer.state,
                "last_error": self.consumer.last_error,
            },
            "received": service["received"],
            "dead_lettered": service["dead_lettered"],
            "lanes": service["lanes"],
            "drained": service["drained"],
        }
