"""The worker protocol message by message against the real server, on SQLite and MariaDB:
handshake refusals, capacity and fairness, idempotent and fenced acks, the start fence,
heartbeats, hand-back, and the execution history API (O-API-1, O-API-3, O-STATE-1)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.db import Database
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant, execution_server
from tests.support.orbit_workers import (
    RawWorker,
    attempts,
    get_task,
    in_seconds,
    ref,
    submit,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=KINDS)
def proto_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_url(request.param, tmp_path_factory.mktemp("orbit-p2p"), migrated=True) as url:
        yield url


@pytest.fixture(scope="module")
def proto_url(proto_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("orbit-p2p-server") / "server.log"
    with execution_server(proto_db_url, log) as url:
        yield url


@pytest.fixture
async def tenant(proto_db_url: str, proto_url: str) -> AsyncIterator[Tenant]:
    db = Database.open(proto_db_url, pool_size=2)
    yield await Tenant.create(db, proto_url)
    await db.close()


@pytest.fixture
async def http(proto_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=proto_url, timeout=30) as client:
        yield client


def ws_url(base: str) -> str:
    return base.replace("http", "ws") + "/v1/workers/connect"


async def close_code(base: str, token: str, first: str | None, protocol: bool = True) -> int:
    protocols = ["orbit.worker.v1"] if protocol else None
    async with connect(
        ws_url(base),
        additional_headers={"Authorization": f"Bearer {token}"},
        subprotocols=protocols,
        proxy=None,
    ) as ws:  # type: ignore[arg-type]
        if first is not None:
            await ws.send(first)
        with pytest.raises(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 15)
        assert ws.close_code is not None
        return ws.close_code


def hello(queues: list[str]) -> str:
    return json.dumps(
        {
            "type": "hello",
            "protocol": "orbit.worker.v1",
            "worker": {"name": "x", "instance_id": "a" * 32},
            "queues": queues,
            "handlers": [{"handler": "demo.work", "handler_version": "v1"}],
            "capacity": 1,
        }
    )


async def test_handshake_refusals_o_api_1(tenant: Tenant, proto_url: str) -> None:
    """401 for an unknown token, 403 without tasks:work (before the upgrade); a queue outside
    the token's scope closes with 4403; no subprotocol 4426; a bad first message 4400."""
    for token, status in (
        ("orb_not-a-token", 401),
        ((await tenant.token_for([Permission.SUBMIT]))[1], 403),
    ):
        with pytest.raises(InvalidStatus) as refused:
            auth = {"Authorization": f"Bearer {token}"}
            async with connect(ws_url(proto_url), proxy=None, additional_headers=auth):
                pass
        assert refused.value.response.status_code == status
        code = "UNAUTHENTICATED" if status == 401 else "PERMISSION_DENIED"
        assert json.loads(refused.value.response.body)["error"]["code"] == code
    other_queue = await tenant.queue()
    _, work_token = await tenant.token_for([Permission.WORK])
    assert await close_code(proto_url, work_token, hello([other_queue])) == 4403
    assert await close_code(proto_url, work_token, None, protocol=False) == 4426
    assert await close_code(proto_url, work_token, '{"type":"started"}') == 4400
    assert await close_code(proto_url, work_token, "not json") == 4400


