"""Bulk operations through the SDK (`AsyncClient.bulk`, `Client.bulk`) and the CLI (`orbit bulk
preview|start|show|list|cancel`) against the real server, on SQLite and MariaDB
(docs/orbit/bulk.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.sdk.client import (
    AsyncClient,
    BulkFilter,
    BulkRequest,
    Client,
    InvalidArgumentError,
    RetryTaskRequest,
)
from tests.support.orbit_bulk import seed_failed
from tests.support.orbit_server import Tenant

pytestmark = pytest.mark.integration


def orbit(tenant: Tenant, *args: str, code: int = 0) -> Any:
    env = {"ORBIT_URL": tenant.base_url, "ORBIT_TOKEN": tenant.token}
    result = CliRunner().invoke(main, ["bulk", *args], env=env, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def orbit_json(tenant: Tenant, *args: str) -> Any:
    return json.loads(orbit(tenant, *args, "--json").stdout.splitlines()[-1])


async def test_sdk_previews_starts_follows_and_lists_an_operation(tenant: Tenant) -> None:
    made = await seed_failed(tenant, 30)
    request = BulkRequest(BulkFilter(tenant.queue_id, state="FAILED"), "retry", "fixed")
    async with AsyncClient(tenant.base_url, tenant.token) as client:
        preview = await client.bulk.preview(request)
        assert (preview.matched, preview.more, len(preview.sample)) == (30, False, 10)
        changed = made[5]
        retry = RetryTaskRequest(changed.revision, "by hand")
        await client.retry_task(changed.id, "own", retry)
        started = await client.bulk.start("sdk-bulk", request)
        assert not started.deduplicated and started.operation.matched == 29
        op = started.operation
        while not op.finished:
            await asyncio.sleep(0.1)
            op = await client.bulk.get(op.id)
        assert (op.state, op.done, op.skipped, op.failed) == ("SUCCEEDED", 29, 0, 0)
        again = await client.bulk.start("sdk-bulk", request)
        assert again.deduplicated and again.operation.id == op.id
        done = [task async for task in client.bulk.iter_tasks(op.id, "DONE")]
        assert len(done) == 29 and changed.id not in {task.task_id for task in done}
        listed = [item.id async for item in client.bulk.iter()]
        assert listed[0] == op.id
        assert (await client.bulk.cancel(op.id)).state == "SUCCEEDED"  # finished: as it is
        empty = BulkRequest(BulkFilter(tenant.queue_id), "retry", "fixed")
        with pytest.raises(InvalidArgumentError):
            await client.bulk.preview(empty)


async def test_the_blocking_client_has_the_same_operations(tenant: Tenant) -> None:
    await seed_failed(tenant, 3, error_code="TIMEOUT")
    where = BulkFilter(tenant.queue_id, error_code="TIMEOUT")
    request = BulkRequest(
        where, "resolve", "settled", "failed", None, {"code": "X", "message": "m"}
    )
    with Client(tenant.base_url, tenant.token) as client:
        assert client.bulk.preview(request).matched == 3
        op = client.bulk.start("blocking", request).operation
        page = client.bulk.tasks(op.id, limit=2)
        assert len(page.items) == 2 and page.next_cursor is not None


async def test_cli_starts_with_a_progress_bar_and_shows_the_outcomes(tenant: Tenant) -> None:
    await seed_failed(tenant, 12, handler="file.convert")
    where = ["--queue-id", tenant.queue_id, "--state", "FAILED", "--handler", "file.convert"]
    action = ["--action", "retry", "--reason", "fixed"]
    preview = orbit_json(tenant, "preview", *where, *action)
    assert preview["matched"] == 12 and len(preview["sample"]) == 10
    waited = orbit(tenant, "start", *where, *action, "--key", "cli-bulk", "--wait")
    assert "bulk retry" in waited.stderr  # the progress bar's label
    last = waited.stdout.splitlines()[-1]
    assert "SUCCEEDED: 12/12 (done 12, skipped 0, failed 0)" in last
    operation_id = last.split()[2]
    shown = orbit_json(tenant, "show", operation_id, "--tasks", "DONE")
    assert shown["operation"]["state"] == "SUCCEEDED" and len(shown["tasks"]) == 12
    listed = orbit_json(tenant, "list")
    assert listed["items"][0]["id"] == operation_id
    assert orbit_json(tenant, "cancel", operation_id)["state"] == "SUCCEEDED"
    refused = orbit(tenant, "preview", "--queue-id", tenant.queue_id, *action, code=1)
    assert "narrow" in refused.stderr
