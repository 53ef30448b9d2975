"""Bulk operations over HTTP on both databases (docs/orbit/bulk.md): preview,
start, progress, the tasks' outcomes, idempotent starts, cancel, and the refusals."""

from __future__ import annotations

import httpx
import pytest

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.tokens import Permission
from tests.integration.orbit.wire import dumps, error, ok
from tests.support.orbit_bulk import seed_failed, start_body, wait_finished
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


async def start(http: httpx.AsyncClient, tenant: Tenant, body: dict[str, object]) -> dict:
    response = await http.post(
        "/v1/bulk-operations", content=dumps(body), headers=tenant.headers(key=new_id())
    )
    return ok(response, 201)["operation"]


async def test_preview_counts_the_filter_and_shows_the_newest_tasks(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    made = await seed_failed(tenant, 25)
    await seed_failed(tenant, 5, error_code="TIMEOUT")
    body = start_body(tenant, error_code="CARD_DECLINED")
    response = await http.post(
        "/v1/bulk-operations:preview", content=dumps(body), headers=tenant.headers(key="p")
    )
    data = ok(response)
    assert data["matched"] == 25 and data["more"] is False
    assert [item["id"] for item in data["sample"]] == [t.id for t in made[:10]]


async def test_a_retry_by_filter_acts_on_every_matched_task_once(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    made = await seed_failed(tenant, 450)
    await seed_failed(tenant, 3, error_code="TIMEOUT")
    op = await start(http, tenant, start_body(tenant, state="FAILED", error_code="CARD_DECLINED"))
    assert op["matched"] == 450 and op["action"] == "retry"
    done = await wait_finished(http, tenant, op["id"])
    assert (done["state"], done["done"], done["skipped"], done["failed"]) == (
        "SUCCEEDED",
        450,
        0,
        0,
    )
    for task in (made[0], made[449]):
        got = ok(await http.get(f"/v1/tasks/{task.id}", headers=tenant.headers()))
        assert (got["state"], got["revision"]) == ("WAITING", str(task.revision + 1))
    left = {"queue_id": tenant.queue_id, "state": "FAILED", "error_code": "TIMEOUT"}
    remaining = ok(await http.get("/v1/tasks", params=left, headers=tenant.headers()))
    assert len(remaining["items"]) == 3


async def test_the_same_key_answers_the_operation_it_started(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await seed_failed(tenant, 3)
    body = start_body(tenant, state="FAILED")
    headers = tenant.headers(key="bulk-once")
    first = ok(await http.post("/v1/bulk-operations", content=dumps(body), headers=headers), 201)
    again = ok(await http.post("/v1/bulk-operations", content=dumps(body), headers=headers))
    assert again["deduplicated"] is True
    assert again["operation"]["id"] == first["operation"]["id"]
    other = {**body, "reason": "another"}
    response = await http.post("/v1/bulk-operations", content=dumps(other), headers=headers)
    error(response, 409, "IDEMPOTENCY_CONFLICT")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"filter": "queue"}, "filter"),
        ({"action": "delete"}, "action"),
        ({"reason": ""}, "reason"),
        ({"outcome": "failed"}, "outcome"),
    ],
)
async def test_bad_bulk_requests_are_refused(
    http: httpx.AsyncClient, tenant: Tenant, change: dict[str, object], field: str
) -> None:
    body = {**start_body(tenant, state="FAILED"), **change}
    response = await http.post(
        "/v1/bulk-operations", content=dumps(body), headers=tenant.headers(key=new_id())
    )
    assert field in error(response, 400, "INVALID_ARGUMENT")


async def test_an_empty_filter_is_refused(http: httpx.AsyncClient, tenant: Tenant) -> None:
    body = start_body(tenant)
    for path in ("/v1/bulk-operations", "/v1/bulk-operations:preview"):
        response = await http.post(path, content=dumps(body), headers=tenant.headers(key="e"))
        assert "narrow" in error(response, 400, "INVALID_ARGUMENT")


async def test_cancel_stops_a_running_operation_and_it_is_listed(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await seed_failed(tenant, 2000)
    op = await start(http, tenant, start_body(tenant, state="FAILED"))
    response = await http.post(f"/v1/bulk-operations/{op['id']}:cancel", headers=tenant.headers())
    cancelled = ok(response)
    assert cancelled["state"] in ("CANCELLED", "SUCCEEDED")
    final = await wait_finished(http, tenant, op["id"])
    assert final["state"] == cancelled["state"]
    if final["state"] == "CANCELLED":
        assert final["done"] < 2000
    listed = ok(await http.get("/v1/bulk-operations", headers=tenant.headers()))
    assert op["id"] in [item["id"] for item in listed["items"]]


async def test_a_token_without_the_queue_sees_no_operation(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await seed_failed(tenant, 1)
    op = await start(http, tenant, start_body(tenant, state="FAILED"))
    other_queue = await tenant.queue()
    _, token = await tenant.token_for([Permission.READ], [other_queue])
    response = await http.get(f"/v1/bulk-operations/{op['id']}", headers=tenant.headers(token))
    error(response, 404, "NOT_FOUND")


async def test_starting_and_cancelling_are_in_the_audit_log(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await seed_failed(tenant, 2000)
    op = await start(http, tenant, start_body(tenant, state="FAILED"))
    await http.post(f"/v1/bulk-operations/{op['id']}:cancel", headers=tenant.headers())
    final = await wait_finished(http, tenant, op["id"])
    found = ok(await http.get("/v1/audit", params={"target": op["id"]}, headers=tenant.headers()))
    by_action = {entry["action"]: entry for entry in found["items"]}
    created = by_action["bulk.create"]
    assert created["target"] == {"kind": "bulk_operation", "id": op["id"]}
    assert created["detail"]["matched"] == 2000 and created["detail"]["action"] == "retry"
    assert created["detail"]["filter"] == {"queue_id": tenant.queue_id, "state": "FAILED"}
    assert ("bulk.cancel" in by_action) == (final["state"] == "CANCELLED")
