"""POST /v1/tasks over HTTP on both databases: O-SUB-1..4, O-NOTE-1/4/5/6, O-API-3."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.times import format_time, parse_time
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import audit_log, idempotency_records, task_events, tasks
from tests.integration.orbit.wire import ID, TIME, dumps, error, ok
from tests.support.orbit_server import DROP, Tenant

pytestmark = [pytest.mark.integration]


async def submit(
    http: httpx.AsyncClient, tenant: Tenant, key: str, body: object, **headers: str
) -> httpx.Response:
    content = body if isinstance(body, bytes) else dumps(body)
    return await http.post(
        "/v1/tasks", content=content, headers={**tenant.headers(key=key), **headers}
    )


async def test_o_sub_1_first_acceptance_then_replay(http: httpx.AsyncClient, tenant: Tenant):
    """O-SUB-1 / O-NOTE-1: 201 deduplicated=false, then 200 deduplicated=true, same task."""
    first = ok(await submit(http, tenant, "k-1", tenant.body(business_key="b-1")), 201)
    assert first["deduplicated"] is False
    task = first["task"]
    assert ID.fullmatch(task["id"]) and task["namespace_id"] == tenant.namespace_id
    assert task["state"] == "WAITING" and task["revision"] == "1" and task["attempt_count"] == 0
    # the same content written differently: keys reordered, 9007199254740993 spelled
    # 90071992547409930e-1,
    # defaults spelled out, whitespace
    same = (
        '{ "retry": {"max_attempts": 1, "attempt_timeout_ms": 30000}, "business_key": "b-1",'
        ' "recovery_safety": "RECONCILE_ONLY", "task_timeout_ms": 0,'
        ' "payload": {"sequence": 90071992547409930e-1, "source_ref": "objects/input.txt"},'
        ' "payload_version": "v1", "handler_version": "v1", "handler": "file.convert",'
        f' "queue_id": "{tenant.queue_id}" }}'
    ).encode()
    replay = ok(await submit(http, tenant, "k-1", same), 200)
    assert replay == {"deduplicated": True, "task": task}


async def test_o_sub_1_conflict_and_business_key(http: httpx.AsyncClient, tenant: Tenant):
    """O-SUB-1: same key + different content is 409; another key with the same business_key
    makes a second task (business_key is not an idempotency key)."""
    ok(await submit(http, tenant, "k-2", tenant.body(business_key="same")), 201)
    changed = tenant.body(business_key="same", payload={"other": 1})
    message = error(await submit(http, tenant, "k-2", changed), 409, "IDEMPOTENCY_CONFLICT")
    assert "different content" in message
    second = ok(await submit(http, tenant, "k-3", tenant.body(business_key="same")), 201)
    assert second["deduplicated"] is False


async def test_o_note_5_request_ids(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-NOTE-5: the server makes request IDs; a client's X-Request-ID is not echoed."""
    response = await submit(http, tenant, "k-rid", tenant.body(), **{"X-Request-ID": "mine"})
    first = ok(response, 201)
    assert response.headers["x-request-id"] != "mine"
    again = await submit(http, tenant, "k-rid", tenant.body())
    assert again.headers["x-request-id"] != response.headers["x-request-id"]
    assert ok(again)["task"] == first["task"]


async def test_o_api_3_times_defaults_and_exact_payload(http: httpx.AsyncClient, tenant: Tenant):
    """O-API-3 / O-NOTE-4 / O-SUB-2: created_at from the database clock, available_at defaults to
    it, deadline = created_at + task_timeout_ms; payload numbers come back byte for byte."""
    payload = '{"big":9007199254740993,"dec":1.10,"neg":-0.0,"exp":2E+5,"max":1e308,"s":"é"}'
    body = dumps(tenant.body(payload=None, task_timeout_ms=60000)).replace(
        b'"payload":null', b'"payload":' + payload.encode()
    )
    response = await submit(http, tenant, "k-exact", body)
    task = ok(response, 201)["task"]
    assert f'"payload":{payload}' in response.text
    created = parse_time(task["created_at"], "created_at")
    assert task["available_at"] == task["created_at"] == task["updated_at"]
    assert parse_time(task["deadline_at"], "d") == created + timedelta(milliseconds=60000)
    assert abs(created - datetime.now(UTC)) < timedelta(seconds=30)
    for name in ("available_at", "deadline_at", "created_at", "updated_at"):
        assert TIME.fullmatch(task[name])
    for absent in ("start_deadline_at", "result", "cancel_requested_at", "completed_at"):
        assert absent not in task
    got = await http.get(f"/v1/tasks/{task['id']}", headers=tenant.headers())
    assert f'"payload":{payload}' in got.text


async def test_o_note_4_replay_without_available_at_later(http: httpx.AsyncClient, tenant: Tenant):
    """O-NOTE-4: the acceptance-time default is not content: a replay seconds later matches;
    an explicit available_at that is now past still replays (no re-validation)."""
    first = ok(await submit(http, tenant, "k-later", tenant.body()), 201)
    soon = datetime.now(UTC) + timedelta(seconds=1)
    explicit = ok(
        await submit(http, tenant, "k-soon", tenant.body(available_at=format_time(soon))), 201
    )["task"]
    assert explicit["available_at"] == format_time(soon)
    # wait until the explicit time is more than the 1 s tolerance in the past
    await asyncio.sleep(max(0.0, (soon - datetime.now(UTC)).total_seconds()) + 1.2)
    assert ok(await submit(http, tenant, "k-later", tenant.body()))["task"] == first["task"]
    late = ok(await submit(http, tenant, "k-soon", tenant.body(available_at=format_time(soon))))
    assert late == {"deduplicated": True, "task": explicit}


