"""Set-up and waiting helpers of the bulk operation suites: FAILED tasks written straight
through the store's row mapping (many at once, fast), and polling an operation to its end."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import Task, new_task
from agentcall.orbit.store.tables import tasks as task_table
from agentcall.orbit.store.tasks import task_row
from tests.support.orbit_server import Tenant

CHUNK = 1000


async def seed_failed(
    tenant: Tenant,
    count: int,
    *,
    error_code: str = "CARD_DECLINED",
    state: TaskState = TaskState.FAILED,
    handler: str = "file.convert",
) -> list[Task]:
    """Set-up only: `count` tasks in `state` with `error_code`, newest first by index."""
    request = parse_submit(read_json_text(json.dumps(tenant.body(handler=handler))))
    async with tenant.db.write() as conn:
        now = await tenant.db.now(conn)
        made = []
        for n in range(count):
            created = now - timedelta(milliseconds=n)
            task = new_task(
                new_id(), tenant.namespace_id, request, plan_times(request, now), created
            )
            made.append(replace(task, state=state, error_code=error_code, completed_at=created))
        rows = [task_row(t) | {"error_code": t.error_code} for t in made]
        for start in range(0, len(rows), CHUNK):
            await conn.execute(task_table.insert(), rows[start : start + CHUNK])
    return made


async def wait_finished(
    http: httpx.AsyncClient, tenant: Tenant, operation_id: str, timeout_s: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        response = await http.get(f"/v1/bulk-operations/{operation_id}", headers=tenant.headers())
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()["data"]
        if data["state"] != "RUNNING":
            return data
        if time.monotonic() > deadline:
            raise AssertionError(f"bulk operation still running: {data}")
        await asyncio.sleep(0.1)


def start_body(tenant: Tenant, action: str = "retry", **filters: str) -> dict[str, Any]:
    return {
        "filter": {"queue_id": tenant.queue_id, **filters},
        "action": action,
        "reason": "card processor fixed",
    }
