"""GET /v1/tasks/{id} and GET /v1/tasks (keyset pages) over HTTP: O-LST-1, O-NOTE-2."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import new_task
from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.tables import tasks as task_table
from agentcall.orbit.store.tasks import task_row
from tests.integration.orbit.wire import dumps, error, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


async def submit_many(
    http: httpx.AsyncClient, tenant: Tenant, count: int, prefix: str, concurrency: int = 16
) -> list[str]:
    """Submit `count` tasks with `concurrency` requests in flight; return their IDs."""
    ids: list[str] = []
    numbers = iter(range(count))

    async def worker() -> None:
        for number in numbers:
            body = dumps(tenant.body(business_key=f"{prefix}-{number}"))
            response = await http.post(
                "/v1/tasks", content=body, headers=tenant.headers(key=f"{prefix}-{number}")
            )
            ids.append(ok(response, 201)["task"]["id"])

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ids


async def bulk_insert(tenant: Tenant, count: int) -> list[str]:
    """Set-up only: `count` accepted tasks written in one transaction through the store's own
    row mapping, sharing a few created_at values so that the id tie-breaker is exercised."""
    request = parse_submit(read_json_text(dumps(tenant.body()).decode()))
    async with tenant.db.write() as conn:
        now = await tenant.db.now(conn)
        made = [
            new_task(
                new_id(),
                tenant.namespace_id,
                request,
                plan_times(request, now),
                now - timedelta(milliseconds=number % 7),
            )
            for number in range(count)
        ]
        await conn.execute(task_table.insert(), [task_row(task) for task in made])
    return [task.id for task in made]


async def list_page(http: httpx.AsyncClient, tenant: Tenant, **params: str) -> Any:
    response = await http.get(
        "/v1/tasks", params={"queue_id": tenant.queue_id, **params}, headers=tenant.headers()
    )
    return ok(response)


async def test_get_task_full_object(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """GET returns the current full task; unknown and malformed IDs are 404."""
    created = ok(
        await http.post("/v1/tasks", content=dumps(tenant.body()), headers=tenant.headers(key="g")),
        201,
    )["task"]
    assert ok(await http.get(f"/v1/tasks/{created['id']}", headers=tenant.headers())) == created
    error(await http.get(f"/v1/tasks/{'0' * 32}", headers=tenant.headers()), 404, "NOT_FOUND")
    error(await http.get("/v1/tasks/NOT-AN-ID", headers=tenant.headers()), 404, "NOT_FOUND")
    error(
        await http.get(f"/v1/tasks/{created['id']}?x=1", headers=tenant.headers()),
        400,
        "INVALID_ARGUMENT",
    )


async def test_o_lst_1_pagination_over_1000_tasks_while_inserting(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    """O-LST-1: 1,000 tasks read page by page while more are inserted: every task that existed
    before is seen exactly once, no duplicates, strictly (created_at DESC, id DESC)."""
    before = set(await bulk_insert(tenant, 1000))
    assert len(before) == 1000
    stop, running = asyncio.Event(), asyncio.Event()

    async def inserter() -> int:
        made = 0
        for number in itertools.count():
            if stop.is_set():
                return made
            body = dumps(tenant.body(business_key=f"late-{number}"))
            ok(
                await http.post(
                    "/v1/tasks", content=body, headers=tenant.headers(key=f"late-{number}")
                ),
                201,
            )
            made += 1
            running.set()
        return made

    background = asyncio.create_task(inserter())
    await running.wait()  # inserts are under way before the first page is read
    seen: list[tuple[str, str]] = []
    cursor: str | None = None
    for limit in itertools.cycle(["100", "37", "1", "64"]):
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        data = await list_page(http, tenant, **params)
        assert len(data["items"]) <= int(limit)
        seen += [(item["created_at"], item["id"]) for item in data["items"]]
        cursor = data.get("next_cursor")
        if cursor is None:
            break
    stop.set()
    late = await background
    ids = [task_id for _, task_id in seen]
    assert len(ids) == len(set(ids)), "duplicates across pages"
    assert before <= set(ids), f"missing {len(before - set(ids))} tasks"
    keys = [(parse_time(created, "c"), task_id) for created, task_id in seen]
    assert keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys)
    assert late > 0, "the inserter ran during pagination"


async def test_o_note_2_exactly_full_last_page(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-NOTE-2: no next_cursor when the last page is exactly full; empty list is items: []."""
    assert await list_page(http, tenant) == {"items": []}
    await submit_many(http, tenant, 4, "full", concurrency=1)
    first = await list_page(http, tenant, limit="2")
    assert len(first["items"]) == 2 and "next_cursor" in first
    second = await list_page(http, tenant, limit="2", cursor=first["next_cursor"])
    assert len(second["items"]) == 2 and "next_cursor" not in second
    everything = await list_page(http, tenant, limit="4")
    assert len(everything["items"]) == 4 and "next_cursor" not in everything


