"""`GET`/`PATCH /v1/queues/{id}` over HTTP on both databases (docs/orbit/flow-control.md): the
flow settings are revisioned and strict, changing them needs queues:admin, a queue outside
the token's scope is not found, and a WAITING task held by a limit says why
(`waiting_reason`), as the queue's view counts it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.tables import tasks as task_table
from tests.integration.orbit.wire import error, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]

LIMITED = {"max_running_per_key": 1, "rate": {"per_second": 50, "burst": 100}}


async def patch(
    http: httpx.AsyncClient, tenant: Tenant, body: Any, token: str | None = None
) -> httpx.Response:
    headers = {**tenant.headers(token), "Content-Type": "application/json"}
    return await http.patch(f"/v1/queues/{tenant.queue_id}", json=body, headers=headers)


async def test_flow_settings_are_revisioned_and_replaced_whole(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """A queue never set is at revision 1 with every rule off; a PATCH at the current
    revision replaces the whole object (an omitted rule turns off), a stale one is 409."""
    url = f"/v1/queues/{tenant.queue_id}"
    first = ok(await http.get(url, headers=tenant.headers()))
    assert first == {
        "id": tenant.queue_id,
        "name": "main",
        "flow_revision": "1",
        "flow": {"fairness": False},
    }
    saved = ok(await patch(http, tenant, {"expected_revision": "1", "flow": LIMITED}))
    assert saved["flow_revision"] == "2"
    assert saved["flow"] == {
        "fairness": False,
        "max_running_per_key": 1,
        "rate": {"per_second": 50, "burst": 100, "per_key": False},
    }
    assert saved["waiting_by_reason"] == {"concurrency_limit": 0, "rate_limit": 0}
    assert saved["running_by_key"] == [] and saved["running_keys"] == 0
    stale = await patch(http, tenant, {"expected_revision": "1", "flow": {"fairness": True}})
    assert "revision 2" in error(stale, 409, "STATE_CONFLICT")
    fair = ok(await patch(http, tenant, {"expected_revision": "2", "flow": {"fairness": True}}))
    assert fair["flow"] == {"fairness": True} and fair["flow_revision"] == "3"
    assert ok(await http.get(url, headers=tenant.headers())) == fair


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expected_revision": "1", "flow": {"max_running": 3}}, "flow.max_running"),
        ({"expected_revision": "1", "flow": {"max_running_per_key": 0}}, "flow.max_running"),
        ({"expected_revision": "1", "flow": {"rate": {"burst": 5}}}, "flow.rate.per_second"),
        ({"expected_revision": "0", "flow": {}}, "expected_revision"),
        ({"expected_revision": 1, "flow": {}}, "expected_revision"),
        ({"flow": {}}, "expected_revision"),
        ({"expected_revision": "1", "flow": {"fairness": None}}, "flow.fairness"),
    ],
)
async def test_patch_is_strict_o_api_2(
    tenant: Tenant, http: httpx.AsyncClient, body: Any, field: str
) -> None:
    """O-API-2: unknown fields, nulls, out-of-range and missing values are refused (400)."""
    assert error(await patch(http, tenant, body), 400, "INVALID_ARGUMENT").startswith(field)


async def test_queue_admin_permission_and_scope_o_api_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """O-API-1: changing settings needs queues:admin (403 without), reading needs tasks:read;
    a queue outside the token's scope, or a malformed ID, is 404 like a missing one."""
    body = {"expected_revision": "1", "flow": {"fairness": True}}
    _, reader = await tenant.token_for([Permission.READ, Permission.SUBMIT])
    error(await patch(http, tenant, body, reader), 403, "PERMISSION_DENIED")
    _, admin = await tenant.token_for([Permission.QUEUE_ADMIN])
    error(
        await http.get(f"/v1/queues/{tenant.queue_id}", headers=tenant.headers(admin)),
        403,
        "PERMISSION_DENIED",
    )
    other = await tenant.queue()
    _, elsewhere = await tenant.token_for(list(Permission), [other])
    error(await patch(http, tenant, body, elsewhere), 404, "NOT_FOUND")
    for path in (f"/v1/queues/{tenant.queue_id}", "/v1/queues/NOT-AN-ID"):
        error(await http.get(path, headers=tenant.headers(elsewhere)), 404, "NOT_FOUND")
    assert ok(await patch(http, tenant, body, admin))["flow"] == {"fairness": True}


async def test_a_task_held_by_its_key_limit_says_why(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """A ready WAITING task whose concurrency key runs its limit shows `waiting_reason:
    concurrency_limit`; the queue's view counts it and lists the key's running task; a task of
    another key, held by nothing, shows no reason."""
    ok(await patch(http, tenant, {"expected_revision": "1", "flow": LIMITED}))
    ids = []
    for n, key in enumerate(("k", "k", "other")):
        response = await http.post(
            "/v1/tasks",
            json=tenant.body(concurrency_key=key),
            headers=tenant.headers(key=f"held-{n}"),
        )
        ids.append(ok(response, 201)["task"]["id"])
    async with tenant.db.write() as conn:  # set-up: the first task runs (no worker needed)
        running = task_table.update().where(task_table.c.id == ids[0]).values(state="RUNNING")
        await conn.execute(running)
    held = ok(await http.get(f"/v1/tasks/{ids[1]}", headers=tenant.headers()))
    assert held["state"] == "WAITING" and held["waiting_reason"] == "concurrency_limit"
    free = ok(await http.get(f"/v1/tasks/{ids[2]}", headers=tenant.headers()))
    assert "waiting_reason" not in free
    queue = ok(await http.get(f"/v1/queues/{tenant.queue_id}", headers=tenant.headers()))
    assert queue["running_by_key"] == [{"key": "k", "running": 1, "limit": 1}]
    assert queue["waiting_by_reason"] == {"concurrency_limit": 1, "rate_limit": 0}
    assert queue["running_keys"] == 1
    async with tenant.db.read() as conn:
        states = await conn.execute(sa.select(task_table.c.state).where(task_table.c.id == ids[1]))
        assert states.scalar_one() == "WAITING"
