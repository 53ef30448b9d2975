"""`GET /v1/workers` lists the namespace's workers of every server process (docs/orbit/console.md,
agentcall.orbit.domain.worker_directory): one `orbit serve` on each database with a real worker; two
`orbit serve` processes on one MariaDB database, each with its own worker, where each server
lists both with the console's fields, a remote worker's in-flight count follows its work, a
worker that leaves disappears from the other server's listing, and a SIGKILLed server's
workers are no longer listed once its registration expires."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.db import Database
from tests.support.orbit_fleet import Servers, servers, tenant_of
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import WorkerProcess, submit, workers
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration
FIELDS = {
    "connection_id",
    "server",
    "name",
    "instance_id",
    "sdk",
    "host",
    "pid",
    "queues",
    "queue_names",
    "handlers",
    "slots",
    "in_flight",
    "connected_at",
    "last_heartbeat_at",
}


async def _listed(http: httpx.AsyncClient, base: str, tenant: Tenant) -> dict[str, Any]:
    answer = await http.get(f"{base}/v1/workers", headers=tenant.headers())
    assert answer.status_code == 200, answer.text
    return {item["name"]: item for item in answer.json()["data"]["items"]}


async def _until_listed(
    http: httpx.AsyncClient, base: str, tenant: Tenant, what: str, check: Any, timeout: float = 10
) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def ok() -> bool:
        found.clear()
        found.update(await _listed(http, base, tenant))
        return bool(check(found))

    await wait_until(ok, timeout, f"{base}/v1/workers to list {what}", step=0.1)
    return found


async def test_one_server_lists_its_workers(db_url: str, db: Database, tmp_path: Path) -> None:
    with execution_server(db_url, tmp_path / "serve.log") as base:
        tenant = await Tenant.create(db, base)
        proc = WorkerProcess(base, tenant.token, [tenant.queue_id], tmp_path / "w.log", name="solo")
        async with httpx.AsyncClient(timeout=10) as http:
            with workers(proc):
                await proc.connected()
                found = await _listed(http, base, tenant)
                assert set(found) == {"solo"} and set(found["solo"]) == FIELDS
                assert found["solo"]["queues"] == [tenant.queue_id]
                assert found["solo"]["queue_names"] == ["main"]
                assert found["solo"]["slots"] == 4 and found["solo"]["pid"] == proc.pid
            await _until_listed(http, base, tenant, "no worker", lambda f: not f)


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Servers, str]]:
    with servers(tmp_path, 2) as fleet:
        yield fleet


@pytest.mark.mariadb
async def test_every_server_lists_the_workers_of_every_server(
    two: tuple[Servers, str], tmp_path: Path
) -> None:
    fleet, url = two
    a, b = fleet.urls
    async with (
        tenant_of(url, a) as tenant,
        httpx.AsyncClient(timeout=10) as http,
        httpx.AsyncClient(base_url=a, timeout=10) as http_a,
    ):
        slow = await tenant.queue("slow")
        both_queues = [tenant.queue_id, slow]
        tenant.token = (await tenant.token_for(list(Permission), both_queues))[1]
        on_a = WorkerProcess(a, tenant.token, [tenant.queue_id], tmp_path / "a.log", name="on-a")
        on_b = WorkerProcess(b, tenant.token, [slow], tmp_path / "b.log", name="on-b")
        with workers(on_a, on_b):
            await on_a.connected()
            await on_b.connected()
            both = lambda f: set(f) == {"on-a", "on-b"}  # noqa: E731
            started = time.monotonic()
            from_a = await _until_listed(http, a, tenant, "both workers", both)
            from_b = await _until_listed(http, b, tenant, "both workers", both)
            print(f"both workers listed by both servers after {time.monotonic() - started:.2f} s")
            for found in (from_a, from_b):
                assert set(found["on-a"]) == set(found["on-b"]) == FIELDS
                assert found["on-b"]["queues"] == [slow] and found["on-b"]["pid"] == on_b.pid
            assert from_a["on-a"]["server"] == from_b["on-a"]["server"]
            assert from_a["on-a"]["server"] != from_a["on-b"]["server"]
            assert from_a["on-b"] == from_b["on-b"] | {
                "in_flight": from_a["on-b"]["in_flight"],
                "last_heartbeat_at": from_a["on-b"]["last_heartbeat_at"],
            }
            # work running on B's worker shows in A's listing within a round or two
            tenant.queue_id = slow
            await submit(http_a, tenant, payload={"sleep_ms": 6000})
            await _until_listed(http, a, tenant, "on-b busy", lambda f: f["on-b"]["in_flight"] == 1)
            on_a.close()  # a worker that leaves: gone from B's listing
            await _until_listed(http, b, tenant, "on-b only", lambda f: set(f) == {"on-b"})
            fleet.kill(1)  # B dies: its workers go once its registration expires (5 s)
            killed = time.monotonic()
            await _until_listed(http, a, tenant, "no worker", lambda f: not f, timeout=15)
            print(f"a SIGKILLed server's workers unlisted after {time.monotonic() - killed:.2f} s")
