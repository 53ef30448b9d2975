"""Task rows written straight through the store: a `demo.work` task as a submit would make it
(the ordinary submit decisions, `task_row`), for the suites that set up the tasks table
without HTTP."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import new_task
from agentcall.orbit.store.tasks import task_row


def demo_row(
    namespace_id: str,
    queue_id: str,
    now: datetime,
    *,
    ready_at: datetime | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """The row of a `demo.work` v1 task accepted at `now` with the submit `fields` (e.g.
    priority, fairness_key); `ready_at` moves its readiness, its lease order with it."""
    body = {
        "queue_id": queue_id,
        "handler": "demo.work",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {},
        **fields,
    }
    request = parse_submit(read_json(json.dumps(body).encode()))
    task = new_task(new_id(), namespace_id, request, plan_times(request, now), now)
    if ready_at is not None:
        task = replace(task, available_at=ready_at)
    return task_row(task)
