"""POST /v1/tasks/{id}:retry and :resolve over real HTTP on SQLite and MariaDB
(docs/orbit/task-control.md §2): budget +1, idempotent replay, key conflicts, expected_revision,
the tasks:review permission, 404 outside the token's scope, strict JSON, one concurrent winner,
event + audit in the same transaction, operator evidence in the attempt history."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import audit_log, task_events
from tests.integration.orbit.task_control_harness import key, post, run_leased
from tests.integration.orbit.wire import error, ok
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import RawWorker, attempts, get_task, submit

pytestmark = pytest.mark.integration
REVIEWED = {"expected_revision": "0", "reason": "checked with the bank"}


async def ended(
    http: httpx.AsyncClient, tenant: Tenant, raw: RawWorker, body: dict[str, Any]
) -> dict[str, Any]:
    """Submit a task, let the raw worker end its attempt with `body`: the task as it ends."""
    task_id = await submit(http, tenant)
    attempt, _ = await run_leased(raw)
    acked = await raw.request({"type": "result", **attempt, **body})
    assert acked["ok"], acked
    return await get_task(http, tenant, task_id)


FAIL = {"outcome": "failed", "error": {"code": "bad_input", "message": "no", "retryable": False}}
REVIEW = {"outcome": "needs_review", "error": {"code": "ambiguous", "message": "no answer"}}


async def test_retry_adds_one_attempt_and_replays_o_sub_1(
    tenant: Tenant, http: httpx.AsyncClient, db: Database
) -> None:
    """task-control.md §2 / O-SUB-1: FAILED → WAITING with retry.max_attempts = attempt_count + 1,
    error and completed_at cleared, revision + 1; the same key replays the first receipt, other
    content 409 IDEMPOTENCY_CONFLICT; the retried task runs again and its second attempt wins; a new
    key on the finished task 409 STATE_CONFLICT; event RETRIED + audit tasks.retry written."""
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        failed = await ended(http, tenant, raw, FAIL)
        assert failed["state"] == "FAILED" and failed["error"]["code"] == "HANDLER_FAILED"
        path = f"/v1/tasks/{failed['id']}:retry"
        body = {**REVIEWED, "expected_revision": failed["revision"]}
        first = ok(await post(http, tenant, path, body, "retry-1"))
        task = first["task"]
        assert first["deduplicated"] is False and task["state"] == "WAITING"
        assert int(task["revision"]) == int(failed["revision"]) + 1
        assert task["retry"]["max_attempts"] == failed["attempt_count"] + 1 == 2
        assert "error" not in task and "completed_at" not in task
        assert ok(await post(http, tenant, path, body, "retry-1")) == {
            "deduplicated": True,
            "task": task,
        }
        error(
            await post(http, tenant, path, {**body, "reason": "other"}, "retry-1"),
            409,
            "IDEMPOTENCY_CONFLICT",
        )
        attempt, _ = await run_leased(raw)
        done = await raw.request(
            {"type": "result", **attempt, "outcome": "succeeded", "result": {"second": True}}
        )
        assert done["task_state"] == "SUCCEEDED"
    finally:
        await raw.close()
    final = await get_task(http, tenant, failed["id"])
    assert final["result"] == {"second": True} and final["attempt_count"] == 2
    assert [a["number"] for a in await attempts(http, tenant, failed["id"])] == [1, 2]
    error(
        await post(http, tenant, path, {**body, "expected_revision": final["revision"]}),
        409,
        "STATE_CONFLICT",
    )
    async with db.read() as conn:
        kinds = (
            await conn.execute(
                sa.select(task_events.c.kind)
                .where(task_events.c.task_id == failed["id"])
                .order_by(task_events.c.revision)
            )
        ).scalars()
        actions = (
            await conn.execute(
                sa.select(audit_log.c.action).where(audit_log.c.task_id == failed["id"])
            )
        ).scalars()
        assert "RETRIED" in list(kinds) and "tasks.retry" in list(actions)


async def test_resolve_with_result_error_and_operator_evidence(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """task-control.md §2: NEEDS_REVIEW → SUCCEEDED with the operator's result (exact numbers kept)
    and evidence on the last attempt (keys `operator.*`); another → FAILED with the operator's
    error; a resolved task cannot be resolved or cancelled again."""
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        first = await ended(http, tenant, raw, REVIEW)
        second = await ended(http, tenant, raw, REVIEW)
    finally:
        await raw.close()
    assert first["state"] == second["state"] == "NEEDS_REVIEW"
    evidence = [{"key": "bank-ref", "kind": "reference", "uri": "https://bank.example/tx/77"}]
    body = {
        **REVIEWED,
        "expected_revision": first["revision"],
        "outcome": "succeeded",
        "result": {"amount": 9007199254740993},
        "evidence": evidence,
    }
    response = await post(http, tenant, f"/v1/tasks/{first['id']}:resolve", body)
    assert '"amount":9007199254740993' in response.text
    done = ok(response)["task"]
    assert done["state"] == "SUCCEEDED" and "error" not in done and "completed_at" in done
    history = await attempts(http, tenant, first["id"])
    detail = ok(
        await http.get(
            f"/v1/tasks/{first['id']}/attempts/{history[0]['id']}", headers=tenant.headers()
        )
    )
    assert [e["key"] for e in detail["evidence"]] == ["operator.bank-ref"]
    failed = {
        **REVIEWED,
        "expected_revision": second["revision"],
        "outcome": "failed",
        "error": {"code": "charge_refused", "message": "the bank refused it"},
    }
    out = ok(await post(http, tenant, f"/v1/tasks/{second['id']}:resolve", failed))["task"]
    assert out["state"] == "FAILED"
    assert out["error"] == {"code": "charge_refused", "message": "the bank refused it"}
    again = {**failed, "expected_revision": out["revision"]}
    error(
        await post(http, tenant, f"/v1/tasks/{second['id']}:resolve", again), 409, "STATE_CONFLICT"
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reason": "r"}, "expected_revision"),
        ({"expected_revision": 1, "reason": "r"}, "expected_revision"),
        ({"expected_revision": "1", "reason": " "}, "reason"),
        ({"expected_revision": "1", "reason": "r", "Reason": "r"}, "Reason"),
        ({"expected_revision": "1", "reason": "r", "outcome": "succeeded"}, "result"),
        ({"expected_revision": "1", "reason": "r", "outcome": "cancelled"}, "outcome"),
        ({"expected_revision": "1", "reason": "r", "outcome": "failed", "result": 1}, "result"),
        (
            {
                "expected_revision": "1",
                "reason": "r",
                "outcome": "failed",
                "error": {"code": "x" * 33, "message": "m"},
            },
            "error.code",
        ),
    ],
)
async def test_resolve_strict_body_o_api_2(
    tenant: Tenant, http: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    """O-API-2: each bad field is named in a 400; nothing is stored (O-NOTE-6)."""
    task_id = await submit(http, tenant)
    response = await post(http, tenant, f"/v1/tasks/{task_id}:resolve", body)
    assert error(response, 400, "INVALID_ARGUMENT").startswith(field)


async def test_review_permission_scope_and_key_rules_o_api_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """O-API-1: tasks:review is required (403); a task outside the token's queues is 404;
    a missing Idempotency-Key is 400; a refused request does not consume its key (O-NOTE-6);
    not FAILED/NEEDS_REVIEW → 409 STATE_CONFLICT."""
    task_id = await submit(http, tenant)
    _, no_review = await tenant.token_for([Permission.SUBMIT, Permission.READ, Permission.CANCEL])
    body = {**REVIEWED, "expected_revision": "1"}
    for op in ("retry", "resolve"):
        error(
            await post(http, tenant, f"/v1/tasks/{task_id}:{op}", body, token=no_review),
            403,
            "PERMISSION_DENIED",
        )
    other_queue = await tenant.queue()
    _, elsewhere = await tenant.token_for(list(Permission), [other_queue])
    error(
        await post(http, tenant, f"/v1/tasks/{task_id}:retry", body, token=elsewhere),
        404,
        "NOT_FOUND",
    )
    missing = await http.post(f"/v1/tasks/{task_id}:retry", json=body, headers=tenant.headers())
    error(missing, 400, "INVALID_ARGUMENT")
    error(
        await post(http, tenant, f"/v1/tasks/{task_id}:retry", body, "review-k"),
        409,
        "STATE_CONFLICT",
    )
    cancelled = ok(await post(http, tenant, f"/v1/tasks/{task_id}:cancel", body))["task"]
    assert cancelled["state"] == "CANCELLED"
    error(
        await post(
            http,
            tenant,
            f"/v1/tasks/{task_id}:retry",
            {**body, "expected_revision": cancelled["revision"]},
            "review-k",
        ),
        409,
        "STATE_CONFLICT",
    )


async def test_concurrent_retries_one_winner_o_can_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """Like O-CAN-1: 10 concurrent retries with different keys at the same revision: exactly
    one 200, the others 409 STATE_CONFLICT; the budget grows by one, not ten."""
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id], capacity=0)
    await raw.request({"type": "flow", "capacity": 1})
    try:
        failed = await ended(http, tenant, raw, FAIL)
        await raw.request({"type": "flow", "capacity": 0})  # keep the retried task WAITING
    finally:
        await raw.close()
    body = {**REVIEWED, "expected_revision": failed["revision"]}
    responses = await asyncio.gather(
        *(post(http, tenant, f"/v1/tasks/{failed['id']}:retry", body, key()) for _ in range(10))
    )
    codes = Counter(r.status_code for r in responses)
    assert codes == {200: 1, 409: 9}, codes
    final = await get_task(http, tenant, failed["id"])
    assert final["retry"]["max_attempts"] == 2
    assert int(final["revision"]) == int(failed["revision"]) + 1
