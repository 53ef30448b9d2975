"""The hint edge (`agentcall.orbit.execution.peers`) with real UDP sockets on loopback and a real
database: two processes' registrations find each other; the queues named in one event-loop
turn reach the peer as one hint; a hostile datagram is ignored and counted; a clean stop
deletes the registration. On a SQLite file and on MariaDB."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.execution.peers import HintSender, Listener, PeerCounters, PeerHints
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import orbit_servers
from tests.support.orbit_databases import KINDS, fresh_url

pytestmark = pytest.mark.integration
Q1, Q2 = "1" * 32, "2" * 32


@pytest.fixture(params=KINDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_url(request.param, tmp_path, migrated=True) as found:
        yield found


@pytest.fixture
async def db(url: str) -> AsyncIterator[Database]:
    database = Database.open(url, pool_size=4)
    yield database
    await database.close()


class Heard:
    def __init__(self) -> None:
        self.hints: list[tuple[str, ...]] = []
        self.ignored = 0

    def counters(self) -> PeerCounters:
        return PeerCounters(ignored=self._ignored)

    def _ignored(self) -> None:
        self.ignored += 1


async def test_a_hint_leaves_at_once_the_rest_of_its_turn_coalesces_and_junk_is_ignored(
    db: Database,
) -> None:
    heard = Heard()
    a = PeerHints(db, new_id(), HintSender(), Listener(lambda queues: None))
    b = PeerHints(db, new_id(), HintSender(heard.counters()), Listener(heard.hints.append))
    await a.start()
    await b.start()
    try:
        await a._round()  # a sees b now (the heartbeat loop does this every second)
        assert a.sender.peers == (("127.0.0.1", b.servers.port),)
        a.sender.announce((Q2,))  # the first of a loop turn: at once
        a.sender.announce((Q1,))  # the rest of the same turn: one datagram at its end
        a.sender.announce((Q1, Q2))
        await _until(lambda: len(heard.hints) == 2)
        await asyncio.sleep(0.05)
        assert heard.hints == [(Q2,), (Q1, Q2)]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as hostile:
            for junk in (b"", b"\xff" * 2000, b"orbit.hint.1 DROP TABLE"):
                hostile.sendto(junk, ("127.0.0.1", b.servers.port))
        await _until(lambda: heard.ignored >= 2)
        a.sender.announce((Q1,))
        await _until(lambda: len(heard.hints) == 3)  # b still hears
    finally:
        await b.stop()
        await a.stop()
    async with db.read() as conn:
        assert (
            await conn.execute(sa.select(sa.func.count()).select_from(orbit_servers))
        ).scalar_one() == 0


async def _until(check: object, timeout: float = 5) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():  # type: ignore[operator]
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.01)
