"""A revoked worker token ends the worker's session within a bound, whatever the worker is
doing, and no lease is granted on it afterwards (the token used to be re-checked only
on heartbeats, which the SDK sends only while it holds attempts, so an idle worker or one
running short tasks kept leasing for minutes after `orbit token revoke`).

Real processes: `orbit serve`, `orbit worker` (examples/orbit_workers.py) and the
`orbit token revoke` command, on SQLite (the one statement of the check runs on both
databases in test_token_watch.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import tokens
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import (
    WorkerProcess,
    attempts,
    get_task,
    submit,
    wait_state,
    workers,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration
CHECK_MS = 1000  # the default ORBIT_WORKER_TOKEN_CHECK_MS
# the promise: the session ends within one check interval of the revocation's commit; the
# slack covers one check query, the close handshake and the worker process exiting on a
# shared 2-core machine
BOUND_S = CHECK_MS / 1000 + 2.0


@pytest.fixture(scope="module", params=KINDS[:1])
def revoke_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_url(request.param, tmp_path_factory.mktemp("orbit-revoke"), migrated=True) as url:
        yield url


@pytest.fixture(scope="module")
def revoke_url(revoke_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("orbit-revoke-server") / "server.log"
    with execution_server(revoke_db_url, log) as url:
        yield url


@pytest.fixture
async def tenant(revoke_db_url: str, revoke_url: str) -> AsyncIterator[Tenant]:
    db = Database.open(revoke_db_url, pool_size=2)
    yield await Tenant.create(db, revoke_url)
    await db.close()


@pytest.fixture
async def http(revoke_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=revoke_url, timeout=30) as client:
        yield client


def revoke(db_url: str, token_id: str) -> None:
    """`orbit token revoke`, the operator's command."""
    command = [
        sys.executable,
        "-m",
        "agentcall.orbit",
        "token",
        "revoke",
        "--database",
        db_url,
        "--token-id",
        token_id,
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=60)


async def revoked_at(tenant: Tenant, token_id: str) -> datetime:
    async with tenant.db.read() as conn:
        found = (
            await conn.execute(sa.select(tokens.c.revoked_at).where(tokens.c.id == token_id))
        ).scalar_one()
    assert isinstance(found, datetime)
    return found


async def stopped_by_token(proc: WorkerProcess) -> datetime:
    """When (wall clock) the worker process stopped for its token (exit 3, close 4401)."""

    async def stopped() -> bool:
        return proc.process.poll() is not None

    await wait_until(stopped, 30, "the worker to stop", step=0.02)
    at = datetime.now(UTC)
    assert proc.process.returncode == 3, proc.log()[-2000:]
    assert "4401" in proc.log(), proc.log()[-2000:]
    return at


async def ended_within(proc: WorkerProcess, tenant: Tenant, token_id: str, bound: float) -> None:
    """The worker stopped at most `bound` seconds after the revocation's commit (its
    `revoked_at`, on the database clock of this same host)."""
    stopped = await stopped_by_token(proc)
    elapsed = (stopped - await revoked_at(tenant, token_id)).total_seconds()
    print(f"worker stopped {elapsed:.2f} s after the revocation committed")
    assert elapsed <= bound, f"the session ended {elapsed:.2f} s after the revocation"


async def no_lease_after(
    http: httpx.AsyncClient, tenant: Tenant, task_ids: list[str], worker: str, after: datetime
) -> None:
    for task_id in task_ids:
        for attempt in await attempts(http, tenant, task_id):
            if attempt["worker"]["name"] == worker:
                assert parse_time(attempt["leased_at"], "leased_at") <= after, attempt


async def test_revoked_token_ends_an_idle_worker_session(
    tenant: Tenant, http: httpx.AsyncClient, revoke_db_url: str, tmp_path: Path
) -> None:
    """An idle worker sends no heartbeat: the server's own check ends its session."""
    token_id, secret = await tenant.token_for([Permission.WORK])
    proc = WorkerProcess(
        tenant.base_url, secret, [tenant.queue_id], tmp_path / "idle.log", name="idle"
    )
    with workers(proc):
        await proc.connected()
        first = await submit(http, tenant)
        await wait_state(http, tenant, first, {"SUCCEEDED"})  # the token works
        await asyncio.to_thread(revoke, revoke_db_url, token_id)
        await ended_within(proc, tenant, token_id, BOUND_S)
        later = [await submit(http, tenant) for _ in range(3)]
        await asyncio.sleep(1.0)
        for task_id in later:
            assert (await get_task(http, tenant, task_id))["state"] == "WAITING"
            assert await attempts(http, tenant, task_id) == []


async def test_revoked_token_ends_a_busy_worker_session(
    tenant: Tenant, http: httpx.AsyncClient, revoke_db_url: str, tmp_path: Path
) -> None:
    """A worker kept busy with short tasks: its session ends within the bound, and no lease
    is granted on the token later than one check interval after the revocation."""
    token_id, secret = await tenant.token_for([Permission.WORK])
    proc = WorkerProcess(
        tenant.base_url,
        secret,
        [tenant.queue_id],
        tmp_path / "busy.log",
        name="busy",
        concurrency=4,
    )
    submitted: list[str] = []

    async def feed() -> None:
        while True:
            submitted.append(
                await submit(http, tenant, recovery_safety="IDEMPOTENT", payload={"sleep_ms": 50})
            )
            await asyncio.sleep(0.02)

    with workers(proc):
        await proc.connected()
        feeder = asyncio.create_task(feed())
        try:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(revoke, revoke_db_url, token_id)
            await ended_within(proc, tenant, token_id, BOUND_S)
            await asyncio.sleep(0.5)
        finally:
            feeder.cancel()
        when = await revoked_at(tenant, token_id)
        await no_lease_after(
            http, tenant, submitted, "busy", when + timedelta(seconds=CHECK_MS / 1000 + 0.5)
        )
        done = [(await get_task(http, tenant, t))["state"] for t in submitted[:5]]
        assert "SUCCEEDED" in done  # it was really working before the revocation


async def test_expired_token_ends_an_idle_worker_session_at_its_expiry(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Expiry too: the watch wakes at the token's `expires_at`, without any heartbeat."""
    expires = datetime.now(UTC) + timedelta(seconds=4)
    _, secret = await tenant.token_for([Permission.WORK], expires_at=expires)
    proc = WorkerProcess(
        tenant.base_url, secret, [tenant.queue_id], tmp_path / "exp.log", name="expiring"
    )
    with workers(proc):
        await proc.connected()
        stopped = await stopped_by_token(proc)
        late = (stopped - expires).total_seconds()
        print(f"worker stopped {late:.2f} s after its token expired")
        assert 0 <= late <= 2.0, late
        task_id = await submit(http, tenant)
        await asyncio.sleep(0.5)
        assert await attempts(http, tenant, task_id) == []