async def test_o_sub_4_one_transaction_records(
    http: httpx.AsyncClient, tenant: Tenant, db: Database
) -> None:
    """O-SUB-4 / O-SUB-1: task, acceptance event, audit (no payload), idempotency record with
    receipt and a 90-day retention are all written."""
    task = ok(await submit(http, tenant, "k-rec", tenant.body()), 201)["task"]
    async with db.read() as conn:
        row = (await conn.execute(sa.select(tasks).where(tasks.c.id == task["id"]))).one()
        events = (
            await conn.execute(sa.select(task_events).where(task_events.c.task_id == task["id"]))
        ).all()
        audits = (
            await conn.execute(sa.select(audit_log).where(audit_log.c.task_id == task["id"]))
        ).all()
        record = (
            await conn.execute(
                sa.select(idempotency_records).where(
                    idempotency_records.c.namespace_id == tenant.namespace_id,
                    idempotency_records.c.idem_key == "k-rec",
                )
            )
        ).one()
    assert row.state == "WAITING"
    assert [(e.kind, e.revision, e.to_state) for e in events] == [("ACCEPTED", 1, "WAITING")]
    assert len(audits) == 1 and audits[0].action == "tasks.submit"
    assert audits[0].handler == "file.convert" and audits[0].queue_id == tenant.queue_id
    assert "payload" not in audit_log.c
    assert record.digest_alg == "orbit-json-v1" and record.status_code == 201
    assert record.expires_at - record.created_at == timedelta(days=90)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"queue_id": DROP}, "queue_id"),
        ({"queue_id": "XYZ"}, "queue_id"),
        ({"handler": "h" * 129}, "handler"),
        ({"handler": "-x"}, "handler"),
        ({"handler_version": "v" * 65}, "handler_version"),
        ({"payload_version": "p" * 33}, "payload_version"),
        ({"payload": None}, "payload"),
        ({"payload": DROP}, "payload"),
        ({"business_key": "k" * 192}, "business_key"),
        ({"business_key": "a\nb"}, "business_key"),
        ({"available_at": "2020-01-01T00:00:00Z"}, "available_at"),
        ({"available_at": "9999-01-01T00:00:00Z"}, "available_at"),
        ({"start_deadline_at": "2001-01-01T00:00:00Z"}, "start_deadline_at"),
        ({"task_timeout_ms": 2592000001}, "task_timeout_ms"),
        ({"task_timeout_ms": 10000}, "retry.attempt_timeout_ms"),
        ({"recovery_safety": "SOMETIMES"}, "recovery_safety"),
        ({"retry": {"max_attempts": 101}}, "retry.max_attempts"),
        (
            {"retry": {"max_attempts": 2, "initial_delay_ms": 5000, "max_delay_ms": 10}},
            "retry.initial_delay_ms",
        ),
        ({"retry": {"max_attempts": 2, "max_delay_ms": 9223372036855}}, "retry.max_delay_ms"),
        ({"retry": None}, "retry"),
        ({"Queue_Id": "1" * 32}, "Queue_Id"),
        ({"extra": 1}, "extra"),
    ],
)
async def test_o_sub_3_field_table_over_http(
    http: httpx.AsyncClient, tenant: Tenant, changes: dict[str, object], field: str
) -> None:
    """O-SUB-3 / O-NOTE-6: each field-table violation is 400 naming the field, and stores
    nothing: the same key then works for a valid request."""
    key = f"k-field-{field}"
    message = error(
        await submit(http, tenant, key, tenant.body(**changes)), 400, "INVALID_ARGUMENT"
    )
    assert message.startswith(field)
    ok(await submit(http, tenant, key, tenant.body()), 201)


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("a", True),
        ("x" * 128, True),
        ("!#$%~", True),
        ("", False),
        ("x" * 129, False),
        ("with space", False),
    ],
)
async def test_o_sub_1_key_format(http: httpx.AsyncClient, tenant: Tenant, key: str, valid: bool):
    """O-SUB-1: keys are 1-128 printable ASCII characters without spaces."""
    response = await submit(http, tenant, key, tenant.body())
    if valid:
        ok(response, 201)
    else:
        assert "Idempotency-Key" in error(response, 400, "INVALID_ARGUMENT")


async def test_o_sub_1_key_required_and_single(http: httpx.AsyncClient, tenant: Tenant) -> None:
    headers = {"Authorization": f"Bearer {tenant.token}", "Content-Type": "application/json"}
    error(
        await http.post("/v1/tasks", content=dumps(tenant.body()), headers=headers),
        400,
        "INVALID_ARGUMENT",
    )
    doubled = [*headers.items(), ("Idempotency-Key", "a"), ("Idempotency-Key", "b")]
    error(
        await http.post("/v1/tasks", content=dumps(tenant.body()), headers=doubled),
        400,
        "INVALID_ARGUMENT",
    )


async def test_o_sub_1_key_scope_is_namespace(
    http: httpx.AsyncClient, tenant: Tenant, db: Database, server_url: str
) -> None:
    """O-SUB-1: the same key in another namespace is another identity; in the same namespace
    it is shared by every token (which still needs its own permission)."""
    other = await Tenant.create(db, server_url)
    first = ok(await submit(http, tenant, "shared", tenant.body()), 201)
    ok(await submit(http, other, "shared", other.body()), 201)
    _, second_token = await tenant.token_for([Permission.SUBMIT])
    replay = await http.post(
        "/v1/tasks", content=dumps(tenant.body()), headers=tenant.headers(second_token, "shared")
    )
    assert ok(replay)["task"]["id"] == first["task"]["id"]
