"""GET /v1/tasks with the search filter (docs/orbit/search.md) over HTTP on both
databases: each filter returns exactly the tasks a plain Python reading of the rule picks, in
keyset order, over several pages (O-LST-1), and paging stays stable under concurrent inserts."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import Task, new_task
from agentcall.orbit.domain.times import format_time, parse_time
from agentcall.orbit.store.tables import tasks as task_table
from agentcall.orbit.store.tasks import task_row
from tests.integration.orbit.wire import dumps, error, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]

HANDLERS = [("mail.send", "v1"), ("mail.send", "v2"), ("file.convert", "v1")]
STATES = [TaskState.WAITING, TaskState.FAILED, TaskState.NEEDS_REVIEW, TaskState.SUCCEEDED]
KEYS = ["order-1", "order-12", "order-2", "Order-1", "invoice-7", None, "order-\u00e9"]


async def seed(tenant: Tenant, count: int, start: datetime | None = None) -> list[Task]:
    """Set-up only: `count` tasks of every combination of handler, state, business key and
    error code, written through the store's row mapping in one transaction."""
    request = parse_submit(read_json_text(dumps(tenant.body()).decode()))
    async with tenant.db.write() as conn:
        now = start or await tenant.db.now(conn)
        made = [_varied(tenant, request, now, n) for n in range(count)]
        rows = [task_row(task) | {"error_code": task.error_code} for task in made]
        await conn.execute(task_table.insert(), rows)
    return made


def _varied(tenant: Tenant, request: Any, now: datetime, n: int) -> Task:
    created = now - timedelta(milliseconds=n // 3)  # created_at ties: the id decides
    task = new_task(new_id(), tenant.namespace_id, request, plan_times(request, created), created)
    handler, version = HANDLERS[n % 3]
    state = STATES[n % 4]
    finished = state in (TaskState.FAILED, TaskState.NEEDS_REVIEW, TaskState.SUCCEEDED)
    return replace(
        task,
        handler=handler,
        handler_version=version,
        state=state,
        business_key=KEYS[n % 7],
        error_code=("CARD_DECLINED" if n % 2 else "TIMEOUT") if finished else None,
        completed_at=created + timedelta(seconds=n % 5) if finished else None,
    )


def when(text: str) -> datetime:
    return parse_time(text, "test")


def matches(task: Task, params: dict[str, str]) -> bool:
    """The filter rules read plainly (the oracle the SQL is compared with)."""
    checks: dict[str, Callable[[str], bool]] = {
        "state": lambda v: task.state.value == v,
        "handler": lambda v: task.handler == v,
        "handler_version": lambda v: task.handler_version == v,
        "business_key": lambda v: task.business_key == v,
        "business_key_prefix": lambda v: (task.business_key or "\x00").startswith(v),
        "error_code": lambda v: task.error_code == v,
        "created_from": lambda v: task.created_at >= when(v),
        "created_before": lambda v: task.created_at < when(v),
        "completed_from": lambda v: task.completed_at is not None and task.completed_at >= when(v),
        "completed_before": lambda v: task.completed_at is not None and task.completed_at < when(v),
    }
    return all(checks[name](value) for name, value in params.items())


async def every_page(
    http: httpx.AsyncClient, tenant: Tenant, params: dict[str, str], limit: int = 7
) -> list[str]:
    found: list[str] = []
    cursor: str | None = None
    for _ in range(1000):
        query = {"queue_id": tenant.queue_id, "limit": str(limit), **params}
        if cursor:
            query["cursor"] = cursor
        data = ok(await http.get("/v1/tasks", params=query, headers=tenant.headers()))
        found.extend(item["id"] for item in data["items"])
        cursor = data.get("next_cursor")
        if cursor is None:
            return found
    raise AssertionError("paging did not end")


def newest_first(made: list[Task]) -> list[Task]:
    return sorted(made, key=lambda t: (t.created_at, t.id), reverse=True)


async def test_each_filter_returns_exactly_its_tasks(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    made = newest_first(await seed(tenant, 84))
    middle = format_time(made[40].created_at)
    done_mid = format_time(sorted(t.completed_at for t in made if t.completed_at)[20])
    cases: list[dict[str, str]] = [
        {"state": "FAILED"},
        {"handler": "mail.send"},
        {"handler": "mail.send", "handler_version": "v2"},
        {"business_key": "order-1"},
        {"business_key_prefix": "order-1"},
        {"business_key_prefix": "order-"},
        {"business_key_prefix": "Order"},
        {"error_code": "CARD_DECLINED"},
        {"created_from": middle},
        {"created_before": middle},
        {"completed_from": done_mid},
        {"completed_before": done_mid, "handler": "file.convert"},
        {"state": "NEEDS_REVIEW", "error_code": "TIMEOUT", "business_key_prefix": "o"},
    ]
    for params in cases:
        expected = [t.id for t in made if matches(t, params)]
        assert expected, params  # every case selects something
        assert await every_page(http, tenant, params) == expected, params


async def test_o_lst_1_a_cursor_is_bound_to_its_search_filter(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    await seed(tenant, 30)
    base = {"queue_id": tenant.queue_id, "limit": "2", "handler": "mail.send"}
    first = ok(await http.get("/v1/tasks", params=base, headers=tenant.headers()))
    other = {**base, "handler": "file.convert", "cursor": first["next_cursor"]}
    response = await http.get("/v1/tasks", params=other, headers=tenant.headers())
    assert "cursor" in error(response, 400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"handler_version": "v1"}, "handler_version"),
        ({"created_from": "2026-13-01T00:00:00Z"}, "created_from"),
        ({"sort": "created_at"}, "sort"),
        ({"business_key": "a", "business_key_prefix": "a"}, "business_key"),
    ],
)
async def test_bad_search_parameters_are_refused(
    http: httpx.AsyncClient, tenant: Tenant, params: dict[str, str], field: str
) -> None:
    query = {"queue_id": tenant.queue_id, **params}
    response = await http.get("/v1/tasks", params=query, headers=tenant.headers())
    assert field in error(response, 400, "INVALID_ARGUMENT")


