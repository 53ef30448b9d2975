"""POST /v1/tasks:batch over real HTTP on SQLite and MariaDB (docs/orbit/task-control.md §4):
all or nothing, per-item results and errors, one Idempotency-Key (O-SUB-1), one transaction
with events and audit (O-SUB-4), limits and scopes (O-API-1, O-API-2)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import audit_log, task_events
from tests.integration.orbit.task_control_harness import key, post
from tests.integration.orbit.wire import error, ok
from tests.support.orbit_server import Tenant

pytestmark = pytest.mark.integration


async def queued(http: httpx.AsyncClient, tenant: Tenant) -> list[dict[str, Any]]:
    response = await http.get(
        f"/v1/tasks?queue_id={tenant.queue_id}&limit=100", headers=tenant.headers()
    )
    items: list[dict[str, Any]] = ok(response)["items"]
    return items


async def test_batch_accepts_all_replays_and_conflicts_o_sub_1(
    tenant: Tenant, http: httpx.AsyncClient, db: Database
) -> None:
    """O-SUB-1/O-SUB-4: 201 with one result per item in order; every task readable with its
    own fields; same key + same body → 200 with the first receipt; changed body → 409
    IDEMPOTENCY_CONFLICT; one ACCEPTED event and one tasks.batch audit row per task."""
    bodies = [tenant.body(business_key=f"b-{i}", payload={"n": i, "exact": 1.10}) for i in range(3)]
    bodies[2]["recovery_safety"] = "IDEMPOTENT"
    # a column set in one row only: the multi-row INSERT must keep it there and nowhere else
    start_by = format_time(datetime.now(UTC) + timedelta(hours=1))
    bodies[1]["start_deadline_at"] = start_by
    first = await post(http, tenant, "/v1/tasks:batch", {"tasks": bodies}, "batch-1")
    data = ok(first, 201)
    items = data["items"]
    assert data["deduplicated"] is False
    assert [(i["index"], i["state"], i["revision"]) for i in items] == [
        (0, "WAITING", "1"),
        (1, "WAITING", "1"),
        (2, "WAITING", "1"),
    ]
    for index, item in enumerate(items):
        task = ok(await http.get(f"/v1/tasks/{item['task_id']}", headers=tenant.headers()))
        assert task["business_key"] == f"b-{index}" and task["payload"]["n"] == index
        assert task.get("start_deadline_at") == (start_by if index == 1 else None), task
    assert (
        '"exact":1.1'
        in (await http.get(f"/v1/tasks/{items[0]['task_id']}", headers=tenant.headers())).text
    )
    assert task["recovery_safety"] == "IDEMPOTENT"
    replay = ok(await post(http, tenant, "/v1/tasks:batch", {"tasks": bodies}, "batch-1"))
    assert replay == {"deduplicated": True, "items": items}
    changed = [*bodies[:2], tenant.body(business_key="other")]
    error(
        await post(http, tenant, "/v1/tasks:batch", {"tasks": changed}, "batch-1"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    reordered = [bodies[1], bodies[0], bodies[2]]
    error(
        await post(http, tenant, "/v1/tasks:batch", {"tasks": reordered}, "batch-1"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    ids = [item["task_id"] for item in items]
    async with db.read() as conn:
        events = (
            (
                await conn.execute(
                    sa.select(task_events.c.kind).where(task_events.c.task_id.in_(ids))
                )
            )
            .scalars()
            .all()
        )
        actions = (
            (await conn.execute(sa.select(audit_log.c.action).where(audit_log.c.task_id.in_(ids))))
            .scalars()
            .all()
        )
    assert Counter(events) == {"ACCEPTED": 3} and Counter(actions) == {"tasks.batch": 3}
    assert len(await queued(http, tenant)) == 3


async def test_batch_invalid_items_reject_everything_o_note_6(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """All or nothing: every bad item is listed (index + field), nothing is written, and the
    key is not consumed (O-NOTE-6): the corrected batch with the same key is accepted."""
    bad = [
        tenant.body(),
        tenant.body(handler="-bad"),
        tenant.body(),
        {k: v for k, v in tenant.body().items() if k != "payload_version"},
        tenant.body(start_deadline_at="2001-01-01T00:00:00Z"),
    ]
    response = await post(http, tenant, "/v1/tasks:batch", {"tasks": bad}, "batch-bad")
    body = response.json()
    assert response.status_code == 400 and body["error"]["code"] == "INVALID_ARGUMENT"
    assert [(i["index"], i["field"]) for i in body["error"]["items"]] == [
        (1, "handler"),
        (3, "payload_version"),
    ]
    assert "tasks[1].handler" in body["error"]["message"]
    assert await queued(http, tenant) == []
    timed = [tenant.body(), tenant.body(start_deadline_at="2001-01-01T00:00:00Z")]
    late = await post(http, tenant, "/v1/tasks:batch", {"tasks": timed}, "batch-bad")
    assert [(i["index"], i["field"]) for i in late.json()["error"]["items"]] == [
        (1, "start_deadline_at")
    ]
    assert await queued(http, tenant) == []
    fixed = ok(
        await post(http, tenant, "/v1/tasks:batch", {"tasks": [tenant.body()]}, "batch-bad"), 201
    )
    assert len(fixed["items"]) == 1 and len(await queued(http, tenant)) == 1


@pytest.mark.parametrize(
    ("make", "status", "code"),
    [
        (lambda t: {"tasks": []}, 400, "INVALID_ARGUMENT"),
        (lambda t: {"tasks": [t.body()] * 101}, 400, "INVALID_ARGUMENT"),
        (lambda t: {"tasks": [t.body()], "atomic": True}, 400, "INVALID_ARGUMENT"),
        (lambda t: {"Tasks": [t.body()]}, 400, "INVALID_ARGUMENT"),
        (lambda t: [t.body()], 400, "INVALID_ARGUMENT"),
        (lambda t: {"tasks": [t.body(), t.body(queue_id="f" * 32)]}, 403, "PERMISSION_DENIED"),
    ],
)
async def test_batch_limits_and_scope_o_api_1_o_api_2(
    tenant: Tenant, http: httpx.AsyncClient, make: Any, status: int, code: str
) -> None:
    """1-100 items, strict top level, every item's queue in the token's scope."""
    error(await post(http, tenant, "/v1/tasks:batch", make(tenant)), status, code)
    assert await queued(http, tenant) == []


async def test_batch_permission_and_media_type_o_api_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    _, reader = await tenant.token_for([Permission.READ])
    error(
        await post(http, tenant, "/v1/tasks:batch", {"tasks": [tenant.body()]}, token=reader),
        403,
        "PERMISSION_DENIED",
    )
    plain = await http.post(
        "/v1/tasks:batch",
        content=json.dumps({"tasks": [tenant.body()]}),
        headers={**tenant.headers(key=key()), "Content-Type": "text/plain"},
    )
    error(plain, 415, "UNSUPPORTED_MEDIA_TYPE")


async def test_batch_concurrent_same_key_one_acceptance_o_sub_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """O-SUB-1: 10 concurrent identical batches with one key → one 201, nine 200 replays of the
    same receipt, and exactly the batch's tasks exist."""
    body = {"tasks": [tenant.body(business_key=f"c-{i}") for i in range(5)]}
    responses = await asyncio.gather(
        *(post(http, tenant, "/v1/tasks:batch", body, "batch-c") for _ in range(10))
    )
    assert Counter(r.status_code for r in responses) == {201: 1, 200: 9}
    assert len({json.dumps(r.json()["data"]["items"]) for r in responses}) == 1
    assert len(await queued(http, tenant)) == 5
