"""The schedule endpoints over HTTP on both databases (docs/orbit/schedules.md): create under
an idempotency key, strict bodies, permissions and queue scopes, revisions on patch, pause,
resume and delete, the next nominal times in a time zone, and keyset listing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.tokens import Permission
from tests.integration.orbit.wire import ID, TIME, error, ok
from tests.support.metric_names import samples
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


def schedule_body(tenant: Tenant, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "template": {
            "queue_id": tenant.queue_id,
            "handler": "reports.daily",
            "handler_version": "v1",
            "payload_version": "v1",
            "payload": {"n": 9007199254740993, "d": 1.10},
        },
        "spec": {"cron": "30 2 * * *", "time_zone": "Europe/Berlin"},
    }
    body.update(changes)
    return body


def json_headers(tenant: Tenant, token: str | None = None) -> dict[str, str]:
    return {**tenant.headers(token), "Content-Type": "application/json"}


async def create(
    http: httpx.AsyncClient, tenant: Tenant, key: str, token: str | None = None, **changes: Any
) -> httpx.Response:
    body = schedule_body(tenant, **changes)
    return await http.post("/v1/schedules", json=body, headers=tenant.headers(token, key))


async def created(http: httpx.AsyncClient, tenant: Tenant, key: str, **changes: Any) -> Any:
    return ok(await create(http, tenant, key, **changes), 201)["schedule"]


async def test_a_create_key_replays_the_first_receipt_and_refuses_other_content(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    first = ok(await create(http, tenant, "nightly"), 201)
    schedule = first["schedule"]
    assert first["deduplicated"] is False and ID.fullmatch(schedule["id"])
    assert schedule["revision"] == "1" and schedule["state"] == "active"
    assert schedule["overlap"] == "skip" and schedule["catchup_window_ms"] == 300000
    assert schedule["template"]["payload"] == {"n": 9007199254740993, "d": 1.10}
    assert schedule["template"]["retry"]["max_attempts"] == 1  # the task defaults, applied
    assert schedule["spec"] == {"cron": "30 2 * * *", "time_zone": "Europe/Berlin"}
    assert TIME.fullmatch(schedule["next_fire_at"]) and "last_firing" not in schedule
    again = ok(await create(http, tenant, "nightly"), 200)
    assert again == {"deduplicated": True, "schedule": schedule}
    other = await create(http, tenant, "nightly", overlap="allow")
    error(other, 409, "IDEMPOTENCY_CONFLICT")
    missing = await http.post(
        "/v1/schedules", json=schedule_body(tenant), headers=json_headers(tenant)
    )
    assert "Idempotency-Key" in error(missing, 400, "INVALID_ARGUMENT")
    got = ok(await http.get(f"/v1/schedules/{schedule['id']}", headers=tenant.headers()))
    assert got == schedule


async def test_the_next_times_follow_the_zone_and_an_interval_its_anchor(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    nightly = await created(http, tenant, "zone")
    url = f"/v1/schedules/{nightly['id']}/next"
    times = ok(await http.get(url, params={"count": "3"}, headers=tenant.headers()))["times"]
    assert len(times) == 3
    for text in times:  # 02:30 in Berlin: 01:30 UTC in winter, 00:30 UTC in summer
        assert text.endswith(("T01:30:00Z", "T00:30:00Z")), times
    assert times[0] == nightly["next_fire_at"]
    spec = {"interval_ms": 60000, "anchor_at": "2026-01-01T00:00:30Z"}
    minutely = await created(http, tenant, "interval", spec=spec)
    assert minutely["spec"] == spec
    url = f"/v1/schedules/{minutely['id']}/next"
    times = ok(await http.get(url, headers=tenant.headers()))["times"]
    assert len(times) == 10 and all(text.endswith(":30Z") for text in times)
    bad = await http.get(url, params={"count": "101"}, headers=tenant.headers())
    assert "count" in error(bad, 400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"spec": {"cron": "61 * * * *"}}, "spec.cron"),
        ({"spec": {"cron": "0 0 * * *", "time_zone": "Mars/Olympus"}}, "spec.time_zone"),
        ({"spec": {"interval_ms": 999}}, "spec.interval_ms"),
        ({"overlap": "sometimes"}, "overlap"),
        ({"catchup_window_ms": 10}, "catchup_window_ms"),
        ({"colour": "red"}, "colour"),
        ({"template": {"queue_id": "0" * 32}}, "template.payload"),
        (
            {"template": {"queue_id": "0" * 32, "payload": {}, "business_key": "k"}},
            "template.business_key",
        ),
    ],
)
async def test_a_bad_body_is_refused_naming_its_field(
    tenant: Tenant, http: httpx.AsyncClient, changes: dict[str, Any], field: str
) -> None:
    refused = await create(http, tenant, f"bad-{field}", **changes)
    assert error(refused, 400, "INVALID_ARGUMENT").startswith(field)


async def test_permissions_and_the_queue_scope_apply_to_the_target_queue(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """O-API-1: reading needs schedules:read, writing schedules:write; a schedule of a queue
    outside the token's scope is not found, and none is made there."""
    schedule = await created(http, tenant, "scoped")
    url = f"/v1/schedules/{schedule['id']}"
    _, reader = await tenant.token_for([Permission.SCHEDULES_READ])
    assert ok(await http.get(url, headers=tenant.headers(reader)))["id"] == schedule["id"]
    pause = {"expected_revision": "1"}
    refused = await http.post(f"{url}:pause", json=pause, headers=json_headers(tenant, reader))
    assert "schedules:write" in error(refused, 403, "PERMISSION_DENIED")
    _, tasks_only = await tenant.token_for([Permission.READ, Permission.SUBMIT])
    error(await http.get(url, headers=tenant.headers(tasks_only)), 403, "PERMISSION_DENIED")
    other_queue = await tenant.queue()
    _, elsewhere = await tenant.token_for(
        [Permission.SCHEDULES_READ, Permission.SCHEDULES_WRITE], [other_queue]
    )
    error(await http.get(url, headers=tenant.headers(elsewhere)), 404, "NOT_FOUND")
    listed = ok(await http.get("/v1/schedules", headers=tenant.headers(elsewhere)))
    assert listed == {"items": []}
    error(await create(http, tenant, "there", elsewhere), 403, "PERMISSION_DENIED")
    error(await http.get("/v1/schedules/not-an-id", headers=tenant.headers()), 404, "NOT_FOUND")


