"""Every connection path of the store drops a lost MariaDB connection at once: the
SQLAlchemy pools (transactions and one-statement reads), the driver connections of the
submit groups (`hot_write`) and the kept write-lane connections (`KeptWriter`). The link to
the shared MariaDB goes through a TCP proxy that the test cuts (every connection dies, as
when the server is killed) and opens again at once (as a restarted server).

- after a quiet second, every path's first transaction succeeds (idle connections are
  pinged before use);
- under load, the first transaction that meets a dead connection fails (503: its outcome is
  unknown) and every transaction after it, on every path, succeeds: no connection opened
  before the loss is used again.

Before the fix, each dead pooled connection failed a request in turn (`InterfaceError (0,
'Not connected')` on the driver paths, whose errors bypassed SQLAlchemy's disconnect
handling), for about 22 s after a restart under load."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime

import pytest
from sqlalchemy.engine import make_url

from agentcall.orbit.domain.errors import Unavailable
from agentcall.orbit.store.db import Database, KeptWriter
from tests.support.orbit_databases import fresh_url
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]
Path_ = Callable[[], Awaitable[datetime]]


@pytest.fixture(scope="module")
def lost_db_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fresh_url("mariadb", tmp_path_factory.mktemp("lost"), migrated=True) as url:
        yield url


@pytest.fixture
async def proxied(lost_db_url: str) -> AsyncIterator[tuple[Database, TcpProxy]]:
    target = make_url(lost_db_url)
    proxy = TcpProxy("127.0.0.1", target.port or 3306).start()
    db = Database.open(
        target.set(port=proxy.port).render_as_string(hide_password=False), pool_size=4
    )
    try:
        yield db, proxy
    finally:
        await db.close()
        proxy.close()


def paths(db: Database) -> dict[str, Path_]:
    kept = KeptWriter(db)

    async def single_read() -> datetime:
        async with db.single_read() as conn:
            return await db.now(conn)

    async def read() -> datetime:
        async with db.read() as conn:
            return await db.now(conn)

    async def write() -> datetime:
        async with db.write() as conn:
            return await db.now(conn)

    async def hot_write() -> datetime:
        async with db.hot_write() as session:
            return await db.now(session)

    async def kept_lane() -> datetime:
        async with kept.write() as conn:
            return await db.now(conn)

    return {
        "single_read": single_read,
        "read": read,
        "write": write,
        "hot_write": hot_write,
        "kept_lane": kept_lane,
    }


async def warm(db: Database, every: dict[str, Path_]) -> None:
    """Several connections open on every path (and returned to their pools)."""
    for _ in range(2):
        await asyncio.gather(*(db.retrying(path) for path in every.values() for _ in range(3)))


async def restart(proxy: TcpProxy) -> None:
    proxy.cut()
    proxy.restore()


async def test_after_a_quiet_second_no_path_fails(
    proxied: tuple[Database, TcpProxy],
) -> None:
    db, proxy = proxied
    every = paths(db)
    await warm(db, every)
    await restart(proxy)
    await asyncio.sleep(1.2)
    for name, path in every.items():
        assert await db.retrying(path), name


async def test_under_load_one_failure_then_every_path_works(
    proxied: tuple[Database, TcpProxy],
) -> None:
    db, proxy = proxied
    every = paths(db)
    await warm(db, every)
    await restart(proxy)
    failures = []
    for name, path in [*every.items(), *every.items()]:
        try:
            await db.retrying(path)
        except Unavailable:
            failures.append(name)
    assert len(failures) <= 1, failures  # only the transaction that met the loss first
