"""The inspection API over HTTP on both databases: `GET /v1/queues` (the token's queues,
counts per state, oldest WAITING), `GET /v1/workers`, the long-poll `GET /v1/tasks/{id}?wait_ms=`
(answers when the task settles or the wait ends; strict `wait_ms`), `/readyz` and the task
gauges of `/metrics`, with the task API's auth, envelope and strict rules."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.tokens import Permission
from tests.integration.orbit.wire import TIME, dumps, error, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]
STATES = {"WAITING", "LEASED", "RUNNING", "NEEDS_REVIEW", "SUCCEEDED", "FAILED", "CANCELLED"}


async def _submit(http: httpx.AsyncClient, tenant: Tenant, key: str, **body: Any) -> dict[str, Any]:
    response = await http.post(
        "/v1/tasks", content=dumps(tenant.body(**body)), headers=tenant.headers(key=key)
    )
    task: dict[str, Any] = ok(response, 201)["task"]
    return task


async def _queues_until(http: httpx.AsyncClient, token: str, waiting: int) -> list[Any]:
    """The listing once the counts (cached a few seconds) show `waiting` WAITING tasks."""
    deadline = time.monotonic() + 10
    while True:
        items: list[Any] = ok(await http.get("/v1/queues", headers=_auth(token)))["items"]
        if items and items[0]["counts"]["WAITING"] == waiting or time.monotonic() > deadline:
            return items
        await asyncio.sleep(0.3)


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_queues_show_the_tokens_queues_with_counts(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    for number in range(3):
        await _submit(http, tenant, f"q-{number}")
    items = await _queues_until(http, tenant.token, 3)
    assert [item["id"] for item in items] == [tenant.queue_id]
    queue = items[0]
    assert queue["name"] == "main"
    assert set(queue["counts"]) == STATES and queue["counts"]["WAITING"] == 3
    assert sum(queue["counts"].values()) == 3
    assert TIME.fullmatch(queue["oldest_waiting_at"]) and queue["oldest_waiting_age_ms"] >= 0
    other = await tenant.queue("other")
    _, scoped = await tenant.token_for([Permission.READ], [other])
    only = ok(await http.get("/v1/queues", headers=_auth(scoped)))["items"]
    assert [(q["id"], q["name"], q["counts"]["WAITING"]) for q in only] == [(other, "other", 0)]
    assert "oldest_waiting_at" not in only[0]


async def test_inspection_follows_the_api_rules(http: httpx.AsyncClient, tenant: Tenant) -> None:
    _, submit_only = await tenant.token_for([Permission.SUBMIT])
    for path in ("/v1/queues", "/v1/workers"):
        error(await http.get(path), 401, "UNAUTHENTICATED")
        error(await http.get(path, headers=_auth(submit_only)), 403, "PERMISSION_DENIED")
        error(
            await http.get(path + "?limit=1", headers=_auth(tenant.token)), 400, "INVALID_ARGUMENT"
        )
    assert ok(await http.get("/v1/workers", headers=_auth(tenant.token))) == {"items": []}


async def test_wait_ms_answers_when_the_task_settles(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Cancelled by another request while a long-poll waits: the poll answers at once."""
    task = await _submit(http, tenant, "wait-cancel")
    path = f"/v1/tasks/{task['id']}?wait_ms=20000"

    async def cancel_soon() -> None:
        await asyncio.sleep(0.3)
        body = dumps({"expected_revision": "1", "reason": "stop"})
        ok(
            await http.post(
                f"/v1/tasks/{task['id']}:cancel",
                content=body,
                headers=tenant.headers(key="cancel-1"),
            )
        )

    started = time.monotonic()
    answer, _ = await asyncio.gather(http.get(path, headers=_auth(tenant.token)), cancel_soon())
    elapsed = time.monotonic() - started
    assert ok(answer)["state"] == "CANCELLED"
    assert elapsed < 2.0, elapsed  # woken by the cancel, not by the end of the 20 s wait


async def test_wait_ms_ends_with_the_task_as_last_read(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    task = await _submit(http, tenant, "wait-timeout")
    started = time.monotonic()
    answer = ok(await http.get(f"/v1/tasks/{task['id']}?wait_ms=400", headers=_auth(tenant.token)))
    assert 0.35 < time.monotonic() - started < 3.0
    assert answer["state"] == "WAITING" and answer["id"] == task["id"]
    settled = await _submit(http, tenant, "wait-settled")
    body = dumps({"expected_revision": "1", "reason": "stop"})
    ok(
        await http.post(
            f"/v1/tasks/{settled['id']}:cancel",
            content=body,
            headers=tenant.headers(key="cancel-2"),
        )
    )
    started = time.monotonic()
    path = f"/v1/tasks/{settled['id']}?wait_ms=30000"
    assert ok(await http.get(path, headers=_auth(tenant.token)))["state"] == "CANCELLED"
    assert time.monotonic() - started < 1.0  # already settled: no wait at all


@pytest.mark.parametrize("value", ["", "-1", "1.5", "60001", "007", "1e3"])
async def test_wait_ms_is_strict(http: httpx.AsyncClient, tenant: Tenant, value: str) -> None:
    task = await _submit(http, tenant, f"wait-strict-{value}")
    path = f"/v1/tasks/{task['id']}?wait_ms={value}"
    assert "wait_ms" in error(
        await http.get(path, headers=_auth(tenant.token)), 400, "INVALID_ARGUMENT"
    )
    twice = f"/v1/tasks/{task['id']}?wait_ms=1&wait_ms=2"
    error(await http.get(twice, headers=_auth(tenant.token)), 400, "INVALID_ARGUMENT")
    other = f"/v1/tasks/{task['id']}?wait_ms=1&x=2"
    error(await http.get(other, headers=_auth(tenant.token)), 400, "INVALID_ARGUMENT")


async def test_wait_ms_sees_only_what_the_token_sees(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    task = await _submit(http, tenant, "wait-hidden")
    other = await tenant.queue()
    _, elsewhere = await tenant.token_for([Permission.READ], [other])
    path = f"/v1/tasks/{task['id']}?wait_ms=100"
    error(await http.get(path, headers=_auth(elsewhere)), 404, "NOT_FOUND")


async def test_readiness_and_task_gauges(http: httpx.AsyncClient, tenant: Tenant) -> None:
    ready = await http.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}
    assert (await http.get("/healthz")).status_code == 200
    await _submit(http, tenant, "gauge")
    await _queues_until(http, tenant.token, 1)
    await asyncio.sleep(2.1)  # past the counts' cache
    text = (await http.get("/metrics")).text
    line = f'orbit_tasks{{queue_id="{tenant.queue_id}",state="WAITING"}} 1.0'
    assert line in text, text[:2000]
    for name in (
        "orbit_workers_connected",
        "orbit_attempt_duration_seconds",
        "orbit_attempt_outcomes_total",
        "orbit_lease_wait_seconds",
    ):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