async def test_patch_pause_resume_and_delete_go_by_the_expected_revision(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    schedule = await created(http, tenant, "revisions", note="nightly")
    url = f"/v1/schedules/{schedule['id']}"
    headers = json_headers(tenant)
    patched = ok(
        await http.patch(
            url, json={"expected_revision": "1", "jitter_ms": 500, "note": None}, headers=headers
        )
    )
    assert patched["revision"] == "2" and patched["jitter_ms"] == 500 and "note" not in patched
    assert patched["next_fire_at"] == schedule["next_fire_at"]  # the spec did not change
    stale = await http.patch(url, json={"expected_revision": "1"}, headers=headers)
    assert "revision 2" in error(stale, 409, "STATE_CONFLICT")
    unknown = await http.patch(url, json={"expected_revision": "2", "state": "x"}, headers=headers)
    assert error(unknown, 400, "INVALID_ARGUMENT").startswith("state")
    body = {"expected_revision": "2", "note": "maintenance"}
    paused = ok(await http.post(f"{url}:pause", json=body, headers=headers))
    assert (paused["state"], paused["note"], paused["revision"]) == ("paused", "maintenance", "3")
    assert "next_fire_at" not in paused
    listed = ok(await http.get("/v1/schedules?state=paused", headers=tenant.headers()))
    assert [item["id"] for item in listed["items"]] == [schedule["id"]]
    resumed = ok(await http.post(f"{url}:resume", json={"expected_revision": "3"}, headers=headers))
    assert resumed["state"] == "active" and resumed["note"] == "maintenance"
    assert datetime.fromisoformat(resumed["next_fire_at"]) > datetime.now(UTC)
    stale_delete = await http.delete(url, params={"expected_revision": "3"}, headers=headers)
    error(stale_delete, 409, "STATE_CONFLICT")
    gone = ok(await http.delete(url, params={"expected_revision": "4"}, headers=headers))
    assert gone == {"id": schedule["id"], "deleted": True}
    error(await http.get(url, headers=tenant.headers()), 404, "NOT_FOUND")
    error(await http.delete(url, headers=headers), 404, "NOT_FOUND")


async def test_the_listing_pages_by_cursor_without_gaps_or_repeats(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    made = {(await created(http, tenant, f"page-{n}"))["id"] for n in range(5)}
    seen: list[str] = []
    params: dict[str, str] = {"limit": "2"}
    while True:
        page = ok(await http.get("/v1/schedules", params=params, headers=tenant.headers()))
        seen += [item["id"] for item in page["items"]]
        if "next_cursor" not in page:
            break
        params = {"limit": "2", "cursor": page["next_cursor"]}
    assert sorted(seen) == sorted(made) and seen == sorted(seen)
    other = {"cursor": params.get("cursor", "x"), "state": "paused"}
    bad = await http.get("/v1/schedules", params=other, headers=tenant.headers())
    assert error(bad, 400, "INVALID_ARGUMENT").startswith("cursor")
    firings = f"/v1/schedules/{seen[0]}/firings"
    assert ok(await http.get(firings, headers=tenant.headers())) == {"items": []}


async def test_a_trigger_key_answers_one_firing_and_one_task(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """Paused or not: a trigger fires; the same key again is the same firing and task."""
    schedule = await created(http, tenant, "trigger", state="paused")
    url = f"/v1/schedules/{schedule['id']}:trigger"
    first = ok(await http.post(url, json={}, headers=tenant.headers(key="now-1")), 201)
    firing = first["firing"]
    assert first["deduplicated"] is False
    assert (firing["kind"], firing["outcome"], firing["slots"]) == ("trigger", "triggered", 1)
    again = ok(await http.post(url, json={}, headers=tenant.headers(key="now-1")), 200)
    assert again == {"deduplicated": True, "firing": firing}
    other = ok(await http.post(url, json={}, headers=tenant.headers(key="now-2")), 201)
    assert other["firing"]["task_id"] != firing["task_id"]
    task = ok(await http.get(f"/v1/tasks/{firing['task_id']}", headers=tenant.headers()))
    assert task["handler"] == "reports.daily" and task["payload"]["n"] == 9007199254740993
    refused = await http.post(url, json={"now": True}, headers=tenant.headers(key="now-3"))
    error(refused, 400, "INVALID_ARGUMENT")
    error(await http.post(url, json={}, headers=json_headers(tenant)), 400, "INVALID_ARGUMENT")
    got = ok(await http.get(f"/v1/schedules/{schedule['id']}", headers=tenant.headers()))
    assert got["last_firing"]["task_id"] == other["firing"]["task_id"]


async def test_a_trigger_without_a_key_is_refused_before_the_schedule_is_looked_up(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """The missing header is the caller's mistake whether or not the schedule exists: 400
    names the header, not a 404 that sends them looking for the schedule."""
    url = "/v1/schedules/7e2a3972b87a3ea4f57cd3f4c7abd3fd:trigger"
    missing = await http.post(url, json={}, headers=json_headers(tenant))
    assert error(missing, 400, "INVALID_ARGUMENT").startswith("Idempotency-Key")
    keyed = await http.post(url, json={}, headers=tenant.headers(key="k-1"))
    error(keyed, 404, "NOT_FOUND")


async def test_a_backfill_previews_then_fires_each_slot_once(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    spec = {"cron": "0 6 * * *", "time_zone": "America/New_York"}
    schedule = await created(http, tenant, "backfill", spec=spec)
    url = f"/v1/schedules/{schedule['id']}:backfill"
    week = {"from": "2026-03-05T00:00:00Z", "to": "2026-03-10T00:00:00Z"}
    preview = ok(await http.post(url, json={**week, "preview": True}, headers=json_headers(tenant)))
    # 06:00 in New York: 11:00 UTC before the spring change on 8 March, 10:00 UTC after it
    assert preview == {
        "slots": [
            "2026-03-05T11:00:00Z",
            "2026-03-06T11:00:00Z",
            "2026-03-07T11:00:00Z",
            "2026-03-08T10:00:00Z",
            "2026-03-09T10:00:00Z",
        ],
        "firings": [],
    }
    url_firings = f"/v1/schedules/{schedule['id']}/firings"
    assert ok(await http.get(url_firings, headers=tenant.headers())) == {"items": []}
    done = ok(await http.post(url, json=week, headers=json_headers(tenant)))
    assert done["slots"] == preview["slots"]
    assert [f["nominal_at"] for f in done["firings"]] == preview["slots"]
    assert {f["outcome"] for f in done["firings"]} == {"backfilled"}
    assert not any(f["deduplicated"] for f in done["firings"])
    again = ok(await http.post(url, json=week, headers=json_headers(tenant)))
    assert again["firings"] == done["firings"]  # the same records: nothing fired twice
    listed = ok(await http.get(url_firings, params={"limit": "100"}, headers=tenant.headers()))
    assert len(listed["items"]) == 5
    year = {"from": "2020-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}
    too_long = await http.post(url, json=year, headers=json_headers(tenant))
    assert "1000 slots" in error(too_long, 400, "INVALID_ARGUMENT")


async def firings_counted(http: httpx.AsyncClient, outcome: str) -> float:
    exposition = samples((await http.get("/metrics")).text)
    return exposition.get(("orbit_schedule_firings_total", (("outcome", outcome),)), 0.0)


async def test_each_schedule_change_is_in_the_audit_log_and_a_read_is_not(
    tenant: Tenant, http: httpx.AsyncClient
) -> None:
    """Also counted: a trigger and each slot a backfill fired, once (a replay is not)."""
    before = [await firings_counted(http, o) for o in ("triggered", "backfilled")]
    schedule = await created(http, tenant, "audited", state="paused")
    url = f"/v1/schedules/{schedule['id']}"
    headers = json_headers(tenant)
    ok(await http.patch(url, json={"expected_revision": "1", "jitter_ms": 5}, headers=headers))
    ok(await http.post(f"{url}:resume", json={"expected_revision": "2"}, headers=headers))
    body = {"expected_revision": "3", "note": "<b>hold</b>"}
    ok(await http.post(f"{url}:pause", json=body, headers=headers))
    fired = ok(await http.post(f"{url}:trigger", json={}, headers=tenant.headers(key="t1")), 201)
    ok(await http.post(f"{url}:trigger", json={}, headers=tenant.headers(key="t1")), 200)
    week = {"from": "2026-03-05T00:00:00Z", "to": "2026-03-07T00:00:00Z"}
    ok(await http.post(f"{url}:backfill", json={**week, "preview": True}, headers=headers))
    ok(await http.post(f"{url}:backfill", json=week, headers=headers))
    ok(await http.get(url, headers=tenant.headers()))
    ok(await http.delete(url, params={"expected_revision": "4"}, headers=headers))
    params = {"target": schedule["id"]}
    found = ok(await http.get("/v1/audit", params=params, headers=tenant.headers()))["items"]
    actions = [entry["action"] for entry in reversed(found)]  # oldest first
    assert actions == [
        "schedules.create",
        "schedules.update",
        "schedules.resume",
        "schedules.pause",
        "schedules.trigger",
        "schedules.backfill",
        "schedules.delete",
    ]
    by_action = {entry["action"]: entry for entry in found}
    assert by_action["schedules.update"]["detail"] == {"fields": ["expected_revision", "jitter_ms"]}
    assert by_action["schedules.pause"]["detail"] == {"note": "<b>hold</b>"}
    assert by_action["schedules.trigger"]["detail"] == {"task_id": fired["firing"]["task_id"]}
    assert by_action["schedules.backfill"]["detail"] == {"slots": 2}
    assert all(e["target"] == {"kind": "schedule", "id": schedule["id"]} for e in found)
    after = [await firings_counted(http, o) for o in ("triggered", "backfilled")]
    assert [b - a for a, b in zip(before, after, strict=True)] == [1, 2]