async def test_capacity_is_respected_and_queues_are_served_fairly(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    second = await tenant.queue()
    _, token = await tenant.token_for(
        [Permission.WORK, Permission.SUBMIT], [tenant.queue_id, second]
    )
    for queue in (tenant.queue_id, second):
        for _ in range(3):
            await submit(http, tenant, token, queue_id=queue, payload={"n": 1})
    worker, _ = await RawWorker.connect(
        tenant.base_url, token, [tenant.queue_id, second], capacity=2
    )
    try:
        leases = [await worker.next("lease"), await worker.next("lease")]
        assert {lease["task"]["queue_id"] for lease in leases} == {tenant.queue_id, second}
        with pytest.raises(TimeoutError):
            await worker.next("lease", timeout=0.7)  # credit 2 is used up
        first = ref(leases[0])
        assert (await worker.request({"type": "started", **first}))["ok"]
        done = await worker.request(
            {"type": "result", **first, "outcome": "succeeded", "result": {"ok": True}}
        )
        assert done["ok"] and done["task_state"] == "SUCCEEDED"
        third = await worker.next("lease")  # the freed slot is refilled at once
        assert third["task"]["id"] not in {lease["task"]["id"] for lease in leases}
    finally:
        await worker.close()


async def test_acks_are_idempotent_and_fenced_by_the_lease_token(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    task_id = await submit(http, tenant, payload={"n": 1})
    worker, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        lease = await worker.next("lease")
        assert lease["task"]["id"] == task_id and lease["attempt"]["number"] == 1
        mine = ref(lease)
        stale = {**mine, "lease_token": "f" * 32}
        fenced = await worker.request({"type": "started", **stale})
        assert fenced["error"]["code"] == "LEASE_LOST"
        started = await worker.request({"type": "started", **mine})
        assert started["ok"] and started["duplicate"] is False and started["task_revision"] == "3"
        again = await worker.request({"type": "started", **mine})
        assert again["ok"] and again["duplicate"] is True
        item = {"key": "ref", "kind": "reference", "uri": "https://bank/tx/1"}
        assert (await worker.request({"type": "evidence", **mine, "items": [item]}))["ok"]
        changed = [{**item, "uri": "https://bank/tx/2"}]
        conflict = await worker.request({"type": "evidence", **mine, "items": changed})
        assert conflict["error"]["code"] == "EVIDENCE_CONFLICT"
        exact = {"n": 9007199254740993}
        result = {"type": "result", **mine, "outcome": "succeeded", "result": exact}
        first = await worker.request(result)
        resent = await worker.request(result)
        other = await worker.request({**result, "result": {"n": 2}})
        invalid = await worker.request(
            {
                "type": "result",
                **mine,
                "outcome": "cancelled",
                "error": {"code": "x", "message": "y"},
            }
        )
        unknown = await worker.request(
            {"type": "started", "attempt_id": "e" * 32, "lease_token": "e" * 32}
        )
    finally:
        await worker.close()
    assert first["ok"] and first["duplicate"] is False and first["task_state"] == "SUCCEEDED"
    assert resent["ok"] and resent["duplicate"] is True
    assert other["error"]["code"] == "RESULT_CONFLICT"
    assert invalid["error"]["code"] == "INVALID_MESSAGE"
    assert unknown["error"]["code"] == "ATTEMPT_NOT_FOUND"
    task = await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers())
    assert '"result":{"n":9007199254740993}' in task.text and task.json()["data"]["revision"] == "4"
    history = await attempts(http, tenant, task_id)
    assert [(a["state"], a["evidence_count"]) for a in history] == [("SUCCEEDED", 1)]


async def test_start_after_the_start_deadline_fails_without_running(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """The start fence: `started` past start_deadline_at is refused; the task is FAILED and its
    attempt EXPIRED, never RUNNING; heartbeats keep the lease alive meanwhile."""
    task_id = await submit(http, tenant, start_deadline_at=in_seconds(1.0))
    worker, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        mine = ref(await worker.next("lease"))
        for _ in range(3):
            beat = await worker.request({"type": "heartbeat", "attempts": [mine]})
            assert beat["attempts"][0]["status"] == "ok"
            await asyncio.sleep(0.45)
        refused = await worker.request({"type": "started", **mine})
    finally:
        await worker.close()
    assert refused["ok"] is False and refused["error"]["code"] == "START_DEADLINE_EXCEEDED"
    task = await get_task(http, tenant, task_id)
    assert (task["state"], task["error"]["code"], task["attempt_count"]) == (
        "FAILED",
        "START_DEADLINE_EXCEEDED",
        0,
    )
    history = await attempts(http, tenant, task_id)
    assert [(a["state"], "started_at" in a) for a in history] == [("EXPIRED", False)]


async def test_release_before_start_requeues_without_using_budget(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    task_id = await submit(http, tenant)
    worker, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        first = ref(await worker.next("lease"))
        released = await worker.request({"type": "release", **first, "reason": "shutdown"})
        again = await worker.next("lease")  # the freed slot and the requeued task meet again
        beat = await worker.request({"type": "heartbeat", "attempts": [first, ref(again)]})
    finally:
        await worker.close()
    assert released["ok"] and released["task_state"] == "WAITING"
    assert again["task"]["id"] == task_id and again["attempt"]["number"] == 2
    assert again["task"]["attempt_count"] == 0
    assert [s["status"] for s in beat["attempts"]] == ["lost", "ok"]


async def _failing_task(tenant: Tenant, http: httpx.AsyncClient, tries: int) -> str:
    task_id = await submit(
        http,
        tenant,
        recovery_safety="IDEMPOTENT",
        retry={"max_attempts": tries, "initial_delay_ms": 1},
    )
    worker, _ = await RawWorker.connect(
        tenant.base_url, tenant.token, [tenant.queue_id], capacity=1
    )
    try:
        for _ in range(tries):
            mine = ref(await worker.next("lease"))
            assert (await worker.request({"type": "started", **mine}))["ok"]
            error = {"code": "flaky", "message": "try again", "retryable": True}
            assert (
                await worker.request(
                    {"type": "result", **mine, "outcome": "failed", "error": error}
                )
            )["ok"]
    finally:
        await worker.close()
    await wait_state(http, tenant, task_id, {"FAILED"})
    return task_id


async def test_history_pages_and_scope(tenant: Tenant, http: httpx.AsyncClient) -> None:
    task_id = await _failing_task(tenant, http, 3)
    headers = tenant.headers()
    page = (await http.get(f"/v1/tasks/{task_id}/attempts?limit=2", headers=headers)).json()
    cursor = page["data"]["next_cursor"]
    rest = (
        await http.get(f"/v1/tasks/{task_id}/attempts", params={"cursor": cursor}, headers=headers)
    ).json()
    numbers = [a["number"] for a in page["data"]["items"] + rest["data"]["items"]]
    assert numbers == [1, 2, 3] and "next_cursor" not in rest["data"]
    assert [a["task_outcome"]["state"] for a in rest["data"]["items"]] == ["FAILED"]
    task = await get_task(http, tenant, task_id)
    assert task["error"]["code"] == "ATTEMPTS_EXHAUSTED"
    assert task["attempt_error"] == {"code": "flaky", "message": "try again", "retryable": True}
    first_id = page["data"]["items"][0]["id"]
    detail = await http.get(f"/v1/tasks/{task_id}/attempts/{first_id}", headers=headers)
    assert detail.status_code == 200 and detail.json()["data"]["evidence"] == []
    assert detail.headers["x-request-id"] == detail.json()["request_id"]
    other_task = await submit(http, tenant)
    checks: list[tuple[str, dict[str, Any], int, str]] = [
        (f"/v1/tasks/{other_task}/attempts", {"cursor": cursor}, 400, "INVALID_ARGUMENT"),
        (f"/v1/tasks/{task_id}/attempts", {"limit": "0"}, 400, "INVALID_ARGUMENT"),
        (f"/v1/tasks/{task_id}/attempts", {"page": "2"}, 400, "INVALID_ARGUMENT"),
        (f"/v1/tasks/{other_task}/attempts/{first_id}", {}, 404, "NOT_FOUND"),
        (f"/v1/tasks/{task_id}/attempts/{'0' * 32}", {}, 404, "NOT_FOUND"),
        (f"/v1/tasks/{'0' * 32}/attempts", {}, 404, "NOT_FOUND"),
    ]
    for path, params, status, code in checks:
        response = await http.get(path, params=params, headers=headers)
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), path
    stranger = await Tenant.create(tenant.db, tenant.base_url)
    foreign = await http.get(f"/v1/tasks/{task_id}/attempts", headers=stranger.headers())
    assert foreign.status_code == 404
    _, no_read = await tenant.token_for([Permission.SUBMIT])
    denied = await http.get(f"/v1/tasks/{task_id}/attempts", headers=tenant.headers(no_read))
    assert denied.status_code == 403


async def test_sdk_reads_the_execution_history(tenant: Tenant, http: httpx.AsyncClient) -> None:
    """orbit.client list_attempts/iter_attempts/get_attempt (sync and async) over the real
    history API: keyset pages, worker identity, error, outcome and evidence (O-STATE-1)."""
    import agentcall.orbit.sdk.client as sdk

    task_id = await submit(
        http, tenant, recovery_safety="IDEMPOTENT", retry={"max_attempts": 2, "initial_delay_ms": 1}
    )
    worker, _ = await RawWorker.connect(
        tenant.base_url, tenant.token, [tenant.queue_id], capacity=1
    )
    try:
        first = ref(await worker.next("lease"))
        assert (await worker.request({"type": "started", **first}))["ok"]
        error = {"code": "flaky", "message": "try again", "retryable": True}
        assert (
            await worker.request({"type": "result", **first, "outcome": "failed", "error": error})
        )["ok"]
        second = ref(await worker.next("lease"))
        assert (await worker.request({"type": "started", **second}))["ok"]
        item = {
            "key": "out",
            "kind": "artifact",
            "uri": "s3://b/o",
            "size_bytes": 3,
            "data": {"n": 9007199254740993},
        }
        assert (await worker.request({"type": "evidence", **second, "items": [item]}))["ok"]
        assert (
            await worker.request(
                {"type": "result", **second, "outcome": "succeeded", "result": {"ok": True}}
            )
        )["ok"]
    finally:
        await worker.close()
    async with sdk.AsyncClient(tenant.base_url, tenant.token) as orbit:
        page = await orbit.list_attempts(sdk.ListAttemptsRequest(task_id, limit=1))
        assert [a.number for a in page.items] == [1] and page.next_cursor is not None
        rest = await orbit.list_attempts(sdk.ListAttemptsRequest(task_id, cursor=page.next_cursor))
        every = [a async for a in orbit.iter_attempts(task_id)]
        detail = await orbit.get_attempt(task_id, second["attempt_id"])
        with pytest.raises(sdk.NotFoundError):
            await orbit.get_attempt(task_id, "0" * 32)
        other = await submit(http, tenant)
        with pytest.raises(sdk.InvalidArgumentError, match="cursor"):
            await orbit.list_attempts(sdk.ListAttemptsRequest(other, cursor=page.next_cursor))
    failed, won = page.items[0], rest.items[0]
    assert rest.next_cursor is None and every == [failed, won]
    assert (failed.state, failed.end_reason, failed.evidence, failed.evidence_count) == (
        "FAILED",
        "RESULT",
        None,
        0,
    )
    assert failed.error == sdk.AttemptError("flaky", "try again", True)
    assert failed.task_outcome is not None and failed.task_outcome.state == "WAITING"
    assert failed.worker.name == "raw" and failed.started_at is not None
    assert failed.duration_ms is not None and failed.lease_expires_at is None
    assert (detail.id, detail.state, detail.evidence_count) == (
        second["attempt_id"],
        "SUCCEEDED",
        1,
    )
    assert detail.task_outcome == sdk.AttemptOutcome("SUCCEEDED", detail.task_outcome.revision)
    assert detail.evidence is not None and len(detail.evidence) == 1
    evidence = detail.evidence[0]
    assert (evidence.key, evidence.kind, evidence.uri, evidence.size_bytes) == (
        "out",
        "artifact",
        "s3://b/o",
        3,
    )
    assert evidence.data == {"n": 9007199254740993}

    def blocking() -> tuple[list[sdk.Attempt], sdk.Attempt]:
        with sdk.Client(tenant.base_url, tenant.token) as orbit:
            return list(orbit.iter_attempts(task_id)), orbit.get_attempt(task_id, won.id)

    listed, again = await asyncio.to_thread(blocking)
    assert listed == every and again == detail
    with (
        sdk.Client(tenant.base_url, tenant.token) as orbit,
        pytest.raises(ValueError, match="attempt_id"),
    ):
        orbit.get_attempt(task_id, "NOT-AN-ID")  # refused before sending


async def test_batch_framing_carries_several_messages_per_frame(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """Subprotocol orbit.worker.v1.batch (worker-protocol.md §2.1): a frame may hold an array
    of messages, each applied and acked as if alone (fenced, an invalid one refused alone);
    leases and acks come back grouped into arrays; the plain v1 subprotocol never sees one."""
    first, second = await submit(http, tenant), await submit(http, tenant)
    ws = await connect(
        ws_url(tenant.base_url),
        proxy=None,  # type: ignore[arg-type]
        additional_headers={"Authorization": f"Bearer {tenant.token}"},
        subprotocols=["orbit.worker.v1.batch", "orbit.worker.v1"],
    )  # type: ignore[list-item]
    inbox: list[dict[str, Any]] = []

    async def receive(count: int) -> list[int]:
        sizes = []
        async with asyncio.timeout(15):
            while len(inbox) < count:
                frame = json.loads(await ws.recv())
                sizes.append(len(frame) if isinstance(frame, list) else 1)
                inbox.extend(frame if isinstance(frame, list) else [frame])
        return sizes

    try:
        assert ws.subprotocol == "orbit.worker.v1.batch"
        await ws.send(json.dumps({**json.loads(hello([tenant.queue_id])), "capacity": 4}))
        await receive(3)  # hello_ok and the two leases
        leases = {m["task"]["id"]: ref(m) for m in inbox if m["type"] == "lease"}
        assert set(leases) == {first, second}
        mine, other = leases[first], leases[second]
        stale = {**other, "lease_token": "f" * 32}
        inbox.clear()
        await ws.send(
            json.dumps(
                [
                    {"type": "started", "msg_id": "a", **mine},
                    {"type": "started", "msg_id": "b", **stale},
                    {"type": "started", "msg_id": "c"},
                ]
            )
        )
        sizes = await receive(3)
        acks = {m["msg_id"]: m for m in inbox}
        inbox.clear()
        await ws.send(json.dumps([]))
        with pytest.raises(ConnectionClosed):
            await receive(1)
    finally:
        await ws.close()
    assert acks["a"]["ok"] and acks["a"]["task_state"] == "RUNNING"
    assert acks["b"]["error"]["code"] == "LEASE_LOST"
    assert acks["c"]["error"]["code"] == "INVALID_MESSAGE"
    assert max(sizes) > 1  # answers of one batch share frames
    assert ws.close_code == 4400  # an empty batch has no msg_id to answer: the frame is refused
    assert (await get_task(http, tenant, first))["state"] == "RUNNING"
