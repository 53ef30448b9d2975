"""The task control operations through the SDK (`AsyncClient`) and the CLI (`orbit tasks
batch|retry|resolve|cancel --json`) against the real server, on SQLite and MariaDB."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.sdk.client import (
    AsyncClient,
    CancelTaskRequest,
    ResolveTaskRequest,
    RetryTaskRequest,
    StateConflictError,
    SubmitTaskRequest,
)
from tests.integration.orbit.task_control_harness import key, run_leased
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import RawWorker, get_task

pytestmark = pytest.mark.integration


def orbit(tenant: Tenant, *args: str) -> Any:
    env = {"ORBIT_URL": tenant.base_url, "ORBIT_TOKEN": tenant.token}
    result = CliRunner().invoke(main, ["tasks", *args, "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.splitlines()[-1])


def request(tenant: Tenant, n: int) -> SubmitTaskRequest:
    return SubmitTaskRequest(
        tenant.queue_id, "demo.work", "v1", "v1", {"n": n, "exact": Decimal("1.10")}
    )


async def test_sdk_batch_retry_resolve_cancel(tenant: Tenant, http: httpx.AsyncClient) -> None:
    """SDK: submit_batch (and its replay), retry_task of a FAILED task, resolve_task of a
    NEEDS_REVIEW task with evidence, cancel_task of a RUNNING task (cancel_requested_at);
    a StateConflictError for a stale revision."""
    async with AsyncClient(tenant.base_url, tenant.token) as client:
        batch_key = key()
        receipt = await client.submit_batch(batch_key, [request(tenant, 0), request(tenant, 1)])
        assert [(i.index, i.state, i.revision) for i in receipt.items] == [
            (0, "WAITING", 1),
            (1, "WAITING", 1),
        ]
        again = await client.submit_batch(batch_key, [request(tenant, 0), request(tenant, 1)])
        assert again.deduplicated and again.items == receipt.items
        raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
        try:
            first, _ = await run_leased(raw)
            await raw.request(
                {
                    "type": "result",
                    **first,
                    "outcome": "failed",
                    "error": {"code": "x", "message": "m", "retryable": False},
                }
            )
            second, _ = await run_leased(raw)
            await raw.request(
                {
                    "type": "result",
                    **second,
                    "outcome": "needs_review",
                    "error": {"code": "x", "message": "m"},
                }
            )
        finally:
            await raw.close()
        ids = {item.task_id for item in receipt.items}
        tasks = {t["state"]: t for t in [await get_task(http, tenant, i) for i in ids]}
        failed, review = tasks["FAILED"], tasks["NEEDS_REVIEW"]
        retried = await client.retry_task(
            failed["id"], key(), RetryTaskRequest(int(failed["revision"]), "again")
        )
        assert retried.task.state == "WAITING" and retried.task.retry.max_attempts == 2
        with pytest.raises(StateConflictError):
            await client.retry_task(
                failed["id"], key(), RetryTaskRequest(int(failed["revision"]), "again")
            )
        resolved = await client.resolve_task(
            review["id"],
            key(),
            ResolveTaskRequest(
                int(review["revision"]),
                "succeeded",
                "checked",
                result={"ok": Decimal("1.10")},
                evidence=[{"key": "ticket", "kind": "reference", "uri": "https://t.example/1"}],
            ),
        )
        assert resolved.task.state == "SUCCEEDED"
        assert resolved.task.result == {"ok": Decimal("1.10")}
        raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
        try:
            _, started = await run_leased(raw)  # the retried task runs again
            cancelled = await client.cancel_task(
                failed["id"], key(), CancelTaskRequest(int(started["task_revision"]), "stop it")
            )
            assert cancelled.task.state == "RUNNING"
            assert cancelled.task.cancel_requested_at is not None
        finally:
            await raw.close()


async def test_cli_batch_retry_resolve(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """CLI: `orbit tasks batch --file`, `retry`, `resolve` with --json output."""
    bodies = [request(tenant, n).to_json() for n in range(2)]
    source = tmp_path / "batch.json"
    source.write_text(json.dumps({"tasks": bodies}, default=str))
    batch = orbit(tenant, "batch", "--file", str(source), "--key", "cli-batch")
    assert batch["deduplicated"] is False and [i["index"] for i in batch["items"]] == [0, 1]
    assert orbit(tenant, "batch", "--file", str(source), "--key", "cli-batch")["deduplicated"]
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        for outcome in ("failed", "needs_review"):
            attempt, _ = await run_leased(raw)
            error: dict[str, Any] = {"code": "x", "message": "m"}
            if outcome == "failed":
                error["retryable"] = False
            await raw.request({"type": "result", **attempt, "outcome": outcome, "error": error})
    finally:
        await raw.close()
    tasks = {
        t["state"]: t for t in [await get_task(http, tenant, i["task_id"]) for i in batch["items"]]
    }
    failed, review = tasks["FAILED"], tasks["NEEDS_REVIEW"]
    retried = orbit(
        tenant,
        "retry",
        failed["id"],
        "--expected-revision",
        failed["revision"],
        "--reason",
        "upstream fixed",
    )
    assert retried["task"]["state"] == "WAITING"
    resolved = orbit(
        tenant,
        "resolve",
        review["id"],
        "--expected-revision",
        review["revision"],
        "--outcome",
        "failed",
        "--reason",
        "refused",
        "--error-code",
        "refused",
        "--error-message",
        "the bank refused it",
        "--evidence",
        '[{"key":"call","kind":"note","data":{"who":"ops"}}]',
    )
    assert resolved["task"]["state"] == "FAILED"
    assert resolved["task"]["error"] == {"code": "refused", "message": "the bank refused it"}
