"""The SDK against the real server on both databases."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

import agentcall.orbit.sdk.client as sdk
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


def request(tenant: Tenant, **changes: object) -> sdk.SubmitTaskRequest:
    values: dict[str, object] = {
        "queue_id": tenant.queue_id,
        "handler": "file.convert",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {
            "big": 9007199254740993,
            "dec": Decimal("1.10"),
            "tiny": Decimal("1e-300"),
            "list": [Decimal("0.10"), None, True],
        },
    }
    values.update(changes)
    return sdk.SubmitTaskRequest(**values)  # type: ignore[arg-type]


async def test_async_client_end_to_end(tenant: Tenant) -> None:
    """Submit/replay/get/list/cancel with exact numbers and typed errors (AsyncClient)."""
    async with sdk.AsyncClient(tenant.base_url, tenant.token) as orbit:
        soon = datetime.now(UTC) + timedelta(minutes=5)
        req = request(
            tenant,
            available_at=soon,
            retry=sdk.RetryPolicy(max_attempts=3),
            recovery_safety="IDEMPOTENT",
            business_key="sdk-1",
        )
        first = await orbit.submit_task("sdk-key", req)
        assert not first.deduplicated and first.task.retry == sdk.RetryPolicy(3, 1000, 30000, 30000)
        assert first.task.available_at == soon
        again = await orbit.submit_task("sdk-key", req)
        assert again.deduplicated and again.task == first.task
        task = await orbit.get_task(first.task.id)
        assert task.payload == req.payload
        assert str(task.payload["dec"]) == "1.10" and str(task.payload["list"][0]) == "0.10"
        with pytest.raises(sdk.IdempotencyConflictError):
            await orbit.submit_task("sdk-key", request(tenant))
        items = [i async for i in orbit.iter_tasks(sdk.ListTasksRequest(tenant.queue_id, limit=1))]
        assert [i.id for i in items] == [task.id]
        done = await orbit.cancel_task(task.id, "sdk-cancel", sdk.CancelTaskRequest(1, "done"))
        assert done.task.state == "CANCELLED" and done.task.revision == 2
        with pytest.raises(sdk.StateConflictError):
            await orbit.cancel_task(task.id, "sdk-cancel-2", sdk.CancelTaskRequest(2, "again"))
        with pytest.raises(sdk.NotFoundError):
            await orbit.get_task("0" * 32)
        with pytest.raises(sdk.InvalidArgumentError, match="handler"):
            await orbit.submit_task("sdk-bad", request(tenant, handler="-bad"))
    async with sdk.AsyncClient(tenant.base_url, "orb_wrong") as stranger:
        with pytest.raises(sdk.UnauthenticatedError):
            await stranger.get_task(task.id)


async def test_sync_client_end_to_end(tenant: Tenant) -> None:
    """The blocking Client shares requests and parsing with AsyncClient."""

    def run() -> tuple[sdk.TaskReceipt, sdk.Task, list[sdk.TaskSummary]]:
        with sdk.Client(tenant.base_url, tenant.token) as orbit:
            receipt = orbit.submit_task("sync-key", request(tenant))
            task = orbit.get_task(receipt.task.id)
            page = orbit.list_tasks(sdk.ListTasksRequest(tenant.queue_id, state="WAITING"))
            return receipt, task, page.items

    receipt, task, items = await asyncio.to_thread(run)
    assert receipt.task == task and task.payload["big"] == 9007199254740993
    assert [i.id for i in items] == [task.id]
