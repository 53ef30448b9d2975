"""Outbox relay: publishes pending outbox rows in order until each one is confirmed.

A nack, a mandatory return, a timeout or a lost connection leaves the row ``pending``;
the next flush republishes the same stored body (D-MQ-3 from the SaaS side).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from agentcall.mocksaas.amqp.broker import Broker
from agentcall.mocksaas.domain.timefmt import rfc3339
from agentcall.mocksaas.metrics import Metrics
from agentcall.mocksaas.store import outbox
from agentcall.mocksaas.store.db import Database

log = logging.getLogger("mocksaas.relay")


class Relay:
    def __init__(
        self,
        db: Database,
        broker: Broker,
        clock: Callable[[], datetime],
        metrics: Metrics | None = None,
    ) -> None:
        self._db = db
        self._metrics = metrics
        self._broker = broker
        self._clock = clock
        self._lock = asyncio.Lock()
        self.published = 0
        self.failed_attempts = 0

    async def flush(self) -> int:
        """Publish every pending row once, oldest first; returns how many stay pending."""
        async with self._lock:
            rows = await self._db.run(outbox.pending, 10_000)
            if not rows:
                return 0
            outcomes = await self._broker.publish([r.message for r in rows])
            marks = [(r.id, err) for r, err in zip(rows, outcomes, strict=True)]
            await self._db.run(outbox.mark, marks, rfc3339(self._clock()))
            failed = [(r, e) for r, e in zip(rows, outcomes, strict=True) if e is not None]
            self.published += len(rows) - len(failed)
            self.failed_attempts += len(failed)
            for row, error in failed[:5]:
                log.warning(
                    "publish not confirmed; will retry with the same body",
                    extra={
                        "fields": {
                            "outbox_id": row.id,
                            "kind": row.message.kind,
                            "routing_key": row.message.routing_key,
                            "error": error,
                        }
                    },
                )
            return len(failed)

    async def run(self, interval_s: float = 1.0) -> None:
        """Background loop: retry pending rows every ``interval_s``."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.flush()
            except Exception as exc:  # noqa: BLE001 - keep retrying; logged and counted
                if self._metrics is not None:
                    self._metrics.handled.labels("relay.flush").inc()
                log.warning("relay flush failed", extra={"fields": {"error": repr(exc)}})
