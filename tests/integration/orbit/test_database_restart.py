"""MariaDB killed with SIGKILL under submit + work load, then restarted: Orbit serves again
within 1 s of the database accepting connections, and no task is lost or run twice.

The defect this guards against: after a restart the pooled connections, dead, kept failing
requests with 503 for about 22 s (`InterfaceError (0, 'Not connected')` on the hot paths,
whose driver errors bypassed SQLAlchemy's disconnect handling). Now every path notes a lost
connection and no connection opened before it is used again (`agentcall.orbit.store.db`).

Real processes: a MariaDB of the test's own (`own_mariadb`, never the shared one), `orbit
serve`, an `orbit worker`, and HTTP clients submitting with idempotency keys (a 503 or a
transport error is resent with the same key, as the contract says)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade
from tests.integration.orbit.fault_load import BACK_WITHIN_S, Load, every_task_once, recovery
from tests.integration.orbit.own_mariadb import OwnMariaDB
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import WorkerProcess, workers

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


async def _prepare(url: str) -> None:
    server = Database.open(url.rsplit("/", 1)[0] + "/", pool_size=1)
    try:
        async with server.engine.connect() as conn:
            await conn.execute(
                sa.text(
                    "CREATE DATABASE IF NOT EXISTS orbit CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
            )
    finally:
        await server.close()
    db = Database.open(url, pool_size=1)
    try:
        await upgrade(db)
    finally:
        await db.close()


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnMariaDB]:
    own = OwnMariaDB(tmp_path_factory.mktemp("own-mariadb"))
    own.install()
    own.start()
    try:
        asyncio.run(_prepare(own.url))
        yield own
    finally:
        own.stop()


@pytest.fixture(scope="module")
def orbit_url(mariadb: OwnMariaDB, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("orbit-restart-server") / "server.log"
    with execution_server(
        mariadb.url, log, ORBIT_LEASE_TTL_MS="5000", ORBIT_RECONNECT_GRACE_MS="5000"
    ) as url:
        yield url


@pytest.fixture
async def tenant(mariadb: OwnMariaDB, orbit_url: str) -> AsyncIterator[Tenant]:
    db = Database.open(mariadb.url, pool_size=2)
    made = await Admin(db).init(f"t-{os.urandom(4).hex()}", "main")
    yield Tenant(db, orbit_url, made.namespace_id, made.queue_id, made.token)
    await db.close()


async def test_mariadb_sigkill_and_restart_under_load(
    mariadb: OwnMariaDB, tenant: Tenant, tmp_path: Path
) -> None:
    proc = WorkerProcess(
        tenant.base_url,
        tenant.token,
        [tenant.queue_id],
        tmp_path / "worker.log",
        name="w",
        concurrency=8,
    )
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
    async with httpx.AsyncClient(base_url=tenant.base_url, timeout=10, limits=limits) as http:
        load = Load(http, tenant, pace=0.05)
        with workers(proc):
            await proc.connected()
            await load.warm()
            loops = [asyncio.create_task(load.submitter()) for _ in range(4)]
            loops.append(asyncio.create_task(load.reader()))
            try:
                await asyncio.sleep(2.0)
                before = len(load.tasks)
                await asyncio.to_thread(mariadb.kill)
                await asyncio.sleep(1.5)  # an outage: 503s, and the clients back off
                ready = await asyncio.to_thread(mariadb.start)
                await asyncio.sleep(BACK_WITHIN_S + 2.0)
            finally:
                for loop in loops:
                    loop.cancel()
                await asyncio.gather(*loops, return_exceptions=True)
            assert before > 0 and len(load.tasks) > before
            submit_s = recovery(load.submits, ready, "submit")
            read_s = recovery(load.reads, ready, "list")
            print(f"back after the database: submit {submit_s:.3f} s, list {read_s:.3f} s")
            await every_task_once(http, tenant, load)
