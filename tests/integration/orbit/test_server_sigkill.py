"""`orbit serve` killed with SIGKILL under submit + work load, then started again on the same
port: clients that resend with the same idempotency key get one task per key, the worker
reconnects, and no task is lost or run twice (every task reaches a final state; at most one
started attempt per task, a lost one goes to NEEDS_REVIEW as RECONCILE_ONLY says).
On the shared MariaDB (a database of its own); it passes on SQLite too (KINDS)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agentcall.orbit.store.db import Database
from tests.integration.orbit.fault_load import Load, every_task_once
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import FAST, Tenant, serve_command, wait_healthy
from tests.support.orbit_workers import WorkerProcess, workers
from tests.support.ports import free_port

pytestmark = pytest.mark.integration


class Server:
    """`orbit serve` on a fixed port, which the test can SIGKILL and start again."""

    def __init__(self, db_url: str, log_path: Path) -> None:
        self.db_url = db_url
        self.log_path = log_path
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = serve_command(self.db_url, self.port, "--no-access-log")
        env = {**os.environ, **FAST, "ORBIT_LEASE_TTL_MS": "3000"}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_healthy(self.url, self.process, self.log_path)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture(params=KINDS[1:])  # MariaDB, as in production (the store is the same code)
def killable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Server, str]]:
    with fresh_url(request.param, tmp_path, migrated=True) as url:
        server = Server(url, tmp_path / "server.log")
        server.start()
        try:
            yield server, url
        finally:
            server.stop()


@pytest.fixture
async def tenant(killable: tuple[Server, str]) -> AsyncIterator[Tenant]:
    server, url = killable
    db = Database.open(url, pool_size=2)
    yield await Tenant.create(db, server.url)
    await db.close()


async def test_server_sigkill_under_load_loses_no_task_and_runs_none_twice(
    killable: tuple[Server, str], tenant: Tenant, tmp_path: Path
) -> None:
    server, _ = killable
    proc = WorkerProcess(
        server.url,
        tenant.token,
        [tenant.queue_id],
        tmp_path / "worker.log",
        name="w",
        concurrency=8,
    )
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        load = Load(http, tenant)
        with workers(proc):
            await proc.connected()
            loops = [asyncio.create_task(load.submitter()) for _ in range(3)]
            try:
                await asyncio.sleep(1.5)
                before = len(load.tasks)
                await asyncio.to_thread(server.kill)
                await asyncio.sleep(0.5)
                await asyncio.to_thread(server.start)
                await asyncio.sleep(1.5)
            finally:
                for loop in loops:
                    loop.cancel()
                await asyncio.gather(*loops, return_exceptions=True)
            assert before > 0 and len(load.tasks) > before
            await every_task_once(http, tenant, load)
