"""Each queue's `(namespace, queue)` names for the metrics, read once per queue: names never
change, so the whole table is read at the first scrape and only new queues afterwards."""

from __future__ import annotations

from collections.abc import Iterable

from agentcall.orbit.store.db import Database
from agentcall.orbit.store.queue_labels import queue_labels


class QueueLabels:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._known: dict[str, tuple[str, str]] = {}
        self._loaded = False

    async def of(self, queue_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The names of `queue_ids`; a queue that is not (or no longer) in the database has
        none."""
        wanted = set(queue_ids)
        missing = sorted(wanted - self._known.keys())
        if missing:
            everything = not self._loaded
            found = await self.db.retrying(lambda: self._read(None if everything else missing))
            self._known.update(found)
            self._loaded = True
        return {q: self._known[q] for q in wanted if q in self._known}

    async def _read(self, queue_ids: list[str] | None) -> dict[str, tuple[str, str]]:
        async with self.db.single_read() as conn:
            return await queue_labels(conn, queue_ids)
