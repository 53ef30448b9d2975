"""POST /v1/tasks/{id}:cancel over HTTP: O-CAN-1, plus the concurrency guarantees of
O-SUB-1 (50 same-key submits -> one task) and O-CAN-1 (20 cancels -> one winner)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import audit_log, task_events, tasks
from tests.integration.orbit.wire import dumps, error, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


async def new_task(http: httpx.AsyncClient, tenant: Tenant, key: str) -> Any:
    response = await http.post(
        "/v1/tasks", content=dumps(tenant.body()), headers=tenant.headers(key=key)
    )
    return ok(response, 201)["task"]


async def cancel(
    http: httpx.AsyncClient,
    tenant: Tenant,
    task_id: str,
    key: str,
    revision: str = "1",
    reason: str = "source object was replaced",
) -> httpx.Response:
    body = dumps({"expected_revision": revision, "reason": reason})
    return await http.post(
        f"/v1/tasks/{task_id}:cancel", content=body, headers=tenant.headers(key=key)
    )


async def test_o_can_1_cancel_replay_and_conflicts(
    http: httpx.AsyncClient, tenant: Tenant, db: Database
) -> None:
    """O-CAN-1: 200 with the full latest task (CANCELLED, revision 2, times set); same key +
    same content replays with deduplicated=true; other content 409 IDEMPOTENCY_CONFLICT; a new
    key on a cancelled task 409 STATE_CONFLICT; event + audit written."""
    task = await new_task(http, tenant, "c-seed")
    first = ok(await cancel(http, tenant, task["id"], "c-1"))
    done = first["task"]
    assert first["deduplicated"] is False
    assert done["state"] == "CANCELLED" and done["revision"] == "2"
    assert done["cancel_requested_at"] == done["completed_at"] == done["updated_at"]
    assert parse_time(done["completed_at"], "c") >= parse_time(task["created_at"], "c")
    assert done["payload"] == task["payload"] and done["created_at"] == task["created_at"]
    replay = ok(await cancel(http, tenant, task["id"], "c-1"))
    assert replay == {"deduplicated": True, "task": done}
    error(
        await cancel(http, tenant, task["id"], "c-1", reason="other"), 409, "IDEMPOTENCY_CONFLICT"
    )
    error(await cancel(http, tenant, task["id"], "c-2"), 409, "STATE_CONFLICT")
    error(await cancel(http, tenant, task["id"], "c-3", revision="2"), 409, "STATE_CONFLICT")
    got = ok(await http.get(f"/v1/tasks/{task['id']}", headers=tenant.headers()))
    assert got == done
    async with db.read() as conn:
        events = (
            await conn.execute(
                sa.select(task_events)
                .where(task_events.c.task_id == task["id"])
                .order_by(task_events.c.revision)
            )
        ).all()
        audits = (
            (
                await conn.execute(
                    sa.select(audit_log.c.action).where(audit_log.c.task_id == task["id"])
                )
            )
            .scalars()
            .all()
        )
    assert [(e.kind, e.revision, e.from_state, e.to_state) for e in events] == [
        ("ACCEPTED", 1, None, "WAITING"),
        ("CANCELLED", 2, "WAITING", "CANCELLED"),
    ]
    assert sorted(audits) == ["tasks.cancel", "tasks.submit"]


async def test_o_can_1_stale_revision_and_body_rules(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    """O-CAN-1: a wrong expected_revision is 409 STATE_CONFLICT and stores nothing; body rules
    are 400; the key is scoped to the task."""
    task = await new_task(http, tenant, "s-seed")
    error(await cancel(http, tenant, task["id"], "s-1", revision="7"), 409, "STATE_CONFLICT")
    for revision in ("0", "01", "x"):
        error(
            await cancel(http, tenant, task["id"], "s-1", revision=revision),
            400,
            "INVALID_ARGUMENT",
        )
    error(await cancel(http, tenant, task["id"], "s-1", reason="   "), 400, "INVALID_ARGUMENT")
    error(await cancel(http, tenant, task["id"], "s-1", reason="r" * 1025), 400, "INVALID_ARGUMENT")
    ok(await cancel(http, tenant, task["id"], "s-1"))  # O-NOTE-6: the key was not consumed
    other = await new_task(http, tenant, "s-seed-2")
    assert ok(await cancel(http, tenant, other["id"], "s-1"))["deduplicated"] is False
    # the submit operation has its own key space
    assert ok(
        await http.post(
            "/v1/tasks", content=dumps(tenant.body()), headers=tenant.headers(key="s-1")
        ),
        201,
    )


async def test_o_can_1_replay_keeps_first_receipt(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-SUB-1: a submit replay after the task was cancelled still returns the first receipt."""
    task = await new_task(http, tenant, "r-seed")
    ok(await cancel(http, tenant, task["id"], "r-1"))
    replay = ok(
        await http.post(
            "/v1/tasks", content=dumps(tenant.body()), headers=tenant.headers(key="r-seed")
        )
    )
    assert replay == {"deduplicated": True, "task": task}


async def test_o_sub_1_fifty_concurrent_same_key_submits_make_one_task(
    http: httpx.AsyncClient, tenant: Tenant, db: Database
) -> None:
    """O-SUB-1: 50 concurrent submits with one key -> exactly one task, one 201, 49 replays."""
    responses = await asyncio.gather(
        *(
            http.post("/v1/tasks", content=dumps(tenant.body()), headers=tenant.headers(key="same"))
            for _ in range(50)
        )
    )
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {201: 1, 200: 49}, [r.text for r in responses if r.status_code >= 300]
    ids = {r.json()["data"]["task"]["id"] for r in responses}
    assert len(ids) == 1
    async with db.read() as conn:
        count = (
            await conn.execute(
                sa.select(sa.func.count())
                .select_from(tasks)
                .where(tasks.c.namespace_id == tenant.namespace_id)
            )
        ).scalar_one()
    assert count == 1


async def test_o_can_1_twenty_concurrent_cancels_one_winner(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    """O-CAN-1: 20 concurrent cancels with different keys -> one 200, nineteen 409
    STATE_CONFLICT; with one shared key -> one first receipt and nineteen replays of it."""
    task = await new_task(http, tenant, "w-seed")
    responses = await asyncio.gather(
        *(cancel(http, tenant, task["id"], f"w-{n}") for n in range(20))
    )
    assert Counter(r.status_code for r in responses) == {200: 1, 409: 19}
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 409} == {
        "STATE_CONFLICT"
    }
    shared = await new_task(http, tenant, "w-seed-2")
    responses = await asyncio.gather(
        *(cancel(http, tenant, shared["id"], "one") for _ in range(20))
    )
    assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
    flags = Counter(r.json()["data"]["deduplicated"] for r in responses)
    assert flags == {False: 1, True: 19}
    assert len({r.json()["data"]["task"]["updated_at"] for r in responses}) == 1
