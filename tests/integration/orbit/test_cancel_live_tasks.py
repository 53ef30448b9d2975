"""Cancel while LEASED/RUNNING over real HTTP and WebSocket, on SQLite and MariaDB
(docs/orbit/task-control.md §3, O-CAN-1, O-STATE-1): the SDK's cooperative stop, the LEASED fence,
an unconfirmed cancel (RECONCILE_ONLY → NEEDS_REVIEW, IDEMPOTENT → CANCELLED), and 50 races of a
cancel against the worker's result."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.orbit.store.db import Database
from tests.integration.orbit.task_control_harness import cancel, run_leased
from tests.integration.orbit.wire import error, ok
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import (
    RawWorker,
    WorkerProcess,
    attempts,
    get_task,
    submit,
    wait_state,
    workers,
)

pytestmark = pytest.mark.integration
RACES = 50


@pytest.fixture(scope="module", params=KINDS)
def cancel_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_url(request.param, tmp_path_factory.mktemp("orbit-cancel"), migrated=True) as url:
        yield url


@pytest.fixture(scope="module")
def cancel_url(cancel_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("orbit-cancel-server") / "server.log"
    with execution_server(cancel_db_url, log) as url:
        yield url


@pytest.fixture
async def tenant(cancel_db_url: str, cancel_url: str) -> AsyncIterator[Tenant]:
    db = Database.open(cancel_db_url, pool_size=2)
    yield await Tenant.create(db, cancel_url)
    await db.close()


@pytest.fixture
async def http(cancel_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=cancel_url, timeout=30) as client:
        yield client


async def test_cancel_running_sdk_cooperative_stop_o_can_1(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """O-CAN-1 / task-control.md §3: a RUNNING task gets cancel_requested_at (revision + 1, 200, no
    more 409); the SDK's handler sees its token, the worker sends `cancelled`, the task and its
    attempt end CANCELLED; a replay returns the first receipt; a new key then conflicts."""
    process = WorkerProcess(
        tenant.base_url,
        tenant.token,
        [tenant.queue_id],
        tmp_path / "cancel-sdk.log",
        name="cancel-sdk",
    )
    with workers(process):
        await process.connected()
        task_id = await submit(http, tenant, payload={"sleep_ms": 30000})
        running = await wait_state(http, tenant, task_id, {"RUNNING"})
        first = ok(await cancel(http, tenant, task_id, running["revision"], "cancel-sdk-1"))
        task = first["task"]
        assert first["deduplicated"] is False
        assert task["state"] == "RUNNING" and "cancel_requested_at" in task
        assert int(task["revision"]) == int(running["revision"]) + 1
        done = await wait_state(http, tenant, task_id, {"CANCELLED", "SUCCEEDED", "FAILED"}, 10)
    assert done["state"] == "CANCELLED" and "completed_at" in done
    history = await attempts(http, tenant, task_id)
    assert [a["state"] for a in history] == ["CANCELLED"]
    replay = ok(await cancel(http, tenant, task_id, running["revision"], "cancel-sdk-1"))
    assert replay == {"deduplicated": True, "task": task}
    error(
        await cancel(http, tenant, task_id, done["revision"], "cancel-sdk-2"), 409, "STATE_CONFLICT"
    )


async def test_cancel_leased_ends_the_unstarted_attempt_o_can_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """task-control.md §3: a LEASED task is CANCELLED at once; the worker is told and its late
    `started` fails the fence (LEASE_LOST), so the handler never runs."""
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        task_id = await submit(http, tenant)
        lease = await raw.next("lease")
        attempt = {
            "attempt_id": lease["attempt"]["id"],
            "lease_token": lease["attempt"]["lease_token"],
        }
        leased = await get_task(http, tenant, task_id)
        assert leased["state"] == "LEASED"
        done = ok(await cancel(http, tenant, task_id, leased["revision"]))["task"]
        assert done["state"] == "CANCELLED" and "current_attempt_id" not in done
        told = await raw.next("cancel")
        assert told == {
            "type": "cancel",
            "attempt_id": attempt["attempt_id"],
            "reason": "cancel_requested",
        }
        started = await raw.request({"type": "started", **attempt})
        assert started["ok"] is False and started["error"]["code"] == "LEASE_LOST"
    finally:
        await raw.close()
    history = await attempts(http, tenant, task_id)
    assert [(a["state"], a.get("started_at")) for a in history] == [("CANCELLED", None)]
    assert (await get_task(http, tenant, task_id))["attempt_count"] == 0


async def test_cancel_unconfirmed_reconcile_only_goes_to_review_o_state_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """O-STATE-1 / task-control.md §3: the worker is told but vanishes without confirming: the
    RECONCILE_ONLY task goes to NEEDS_REVIEW (CANCEL_UNCONFIRMED), never silently CANCELLED; the
    IDEMPOTENT one is CANCELLED (re-running or stopping it is safe)."""
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    ids: dict[str, str] = {}
    for safety in ("RECONCILE_ONLY", "IDEMPOTENT"):
        task_id = await submit(http, tenant, recovery_safety=safety, retry={"max_attempts": 3})
        attempt, started = await run_leased(raw)
        ok(await cancel(http, tenant, task_id, started["task_revision"]))
        assert (await raw.next("cancel"))["attempt_id"] == attempt["attempt_id"]
        ids[safety] = task_id
    await raw.close()  # no confirmation: the lease runs out after the reconnect grace
    review = await wait_state(http, tenant, ids["RECONCILE_ONLY"], {"NEEDS_REVIEW", "CANCELLED"})
    assert review["state"] == "NEEDS_REVIEW"
    assert review["error"]["code"] == "CANCEL_UNCONFIRMED"
    idem = await wait_state(http, tenant, ids["IDEMPOTENT"], {"CANCELLED", "WAITING", "FAILED"})
    assert idem["state"] == "CANCELLED" and idem["attempt_count"] == 1
    assert [a["state"] for a in await attempts(http, tenant, ids["IDEMPOTENT"])] == ["LOST"]


async def _told(raw: RawWorker, attempt_id: str, timeout: float) -> bool:
    """Whether a cancel for this attempt arrives within `timeout` (a late cancel of an earlier
    race's attempt is skipped)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            told = await raw.next("cancel", timeout=max(0.0, deadline - loop.time()))
        except TimeoutError:
            return False
        if told["attempt_id"] == attempt_id:
            return True


async def _race(
    raw: RawWorker, http: httpx.AsyncClient, tenant: Tenant, rng: random.Random, safety: str
) -> tuple[str, Any]:
    task_id = await submit(http, tenant, recovery_safety=safety)
    attempt, started = await run_leased(raw)
    cancelling = asyncio.create_task(cancel(http, tenant, task_id, started["task_revision"]))
    # the worker finishes at a random moment, cooperating if told in time
    told = await _told(raw, attempt["attempt_id"], rng.uniform(0.0, 0.06))
    body: dict[str, Any] = (
        {"outcome": "cancelled"} if told else {"outcome": "succeeded", "result": {"done": True}}
    )
    acked = await raw.request({"type": "result", **attempt, **body})
    response = await cancelling
    final = await get_task(http, tenant, task_id)
    history = await attempts(http, tenant, task_id)
    # exactly one outcome, and it is the one the worker's ack reported
    assert acked["ok"] is True, acked
    assert final["state"] == acked["task_state"], (final, acked)
    assert [a["state"] for a in history] == [final["state"]]
    if final["state"] == "CANCELLED":
        assert told and response.status_code == 200
    else:
        assert final["state"] == "SUCCEEDED" and not told
        assert response.status_code in (200, 409), response.text
        if response.status_code == 409:
            assert "cancel_requested_at" not in final
    return final["state"], response.status_code


async def test_cancel_vs_completion_race_exactly_one_outcome_o_can_1(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """O-CAN-1 acceptance: 50 races of an API cancel against the worker's result: exactly one
    outcome wins, equal to what the worker was acknowledged, and the API agrees."""
    rng = random.Random(8)
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id], capacity=1)
    outcomes: Counter[tuple[str, int]] = Counter()
    try:
        for index in range(RACES):
            safety = "RECONCILE_ONLY" if index % 2 else "IDEMPOTENT"
            outcomes[await _race(raw, http, tenant, rng, safety)] += 1
    finally:
        await raw.close()
    assert sum(outcomes.values()) == RACES
    print(f"cancel-vs-result outcomes: {dict(outcomes)}")