async def test_o_lst_1_keyset_paging_is_stable_under_concurrent_inserts(
    http: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    """Tasks another client submits while a client pages through a filter are newer than
    its cursor: the pages hold every task that matched when paging began, each exactly once,
    in order, and none of the new ones, which a fresh search then finds first."""
    made = newest_first(await seed(tenant, 120))
    params = {"handler": "mail.send"}
    expected = [t.id for t in made if matches(t, params)]
    stop = asyncio.Event()
    numbers = itertools.count()
    inserted: list[str] = []

    async def insert_meanwhile(other: httpx.AsyncClient) -> None:
        while not stop.is_set():
            n = next(numbers)
            body = dumps(tenant.body(handler="mail.send", business_key=f"new-{n}"))
            headers = tenant.headers(key=f"concurrent-{n}")
            data = ok(await other.post("/v1/tasks", content=body, headers=headers), 201)
            inserted.append(data["task"]["id"])

    seen: list[str] = []
    during: list[int] = []  # tasks inserted by the time each page arrived

    async def page(query: dict[str, str]) -> dict[str, Any]:
        data = ok(await http.get("/v1/tasks", params=query, headers=tenant.headers()))
        during.append(len(inserted))
        await asyncio.sleep(0.02)  # let the writers in between pages
        return data

    query = {"queue_id": tenant.queue_id, "limit": "3", **params}
    first = await page(query)  # paging begins here: the writers start once it is answered
    seen.extend(item["id"] for item in first["items"])
    cursor: str | None = first.get("next_cursor")
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as other:
        writers = [asyncio.create_task(insert_meanwhile(other)) for _ in range(4)]
        try:
            while cursor is not None:
                data = await page({**query, "cursor": cursor})
                seen.extend(item["id"] for item in data["items"])
                cursor = data.get("next_cursor")
        finally:
            stop.set()
            await asyncio.gather(*writers)
    assert during[-1] > during[0], "tasks were inserted between the first and the last page"
    assert len(seen) == len(set(seen)), "no task twice"
    assert seen == expected, "every task that existed at the start, in order, no new one"
    fresh = await every_page(http, tenant, params, limit=50)
    new = len(inserted)
    assert set(fresh[:new]) == set(inserted), "the new tasks matched: a fresh search finds them"
    assert fresh[new:] == expected
