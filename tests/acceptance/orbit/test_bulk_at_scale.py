"""A bulk retry of 10,000 FAILED tasks on MariaDB (docs/orbit/bulk.md) while another client
retries 10 % of them one by one, and the server running it is SIGKILLed mid-way and started
again: the operation resumes once the dead process's claim lapses and finishes SUCCEEDED with
done + skipped + failed = matched; every task was retried exactly once (one RETRIED event, one
revision more), by the operation or by the other client, and the operation reports exactly the
other client's tasks as SKIPPED."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.task import Task
from agentcall.orbit.store.tables import bulk_operation_tasks, task_events, tasks
from tests.support.orbit_bulk import seed_failed, start_body
from tests.support.orbit_fleet import Servers, servers, tenant_of
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.acceptance, pytest.mark.mariadb, pytest.mark.timeout(1200)]

TASKS = 10_000
CHANGED = TASKS // 10
KILL_AT = TASKS * 3 // 10  # tasks with an outcome when the server is killed
PATIENCE_S = 900  # the whole run: minutes on a machine shared with other suites
CLAIM_MS = 2_000  # the dead process's claim lapses after this


@pytest.fixture
def one_server(tmp_path: Path) -> Iterator[tuple[Servers, str]]:
    with servers(tmp_path, 1, ORBIT_BULK_CLAIM_MS=str(CLAIM_MS)) as fleet:
        yield fleet


async def test_a_bulk_retry_survives_a_kill_and_skips_the_tasks_changed_meanwhile(
    one_server: tuple[Servers, str],
) -> None:
    fleet, url = one_server
    base = fleet.urls[0]
    async with tenant_of(url, base) as tenant, httpx.AsyncClient(base_url=base, timeout=10) as http:
        made = await seed_failed(tenant, TASKS)
        started = time.monotonic()
        body = start_body(tenant, state="FAILED", error_code="CARD_DECLINED")
        response = await http.post(
            "/v1/bulk-operations", json=body, headers=tenant.headers(key="bulk-10k")
        )
        assert response.status_code == 201, response.text
        op = response.json()["data"]["operation"]
        assert op["matched"] == TASKS
        # the other client works from the oldest (the operation goes newest first)
        chosen = random.Random(7).sample(made[TASKS // 2 :], CHANGED)
        changer = asyncio.create_task(_retry_singly(http, tenant, chosen))
        try:
            seen = await _progress_until(http, tenant, op["id"], KILL_AT)
            fleet.kill(0)
            fleet.restart(0)
            final = await _progress_until(http, tenant, op["id"], TASKS)
            changed = await changer
        finally:
            changer.cancel()
        elapsed = time.monotonic() - started
    print(
        f"\nbulk retry of {TASKS}: {elapsed:.1f} s with a kill at {seen['done'] + seen['skipped']}"
        f" done; done {final['done']}, skipped {final['skipped']}, failed {final['failed']};"
        f" retried singly {len(changed)}"
    )
    assert final["state"] == "SUCCEEDED"
    assert final["done"] + final["skipped"] + final["failed"] == final["matched"] == TASKS
    assert final["failed"] == 0 and len(changed) > 0
    await _each_task_retried_once(tenant, made, op["id"], changed, final)


async def _retry_singly(http: httpx.AsyncClient, tenant: Tenant, chosen: list[Task]) -> set[str]:
    """Retry each task with its seeded revision; the ids this client retried (a task the
    operation retried first is refused with 409). Through the restart: a request that met
    no server is sent again with the same key."""
    retried: set[str] = set()
    gate = asyncio.Semaphore(8)

    async def one(task: Task) -> None:
        body = {"expected_revision": str(task.revision), "reason": "retried by hand"}
        headers = tenant.headers(key=f"single-{task.id}")
        async with gate:
            while True:
                try:
                    answer = await http.post(
                        f"/v1/tasks/{task.id}:retry", json=body, headers=headers
                    )
                except httpx.TransportError:
                    await asyncio.sleep(0.2)
                    continue
                if answer.status_code != 503:
                    break
        assert answer.status_code in (200, 409), answer.text
        if answer.status_code == 200:
            retried.add(task.id)

    await asyncio.gather(*(one(task) for task in chosen))
    return retried


async def _progress_until(
    http: httpx.AsyncClient, tenant: Tenant, operation_id: str, reached: int
) -> dict[str, Any]:
    deadline = time.monotonic() + PATIENCE_S
    data: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            response = await http.get(
                f"/v1/bulk-operations/{operation_id}", headers=tenant.headers()
            )
        except httpx.TransportError:  # restarting
            await asyncio.sleep(0.1)
            continue
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        if data["done"] + data["skipped"] + data["failed"] >= reached or data["state"] != "RUNNING":
            return data
        await asyncio.sleep(0.05)
    raise AssertionError(f"bulk operation did not reach {reached}: {data}")


async def _each_task_retried_once(
    tenant: Tenant, made: list[Task], operation_id: str, changed: set[str], final: dict[str, Any]
) -> None:
    c = bulk_operation_tasks.c
    outcomes = sa.select(c.task_id, c.outcome).where(c.operation_id == operation_id)
    events = (
        sa.select(task_events.c.task_id, sa.func.count())
        .where(task_events.c.kind == "RETRIED")
        .group_by(task_events.c.task_id)
    )
    revisions = sa.select(tasks.c.id, tasks.c.revision).where(tasks.c.queue_id == tenant.queue_id)
    async with tenant.db.read() as conn:
        outcome = {r.task_id: r.outcome for r in await conn.execute(outcomes)}
        retried = {r[0]: int(r[1]) for r in await conn.execute(events)}
        revision = {r.id: int(r.revision) for r in await conn.execute(revisions)}
    skipped = {task_id for task_id, found in outcome.items() if found == "SKIPPED"}
    assert skipped == changed
    assert sum(1 for found in outcome.values() if found == "DONE") == final["done"]
    assert len(skipped) == final["skipped"]
    twice = [t.id for t in made if retried.get(t.id) != 1 or revision[t.id] != t.revision + 1]
    assert twice == [], twice[:5]
