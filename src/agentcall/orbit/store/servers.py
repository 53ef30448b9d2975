"""The `orbit_servers` registrations (agentcall.orbit.domain.peers): each server process inserts its
row at start, renews its heartbeat about once a second (re-inserting it if someone deleted it),
reads the others, deletes long-dead rows, and deletes its own at a clean stop. Times are the
database clock's. The rows of a process's connected workers (`agentcall.orbit.store.server_workers`)
are written in its heartbeat's transaction and deleted with its registration, and so are the
worker slots it offered to the others (`agentcall.orbit.store.offers`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.peers import Registration
from agentcall.orbit.store import offers, server_workers
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import orbit_servers

# more writes of the heartbeat's transaction: (connection, row was re-inserted) -> None
Also = Callable[[AsyncConnection, bool], Awaitable[None]]


class Servers:
    def __init__(self, db: Database, server_id: str, host: str, port: int) -> None:
        self.db = db
        self.server_id = server_id
        self.host = host
        self.port = port

    async def beat(self, also: Also | None = None) -> tuple[datetime, list[Registration]]:
        """Renew (or create) this process's row, and run `also` in the same transaction; the
        database time and every registration."""
        async with self.db.write() as conn:
            now = await self.db.now(conn)
            renewed = await conn.execute(
                orbit_servers.update()
                .where(orbit_servers.c.id == self.server_id)
                .values(heartbeat_at=now, host=self.host, port=self.port)
            )
            if renewed.rowcount == 0:
                await conn.execute(
                    orbit_servers.insert().values(
                        id=self.server_id,
                        host=self.host,
                        port=self.port,
                        started_at=now,
                        heartbeat_at=now,
                    )
                )
            if also is not None:
                await also(conn, renewed.rowcount == 0)
            rows = (await conn.execute(sa.select(orbit_servers))).all()
        found = [Registration(r.id, r.host, int(r.port), r.heartbeat_at) for r in rows]
        return now, found

    async def forget(self, server_ids: Sequence[str]) -> None:
        """Delete registrations (long-dead ones, or this process's own at a clean stop)."""
        if not server_ids:
            return
        async with self.db.write() as conn:
            await server_workers.forget(conn, server_ids)
            await offers.forget(conn, server_ids)
            await conn.execute(orbit_servers.delete().where(orbit_servers.c.id.in_(server_ids)))