async def test_o_lst_1_summary_state_filter_and_default_limit(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    """O-LST-1: default limit 20; summaries omit payload/result/retry; state filter."""
    ids = await submit_many(http, tenant, 22, "s", concurrency=4)
    page = await list_page(http, tenant)
    assert len(page["items"]) == 20 and "next_cursor" in page
    item = page["items"][0]
    assert not {"payload", "result", "retry", "namespace_id", "payload_version"} & set(item)
    assert {"id", "state", "revision", "created_at", "updated_at", "deadline_at"} <= set(item)
    cancel = dumps({"expected_revision": "1", "reason": "filter test"})
    ok(
        await http.post(
            f"/v1/tasks/{ids[0]}:cancel", content=cancel, headers=tenant.headers(key="f")
        )
    )
    cancelled = await list_page(http, tenant, state="CANCELLED")
    assert [i["id"] for i in cancelled["items"]] == [ids[0]]
    waiting = await list_page(http, tenant, state="WAITING", limit="100")
    assert len(waiting["items"]) == 21 and ids[0] not in {i["id"] for i in waiting["items"]}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "queue_id"),
        ({"queue_id": "nope"}, "queue_id"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "05"}, "limit"),
        ({"limit": "9" * 5000}, "limit"),
        ({"state": "waiting"}, "state"),
        ({"state": "DONE"}, "state"),
        ({"cursor": "garbage"}, "cursor"),
        ({"cursor": "A" * 1025}, "cursor"),
        ({"sort": "asc"}, "sort"),
    ],
)
async def test_o_lst_1_bad_parameters(
    http: httpx.AsyncClient, tenant: Tenant, params: dict[str, str], field: str
) -> None:
    if "queue_id" not in params and field != "queue_id":
        params = {"queue_id": tenant.queue_id, **params}
    response = await http.get("/v1/tasks", params=params, headers=tenant.headers())
    assert error(response, 400, "INVALID_ARGUMENT").startswith(field)


async def test_o_lst_1_parameters_once_and_cursor_binding(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    """O-LST-1: each parameter once; a cursor only continues its own queue/state listing."""
    await submit_many(http, tenant, 3, "b", concurrency=1)
    query = f"queue_id={tenant.queue_id}&limit=1&limit=2"
    error(await http.get(f"/v1/tasks?{query}", headers=tenant.headers()), 400, "INVALID_ARGUMENT")
    cursor = (await list_page(http, tenant, limit="1"))["next_cursor"]
    message = error(
        await http.get(
            "/v1/tasks",
            params={
                "queue_id": tenant.queue_id,
                "state": "WAITING",
                "cursor": cursor,
            },
            headers=tenant.headers(),
        ),
        400,
        "INVALID_ARGUMENT",
    )
    assert "different queue_id or state" in message
    other = await tenant.queue()
    _, token = await tenant.token_for([Permission.READ], [tenant.queue_id, other])
    response = await http.get(
        "/v1/tasks", params={"queue_id": other, "cursor": cursor}, headers=tenant.headers(token)
    )
    error(response, 400, "INVALID_ARGUMENT")
