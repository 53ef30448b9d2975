"""Several `orbit serve` processes (each its own process and port) on one MariaDB database, and
the checks the scale-out suites share: a tenant of the fleet, tasks counted by state, every task
SUCCEEDED exactly once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import task_attempts, tasks
from tests.support.orbit_databases import fresh_url
from tests.support.orbit_server import Tenant, serve_command, wait_healthy
from tests.support.ports import free_port
from tests.support.waiting import wait_until


class Servers:
    """`orbit serve` processes on one database, started together."""

    def __init__(self, db_url: str, tmp: Path, count: int, **env: str) -> None:
        self.ports = [free_port() for _ in range(count)]
        self.logs = [tmp / f"server-{n}.log" for n in range(count)]
        # leases of 8 s: long enough that a machine shared with other suites (load 10+ on
        # 2 cores) does not expire them under running workers, short enough that the leases
        # the killed server granted but never delivered are requeued within the test
        environment = {
            **os.environ,
            "ORBIT_LEASE_TTL_MS": "8000",
            "ORBIT_SWEEP_INTERVAL_MS": "100",
            **env,
        }
        self.db_url, self.environment = db_url, environment
        self.processes = [self._spawn(index) for index in range(count)]
        for url, process, log_path in zip(self.urls, self.processes, self.logs, strict=True):
            wait_healthy(url, process, log_path)

    def _spawn(self, index: int) -> subprocess.Popen[bytes]:
        command = serve_command(self.db_url, self.ports[index], "--no-access-log")
        with self.logs[index].open("ab") as log:
            return subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=self.environment
            )

    def restart(self, *indexes: int) -> None:
        """Start the stopped servers `indexes` again on their ports; return once healthy."""
        for index in indexes:
            self.processes[index] = self._spawn(index)
        for index in indexes:
            wait_healthy(self.urls[index], self.processes[index], self.logs[index])

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def kill(self, index: int) -> None:
        self.processes[index].send_signal(signal.SIGKILL)
        self.processes[index].wait(10)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(10)


@contextlib.contextmanager
def servers(tmp: Path, count: int, **env: str) -> Iterator[tuple[Servers, str]]:
    """``count`` servers on a fresh migrated MariaDB database; yields them and its URL."""
    with fresh_url("mariadb", tmp, migrated=True) as url:
        started = Servers(url, tmp, count, **env)
        try:
            yield started, url
        finally:
            started.stop()


@contextlib.asynccontextmanager
async def tenant_of(url: str, base: str) -> AsyncIterator[Tenant]:
    db = Database.open(url, pool_size=4)
    try:
        yield await Tenant.create(db, base)
    finally:
        await db.close()


def noop_body(tenant: Tenant) -> dict[str, Any]:
    """A submit body of the `demo.noop` handler on the tenant's queue."""
    return {
        "queue_id": tenant.queue_id,
        "handler": "demo.noop",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {},
    }


async def wait_succeeded(tenant: Tenant, count: int, timeout: float = 30) -> None:
    """Wait until ``count`` tasks of the tenant's queue SUCCEEDED; fail with the tasks by state."""
    query = (
        sa.select(sa.func.count())
        .select_from(tasks)
        .where(tasks.c.queue_id == tenant.queue_id, tasks.c.state == "SUCCEEDED")
    )

    async def reached() -> bool:
        async with tenant.db.read() as conn:
            return int((await conn.execute(query)).scalar_one()) >= count

    try:
        await wait_until(reached, timeout, f"{count} tasks SUCCEEDED", step=0.1)
    except AssertionError as exc:
        states = (
            sa.select(tasks.c.state, sa.func.count())
            .where(tasks.c.queue_id == tenant.queue_id)
            .group_by(tasks.c.state)
        )
        async with tenant.db.read() as conn:
            found = dict((await conn.execute(states)).all())
        raise AssertionError(f"{exc}; tasks by state: {found}") from None


async def every_task_succeeded_once(tenant: Tenant, count: int) -> None:
    """From the execution history: all ``count`` tasks SUCCEEDED, each with exactly one started
    attempt, and that one SUCCEEDED; no attempt left leased or running."""
    c = task_attempts.c
    per_task = (
        sa.select(
            c.task_id,
            sa.func.sum(sa.case((c.started_at.is_not(None), 1), else_=0)),
            sa.func.sum(sa.case((c.state == "SUCCEEDED", 1), else_=0)),
        )
        .where(c.queue_id == tenant.queue_id)
        .group_by(c.task_id)
    )
    states = (
        sa.select(tasks.c.state, sa.func.count())
        .where(tasks.c.queue_id == tenant.queue_id)
        .group_by(tasks.c.state)
    )
    live = (
        sa.select(sa.func.count())
        .select_from(task_attempts)
        .where(c.queue_id == tenant.queue_id, c.state.in_(["LEASED", "RUNNING"]))
    )
    async with tenant.db.read() as conn:
        assert dict((await conn.execute(states)).all()) == {"SUCCEEDED": count}
        rows = (await conn.execute(per_task)).all()
        assert (await conn.execute(live)).scalar_one() == 0
    assert len(rows) == count
    twice = [(task_id, s, ok) for task_id, s, ok in rows if int(s) != 1 or int(ok) != 1]
    assert twice == [], twice[:5]
