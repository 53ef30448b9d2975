"""Flow control under real leases by a worker process of a real `orbit serve`, on both
databases (docs/orbit/flow-control.md): the metrics (ready tasks held back by reason, LEASED
and RUNNING tasks per concurrency key, the lease rounds' refusals by limit, labelled by
namespace and queue name; `promtool check metrics` accepts the exposition) and fair dispatch
over fairness keys, its passes kept in the database between rounds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.store.queue_labels import queue_labels
from agentcall.orbit.store.tables import task_attempts, tasks
from tests.integration.orbit.wire import ok
from tests.support import metric_names, promtool
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import WorkerProcess, submit, workers
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FLOW = {"max_running_per_key": 2, "rate": {"per_second": 1, "burst": 3}}


async def test_held_running_and_refused_are_exported_after_real_leases(
    tenant: Tenant, http: httpx.AsyncClient, server_url: str, tmp_path: Path
) -> None:
    """Key `k` (4 long tasks) runs its limit of 2, its other 2 wait on the concurrency limit;
    key `j` takes the last token of the burst and waits on the rate for the next."""
    body = {"expected_revision": "1", "flow": FLOW}
    headers = {**tenant.headers(), "Content-Type": "application/json"}
    ok(await http.patch(f"/v1/queues/{tenant.queue_id}", json=body, headers=headers))
    work = {"sleep_ms": 8000}
    for key in ("k", "k", "k", "k", "j", "j"):
        await submit(http, tenant, payload=work, concurrency_key=key)
    worker = WorkerProcess(server_url, tenant.token, [tenant.queue_id], tmp_path / "w.log", 8)
    labels = {"namespace": await _namespace(tenant), "queue": "main"}
    got: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def value(name: str, **more: str) -> float:
        return got.get((name, tuple(sorted({**labels, **more}.items()))), -1.0)

    async def exported() -> bool:
        got.clear()
        got.update(metric_names.samples((await http.get("/metrics")).text))
        return (
            value("orbit_queue_held_tasks", reason="concurrency_limit") == 2
            and value("orbit_queue_key_running_tasks", key="k") == 2
            and value("orbit_queue_leases_refused_total", limit="rate") >= 1
        )

    with workers(worker):
        await worker.connected()
        await wait_until(exported, 20, "the flow metrics of the leased queue", step=0.5)
        text = (await http.get("/metrics")).text
    assert value("orbit_queue_leases_refused_total", limit="concurrency") >= 2
    assert value("orbit_queue_key_running_tasks", key="j") in (1, 2)  # a token a second
    assert value("orbit_queue_held_tasks", reason="rate_limit") in (0, 1)
    types = {f.name: f.type for f in metric_names.families(text)}
    assert types["orbit_queue_leases_refused"] == "counter"
    assert types["orbit_queue_held_tasks"] == "gauge"
    assert [v for v in metric_names.violations(text, ("orbit_",)) if "_queue_" in v] == []
    checked = promtool.check_metrics(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def _namespace(tenant: Tenant) -> str:
    async with tenant.db.single_read() as conn:
        found = await queue_labels(conn, [tenant.queue_id])
    return found[tenant.queue_id][0]


async def test_fair_leases_take_turns_over_fairness_keys_in_the_database(
    tenant: Tenant, http: httpx.AsyncClient, server_url: str, tmp_path: Path
) -> None:
    """Fairness read and written back by real lease rounds (one slot: one task a round): A's
    backlog, submitted first, is dealt in turns with B and C, each key's passes kept in the
    database between rounds."""
    body = {"expected_revision": "1", "flow": {"fairness": True}}
    headers = {**tenant.headers(), "Content-Type": "application/json"}
    ok(await http.patch(f"/v1/queues/{tenant.queue_id}", json=body, headers=headers))
    for key in ["A"] * 9 + ["B"] * 3 + ["C"] * 3:
        await submit(http, tenant, payload={"sleep_ms": 5}, fairness_key=key)
    worker = WorkerProcess(server_url, tenant.token, [tenant.queue_id], tmp_path / "w.log", 1)
    with workers(worker):
        await wait_until(lambda: _leased(tenant, 15), 60, "15 leases", step=0.2)
    order = await _lease_order(tenant)
    assert order[:9] == ["A", "B", "C"] * 3
    assert order[9:] == ["A"] * 6


async def _lease_order(tenant: Tenant) -> list[str]:
    a = task_attempts.c
    query = (
        sa.select(tasks.c.fairness_key)
        .join(tasks, tasks.c.id == a.task_id)
        .where(a.queue_id == tenant.queue_id)
        .order_by(a.leased_at, a.id)
    )
    async with tenant.db.read() as conn:
        return [row[0] for row in (await conn.execute(query)).all()]


async def _leased(tenant: Tenant, count: int) -> bool:
    return len(await _lease_order(tenant)) >= count


@pytest.mark.parametrize(
    ("flow", "eager"),
    [({"fairness": True}, True), ({"fairness": True, "max_running_per_key": 5}, False)],
    ids=["fairness-alone", "with-a-limit"],
)
async def test_an_idle_worker_gets_a_fair_queues_task_with_its_submit_unless_a_limit_applies(
    tenant: Tenant,
    http: httpx.AsyncClient,
    server_url: str,
    tmp_path: Path,
    flow: dict[str, object],
    eager: bool,
) -> None:
    """Eager dispatch: with fairness alone, a task submitted while a worker waits idle is leased
    in its submit transaction (leased at the database time it was accepted: nothing older was
    ready, so it is its key's turn); with a limit it waits for a lease round."""
    body = {"expected_revision": "1", "flow": flow}
    headers = {**tenant.headers(), "Content-Type": "application/json"}
    ok(await http.patch(f"/v1/queues/{tenant.queue_id}", json=body, headers=headers))
    worker = WorkerProcess(server_url, tenant.token, [tenant.queue_id], tmp_path / "w.log", 2)
    with workers(worker):
        await worker.connected()
        await asyncio.sleep(1.5)  # the settings reached the process; its rounds found nothing
        task_id = await submit(http, tenant, payload={"sleep_ms": 5}, fairness_key="A")
        await wait_until(lambda: _leased(tenant, 1), 20, "the lease", step=0.1)
    a = task_attempts.c
    query = (
        sa.select(a.leased_at, tasks.c.created_at)
        .join(tasks, tasks.c.id == a.task_id)
        .where(a.task_id == task_id)
    )
    async with tenant.db.read() as conn:
        leased_at, created_at = (await conn.execute(query)).one()
    assert (leased_at == created_at) is eager
