"""The namespace's connected workers across the server processes of one database
(`agentcall.orbit.domain.worker_directory`): this process records its own in its registration
round (`record`, run in `Servers.beat`'s transaction by `agentcall.orbit.execution.peers`) and
reads the other live processes' rows for a listing (`others`, shared by every reader for up to
a second)."""

from __future__ import annotations

import os
import socket
import time
from datetime import UTC, datetime

from agentcall.orbit.domain.peers import EXPIRE_S
from agentcall.orbit.domain.worker_directory import WorkerRecord, changes, heartbeat_at
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.links import Link
from agentcall.orbit.store import server_workers
from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.db import Database

SERVER = f"{socket.gethostname()}:{os.getpid()}"
REWRITE_EVERY = 30  # rounds (about 30 s) between full rewrites of this process's rows
CACHE_S = 1.0  # the other processes' rows change once a round (about a second) anyway
MAX_CACHED = 1024  # namespaces


def record_of(link: Link, server: str = SERVER, now: datetime | None = None) -> WorkerRecord:
    """`now`: the time an idle link shows as its last heartbeat (`heartbeat_at`)."""
    peer, worker = link.peer, link.peer.worker
    held = link.held
    return WorkerRecord(
        peer.connection_id,
        peer.namespace_id,
        server,
        worker.name,
        worker.instance_id,
        worker.sdk,
        worker.host,
        worker.pid,
        tuple(link.queue_order),
        tuple(sorted(link.handlers)),
        link.capacity,
        held,  # an offered slot is still free
        link.connected_at,
        heartbeat_at(link.seen_at, held > 0, now or datetime.now(UTC)),
    )


def local(hub: Hub) -> list[WorkerRecord]:
    """The workers connected to this process, as they are now."""
    now = datetime.now(UTC)
    return [record_of(link, now=now) for link in hub.links.values()]


class WorkerDirectory:
    def __init__(self, db: Database, hub: Hub, server_id: str) -> None:
        self.db = db
        self.hub = hub
        self.server_id = server_id
        self._recorded: dict[str, WorkerRecord] | None = None  # None: not known, rewrite all
        self._rounds = 0
        self._cache: dict[str, tuple[float, list[WorkerRecord]]] = {}

    async def record(self, conn: HotConnection, reinserted: bool) -> None:
        """Write what changed among this process's workers since the last round (all of them
        after a failed round, a re-inserted registration, or every REWRITE_EVERY rounds)."""
        recorded = self._recorded
        if reinserted or self._rounds % REWRITE_EVERY == 0:
            recorded = None
        self._recorded, self._rounds = None, self._rounds + 1
        current = local(self.hub)
        plan = changes(recorded, current)
        if plan:
            await server_workers.apply(conn, self.server_id, plan)
        self._recorded = {record.connection_id: record for record in current}

    async def others(self, namespace_id: str) -> list[WorkerRecord]:
        """The namespace's workers recorded by the other live server processes."""
        cached = self._cache.get(namespace_id)
        if cached is not None and time.monotonic() - cached[0] < CACHE_S:
            return cached[1]
        found = await self.db.retrying(lambda: self._read(namespace_id))
        if len(self._cache) >= MAX_CACHED:
            self._cache.clear()
        self._cache[namespace_id] = (time.monotonic(), found)
        return found

    async def _read(self, namespace_id: str) -> list[WorkerRecord]:
        async with self.db.single_read() as conn:
            return await server_workers.recorded(conn, namespace_id, self.server_id, EXPIRE_S)
