"""Flow control across two `orbit serve` processes on one MariaDB database, a worker on each
(docs/orbit/flow-control.md): `max_running_per_key=3` is never exceeded (sampled from the
attempts history: lease to end of every attempt, per key), a rate limit of 50 leases/s holds
within 10 % over 20 s, and each worker receives its tasks in priority order."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.store.tables import task_attempts, tasks
from tests.integration.orbit.wire import ok
from tests.support.orbit_fleet import Servers, servers, tenant_of, wait_succeeded
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import WorkerProcess, workers
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.timeout(240)]


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Servers, str]]:
    with servers(tmp_path, 2) as made:
        yield made


@contextlib.asynccontextmanager
async def running(
    fleet: tuple[Servers, str], tmp_path: Path, concurrency: int
) -> AsyncIterator[tuple[Tenant, list[httpx.AsyncClient]]]:
    started, url = fleet
    async with tenant_of(url, started.urls[0]) as tenant:
        clients = [httpx.AsyncClient(base_url=u, timeout=30) for u in started.urls]
        try:
            yield tenant, clients
        finally:
            for client in clients:
                await client.aclose()


def start_workers(
    started: Servers, tenant: Tenant, tmp_path: Path, concurrency: int
) -> list[WorkerProcess]:
    return [
        WorkerProcess(
            u, tenant.token, [tenant.queue_id], tmp_path / f"w{n}.log", concurrency, name=f"w{n}"
        )
        for n, u in enumerate(started.urls)
    ]


async def set_flow(http: httpx.AsyncClient, tenant: Tenant, flow: dict[str, Any]) -> None:
    headers = {**tenant.headers(), "Content-Type": "application/json"}
    body = {"expected_revision": "1", "flow": flow}
    ok(await http.patch(f"/v1/queues/{tenant.queue_id}", json=body, headers=headers))
    await asyncio.sleep(1.5)  # the other process re-reads the settings within a second


async def submit_all(
    clients: list[httpx.AsyncClient], tenant: Tenant, bodies: list[dict[str, Any]]
) -> None:
    """In batches of 100, alternately through both servers."""
    for n in range(0, len(bodies), 100):
        http = clients[(n // 100) % len(clients)]
        response = await http.post(
            "/v1/tasks:batch",
            json={"tasks": bodies[n : n + 100]},
            headers=tenant.headers(key=f"batch-{n}"),
        )
        assert response.status_code in (200, 201), response.text


def body(tenant: Tenant, handler: str = "demo.noop", **fields: Any) -> dict[str, Any]:
    payload = fields.pop("payload", {})
    return {
        "queue_id": tenant.queue_id,
        "handler": handler,
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": payload,
        **fields,
    }


async def history(tenant: Tenant) -> list[Any]:
    """Every attempt of the queue with its task's key and priority, in lease order."""
    a = task_attempts.c
    query = (
        sa.select(
            a.leased_at, a.ended_at, a.worker_name, tasks.c.concurrency_key, tasks.c.lease_rank
        )
        .join(tasks, tasks.c.id == a.task_id)
        .where(a.queue_id == tenant.queue_id)
        .order_by(a.leased_at, a.id)
    )
    async with tenant.db.read() as conn:
        return list((await conn.execute(query)).all())


def most_at_once(intervals: list[tuple[datetime, datetime]]) -> int:
    """The largest number of intervals open at one instant (an end before a start at a tie)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


async def test_max_running_per_key_is_never_exceeded_across_processes(
    fleet: tuple[Servers, str], tmp_path: Path
) -> None:
    async with running(fleet, tmp_path, 8) as (tenant, clients):
        await set_flow(clients[0], tenant, {"max_running_per_key": 3})
        work = {"sleep_ms": 150}
        bodies = [
            body(tenant, "demo.work", payload=work, concurrency_key=f"k{n % 2}") for n in range(60)
        ]
        # Two keys of 3 make 6 leases at once; a worker takes at most 4, so whenever 6 run
        # both processes hold some: the limit is shared, not met by one process alone.
        with workers(*start_workers(fleet[0], tenant, tmp_path, 4)) as started:
            for worker in started:
                await worker.connected()
            await submit_all(clients, tenant, bodies)
            await wait_succeeded(tenant, 60, timeout=120)
        attempts = await history(tenant)
    assert len(attempts) == 60
    for key in ("k0", "k1"):
        spans = [(r.leased_at, r.ended_at) for r in attempts if r.concurrency_key == key]
        assert most_at_once(spans) == 3, key  # reached, never exceeded
    assert {r.worker_name for r in attempts} == {"w0", "w1"}  # both processes leased


async def test_a_rate_limit_of_50_per_second_holds_within_10_percent_over_20_s(
    fleet: tuple[Servers, str], tmp_path: Path
) -> None:
    async with running(fleet, tmp_path, 16) as (tenant, clients):
        await set_flow(clients[0], tenant, {"rate": {"per_second": 50, "burst": 5}})
        with workers(*start_workers(fleet[0], tenant, tmp_path, 16)) as started:
            for worker in started:
                await worker.connected()
            await submit_all(clients, tenant, [body(tenant) for _ in range(1_200)])

            async def leased_enough() -> bool:
                return len(await history(tenant)) >= 1_120

            await wait_until(leased_enough, 60, "1,120 leases", step=0.5)
        attempts = await history(tenant)
    start = attempts[0].leased_at + timedelta(seconds=1)  # past the burst
    window = [r for r in attempts if start <= r.leased_at < start + timedelta(seconds=20)]
    rate = len(window) / 20
    assert 45 <= rate <= 55, rate
    assert {r.worker_name for r in attempts} == {"w0", "w1"}


async def test_each_worker_gets_its_tasks_in_priority_order(
    fleet: tuple[Servers, str], tmp_path: Path
) -> None:
    """Tasks submitted before any worker connects: each worker (one slot, on its own server
    process) is handed the highest priority left each time, so its leases never rise in
    priority; FIFO within one priority."""
    async with running(fleet, tmp_path, 1) as (tenant, clients):
        await set_flow(clients[0], tenant, {"max_running_per_key": 100})
        bodies = [
            body(tenant, "demo.work", payload={"sleep_ms": 20}, priority=1 + (n * 7) % 9)
            for n in range(45)
        ]
        await submit_all(clients, tenant, bodies)
        with workers(*start_workers(fleet[0], tenant, tmp_path, 1)) as started:
            await wait_succeeded(tenant, 45, timeout=120)
            assert all(w.process.poll() is None for w in started)
        attempts = await history(tenant)
    for name in ("w0", "w1"):
        ranks = [r.lease_rank for r in attempts if r.worker_name == name]
        assert ranks, name
        assert ranks == sorted(ranks), (name, ranks)  # lease_rank = 9 - priority
