"""The per-queue metrics of a real `orbit serve` on both databases: the oldest READY task's
age (available_at come, not created_at), ready and scheduled counts apart, queues labelled
by namespace and queue name, finished tasks as a counter; `promtool check metrics` accepts
the whole exposition, and the shipped Orbit dashboard and alerts read only names it exports."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.db import Database
from tests.integration.orbit.wire import dumps, ok
from tests.support import dashboards, metric_names, promtool
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant, running_server

pytestmark = [pytest.mark.integration]


@pytest.fixture(params=KINDS)
def own_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of this test alone: the queue labels are first come, first kept."""
    with fresh_url(request.param, tmp_path, migrated=True) as url:
        yield url


@pytest.fixture
def own_server(own_url: str, tmp_path: Path) -> Iterator[str]:
    with running_server(own_url, tmp_path / "server.log", "--no-access-log") as url:
        yield url


@pytest.fixture
async def own_tenant(own_url: str, own_server: str) -> AsyncIterator[Tenant]:
    db = Database.open(own_url, pool_size=2)
    yield await Tenant.create(db, own_server)
    await db.close()


def at(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def submit(
    http: httpx.AsyncClient, tenant: Tenant, key: str, token: str | None = None, **body: Any
) -> None:
    response = await http.post(
        "/v1/tasks", content=dumps(tenant.body(**body)), headers=tenant.headers(token, key)
    )
    ok(response, 201)


async def test_oldest_ready_age_counts_from_available_at_by_queue_name(
    own_tenant: Tenant, own_server: str
) -> None:
    tenant = own_tenant
    bulk = await tenant.queue("bulk")
    _, bulk_token = await tenant.token_for([Permission.SUBMIT], [bulk])
    async with httpx.AsyncClient(base_url=own_server, timeout=30) as http:
        # the oldest WAITING task by creation is scheduled two hours ahead: not a backlog
        await submit(http, tenant, "later", available_at=at(timedelta(hours=2)))
        await submit(
            http, tenant, "bulk", bulk_token, queue_id=bulk, available_at=at(timedelta(hours=2))
        )
        await asyncio.sleep(4)
        ready_from = datetime.now(UTC)
        for n in range(2):  # available at once
            await submit(http, tenant, f"ready-{n}")
        await asyncio.sleep(2.1)  # past the counts' cache
        text = (await http.get("/metrics")).text
    ns = (await tenant.db.retrying(lambda: _namespace(tenant))) or ""
    got = metric_names.samples(text)

    def value(name: str, queue: str, **labels: str) -> float:
        key = tuple(sorted({"namespace": ns, "queue": queue, **labels}.items()))
        return got[(name, key)]

    age = value("orbit_queue_oldest_ready_age_seconds", "main")
    since_ready = (datetime.now(UTC) - ready_from).total_seconds()
    # from the ready tasks' available_at, not the creation of the scheduled one (>= 6 s ago)
    assert 2.0 <= age < 6.0, (age, since_ready)
    assert value("orbit_queue_ready_tasks", "main") == 2
    assert value("orbit_queue_scheduled_tasks", "main") == 1
    assert value("orbit_queue_tasks", "main", state="WAITING") == 3
    assert value("orbit_queue_oldest_ready_age_seconds", "bulk") == 0  # scheduled only
    assert value("orbit_queue_scheduled_tasks", "bulk") == 1
    assert value("orbit_queue_finished_tasks_total", "main", state="SUCCEEDED") == 0
    types = {f.name: f.type for f in metric_names.families(text)}
    assert types["orbit_queue_finished_tasks"] == "counter"
    assert types["orbit_queue_oldest_ready_age_seconds"] == "gauge"
    checked = promtool.check_metrics(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    queue_families = [v for v in metric_names.violations(text, ("orbit_",)) if "_queue_" in v]
    assert queue_families == []
    assert_deploy_reads_only(text)


def assert_deploy_reads_only(text: str) -> None:
    """Every metric the Orbit dashboard and the Orbit alerts read is one this server really
    exports (deploy/grafana/orbit.json, the `orbit` group of deploy/prometheus/alerts.yml)."""
    exported = promtool.exported(text)
    reads = dashboards.expressions(dashboards.dashboard("orbit"))
    reads += [(rule["alert"], rule["expr"]) for rule in dashboards.alert_rules("orbit")]
    unknown = {where: promtool.names_in(e) - exported for where, e in reads}
    assert {where: names for where, names in unknown.items() if names} == {}
    assert all(promtool.names_in(e) or "up{" in e for _, e in reads)


async def _namespace(tenant: Tenant) -> str | None:
    from agentcall.orbit.store.queue_labels import queue_labels

    async with tenant.db.single_read() as conn:
        labels = await queue_labels(conn, [tenant.queue_id])
    return labels[tenant.queue_id][0] if labels else None
