"""Several `orbit serve` processes (each its own process and port) on one MariaDB database
(docs/orbit/scaling.md): work submitted through one server reaches an idle worker connected to
another at once (a hint, not the periodic round); 3,000 tasks submitted round-robin through
three servers while workers are spread over them, one server SIGKILLed in the middle: its
workers move to the others under the same leases, every task SUCCEEDED exactly once."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.store.tables import orbit_servers, task_attempts, tasks
from tests.support.orbit_fleet import (
    Servers,
    every_task_succeeded_once,
    noop_body,
    servers,
    tenant_of,
    wait_succeeded,
)
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import WorkerProcess, workers
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.mariadb]

TASKS = 3_000
BATCH = 100


@pytest.fixture
def two_servers(tmp_path: Path) -> Iterator[tuple[Servers, str]]:
    """The periodic round is 5 s here: only a hint explains a start within milliseconds."""
    with servers(tmp_path, 2, ORBIT_DISPATCH_TICK_MS="5000") as fleet:
        yield fleet


@pytest.fixture
def three_servers(tmp_path: Path) -> Iterator[tuple[Servers, str]]:
    with servers(tmp_path, 3) as fleet:
        yield fleet


async def test_a_submit_on_one_server_reaches_an_idle_worker_on_another_at_once(
    two_servers: tuple[Servers, str], tmp_path: Path
) -> None:
    fleet, url = two_servers
    a, b = fleet.urls
    async with tenant_of(url, a) as tenant, httpx.AsyncClient(timeout=10) as http:
        proc = WorkerProcess(b, tenant.token, [tenant.queue_id], tmp_path / "w.log")
        with workers(proc):
            await proc.connected()
            # Servers refresh their view of each other's queues about once a second: measure
            # once A has seen the queue that B's new worker serves.
            await asyncio.sleep(2.5)
            waits = [await _one_idle_dispatch(http, tenant, a) for _ in range(15)]
        print(
            f"cross-process idle dispatch: p50 {statistics.median(waits) * 1000:.1f} ms, "
            f"max {max(waits) * 1000:.1f} ms"
        )
        assert statistics.median(waits) < 0.1, waits
        assert max(waits) < 1.0, waits
        assert await _metric(http, b, "orbit_peer_hints_received_total") >= 10
        async with tenant.db.read() as conn:
            rows = (await conn.execute(sa.select(orbit_servers))).all()
        assert len(rows) == 2 and len({(r.host, r.port) for r in rows}) == 2


async def _one_idle_dispatch(http: httpx.AsyncClient, tenant: Tenant, base: str) -> float:
    response = await http.post(
        f"{base}/v1/tasks", json=noop_body(tenant), headers=tenant.headers(key=os.urandom(8).hex())
    )
    assert response.status_code == 201, response.text
    task_id = response.json()["data"]["task"]["id"]
    query = (
        sa.select(tasks.c.created_at, task_attempts.c.started_at)
        .join(task_attempts, task_attempts.c.task_id == tasks.c.id)
        .where(tasks.c.id == task_id, task_attempts.c.started_at.is_not(None))
    )
    found: list[Any] = []

    async def started() -> bool:
        async with tenant.db.read() as conn:
            found[:] = (await conn.execute(query)).all()
        return bool(found)

    await wait_until(started, 10, f"task {task_id} to start", step=0.01)
    created_at, started_at = found[0]
    return float((started_at - created_at).total_seconds())


async def _metric(http: httpx.AsyncClient, base: str, name: str) -> float:
    text = (await http.get(f"{base}/metrics")).text
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(name + " ") or line.startswith(name + "{")
    )


async def test_three_servers_one_sigkilled_every_task_succeeds_exactly_once(
    three_servers: tuple[Servers, str], tmp_path: Path
) -> None:
    started_at = time.monotonic()
    fleet, url = three_servers
    urls = fleet.urls
    async with tenant_of(url, urls[0]) as tenant, httpx.AsyncClient(timeout=10) as http:
        # each worker prefers another server, and knows all three
        procs = [
            WorkerProcess(
                ",".join(urls[n:] + urls[:n]),
                tenant.token,
                [tenant.queue_id],
                tmp_path / f"worker-{n}.log",
                concurrency=64,
                name=f"w{n}",
            )
            for n in range(3)
        ]
        with workers(*procs):
            for proc in procs:
                await proc.connected()
            alive = [True, True, True]
            batches = [
                asyncio.create_task(_submit_batch(http, tenant, urls, alive, n))
                for n in range(TASKS // BATCH)
            ]
            await wait_succeeded(tenant, TASKS // 3)  # a third of the tasks SUCCEEDED
            alive[1] = False
            await asyncio.to_thread(fleet.kill, 1)
            accepted = sum(await asyncio.gather(*batches))
            assert accepted == TASKS
            await wait_succeeded(tenant, TASKS, timeout=90)
            assert procs[1].log().count('"connected"') >= 2  # it moved
        await every_task_succeeded_once(tenant, TASKS)
    print(f"3 servers, {TASKS} tasks, one SIGKILLed: {time.monotonic() - started_at:.1f} s")


async def _submit_batch(
    http: httpx.AsyncClient, tenant: Tenant, urls: list[str], alive: list[bool], n: int
) -> int:
    """Batch n goes to server n % 3; a transport error resends it, with the same key, to the
    next server (a replay there if the first one committed it)."""
    await asyncio.sleep(n * 0.05)
    key = f"batch-{n}"
    items = [noop_body(tenant) for _ in range(BATCH)]
    for turn in range(20):
        index = (n + turn) % len(urls)
        if not alive[index]:
            continue
        try:
            response = await http.post(
                f"{urls[index]}/v1/tasks:batch",
                json={"tasks": items},
                headers=tenant.headers(key=key),
            )
        except httpx.TransportError:
            continue
        assert response.status_code in (200, 201), response.text
        return len(response.json()["data"]["items"])
    raise AssertionError(f"batch {n} was never accepted")
