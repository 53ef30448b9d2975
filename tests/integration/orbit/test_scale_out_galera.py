"""Orbit on a three-node MariaDB Galera cluster on loopback (docs/orbit/scaling.md, "Galera"):
three `orbit serve` processes, each writing to a different node, workers spread over them;
every task SUCCEEDED exactly once although the nodes lease from the same queue at once (a
lease that loses Galera's certification is rolled back with a deadlock error and retried).
Skips, saying why, where galera-4 or mariadbd is not installed. A long variant: it starts its
own cluster and takes about two minutes here, so it runs with `make fuzz` (the long profile,
FUZZ_EXAMPLES >= 10000), not in `make test`."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
from pathlib import Path

import httpx
import pytest

from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade
from tests.integration.orbit import galera
from tests.support.fuzzing import FUZZ_EXAMPLES
from tests.support.orbit_fleet import every_task_succeeded_once, noop_body, wait_succeeded
from tests.support.orbit_server import Tenant, serve_command, wait_healthy
from tests.support.orbit_workers import WorkerProcess, workers
from tests.support.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.fuzz]
TASKS = 3_000


async def _migrate(url: str) -> None:
    db = Database.open(url, pool_size=1)
    try:
        await upgrade(db)
    finally:
        await db.close()


def test_three_servers_on_three_galera_nodes_run_every_task_once(tmp_path: Path) -> None:
    why = galera.missing()
    if FUZZ_EXAMPLES < 10_000:
        why = "a long variant (about two minutes): runs with make fuzz (FUZZ_EXAMPLES=10000)"
    if why:
        pytest.skip(why)
    with galera.cluster(f"orbit_g_{secrets.token_hex(4)}") as urls:
        asyncio.run(_migrate(urls[0]))
        ports = [free_port() for _ in urls]
        env = {**os.environ, "ORBIT_LEASE_TTL_MS": "8000"}
        servers = []
        for n, (url, port) in enumerate(zip(urls, ports, strict=True)):
            command = serve_command(url, port, "--no-access-log")
            log = (tmp_path / f"serve-{n}.log").open("wb")
            servers.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env))
        try:
            bases = [f"http://127.0.0.1:{port}" for port in ports]
            for n, (base, process) in enumerate(zip(bases, servers, strict=True)):
                wait_healthy(base, process, tmp_path / f"serve-{n}.log")
            asyncio.run(_run(urls[0], bases, tmp_path))
        finally:
            for process in servers:
                process.kill()
                process.wait(10)


async def _run(url: str, bases: list[str], tmp: Path) -> None:
    db = Database.open(url, pool_size=4)
    try:
        tenant = await Tenant.create(db, bases[0])
        procs = [
            WorkerProcess(
                ",".join(bases[n:] + bases[:n]),
                tenant.token,
                [tenant.queue_id],
                tmp / f"worker-{n}.log",
                concurrency=32,
            )
            for n in range(3)
        ]
        with workers(*procs):
            for proc in procs:
                await proc.connected()
            async with httpx.AsyncClient(timeout=30) as http:
                sent = await asyncio.gather(
                    *(_batch(http, tenant, bases[n % 3], n) for n in range(TASKS // 100))
                )
            assert sum(sent) == TASKS
            await wait_succeeded(tenant, TASKS, timeout=120)
        await every_task_succeeded_once(tenant, TASKS)
    finally:
        await db.close()


async def _batch(http: httpx.AsyncClient, tenant: Tenant, base: str, n: int) -> int:
    await asyncio.sleep(n * 0.05)
    items = [noop_body(tenant) for _ in range(100)]
    response = await http.post(
        f"{base}/v1/tasks:batch", json={"tasks": items}, headers=tenant.headers(key=f"g-{n}")
    )
    assert response.status_code in (200, 201), response.text
    return len(response.json()["data"]["items"])
