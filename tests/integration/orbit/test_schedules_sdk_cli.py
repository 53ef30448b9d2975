"""`client.schedules` (blocking and asyncio) and `orbit schedules create|list|show|pause|
resume|trigger|backfill|delete` against `orbit serve`, on SQLite and MariaDB
(docs/orbit/schedules.md): what the SDK sends the server reads, and what it answers the SDK
and the CLI read back."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.sdk.client import (
    AsyncClient,
    Client,
    CreateScheduleRequest,
    IdempotencyConflictError,
    ScheduleSpec,
    StateConflictError,
    TaskTemplate,
    UpdateScheduleRequest,
)
from tests.support.orbit_server import Tenant

pytestmark = pytest.mark.integration
DAY = datetime(2026, 1, 1, tzinfo=UTC)


def template(tenant: Tenant) -> TaskTemplate:
    return TaskTemplate(tenant.queue_id, "reports.daily", "v1", "v1", {"d": Decimal("1.10")})


def orbit(tenant: Tenant, *args: str) -> Any:
    env = {"ORBIT_URL": tenant.base_url, "ORBIT_TOKEN": tenant.token}
    command = ["schedules", *args, "--json"]
    result = CliRunner().invoke(main, command, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1]) if "{" in result.output else None


def test_the_blocking_client_drives_a_schedule_end_to_end(tenant: Tenant) -> None:
    spec = ScheduleSpec.of_cron("30 2 * * *", "Europe/Berlin")
    key = f"sdk-{secrets.token_hex(4)}"
    with Client(tenant.base_url, tenant.token) as client:
        created = client.schedules.create(key, CreateScheduleRequest(template(tenant), spec))
        schedule = created.schedule
        assert not created.deduplicated and schedule.revision == 1
        assert schedule.template.payload == {"d": Decimal("1.10")}
        assert schedule.spec == ScheduleSpec("30 2 * * *", "Europe/Berlin")
        again = client.schedules.create(key, CreateScheduleRequest(template(tenant), spec))
        assert again.deduplicated and again.schedule == schedule
        with pytest.raises(IdempotencyConflictError):
            other = CreateScheduleRequest(template(tenant), spec, overlap="allow")
            client.schedules.create(key, other)
        times = client.schedules.next_times(schedule.id, 3)
        assert len(times) == 3 and all(t.minute == 30 for t in times)
        changed = client.schedules.update(
            schedule.id, UpdateScheduleRequest(1, jitter_ms=500, note="nightly")
        )
        assert (changed.revision, changed.jitter_ms, changed.note) == (2, 500, "nightly")
        with pytest.raises(StateConflictError):
            client.schedules.pause(schedule.id, 1)
        paused = client.schedules.pause(schedule.id, 2, "maintenance")
        assert paused.state == "paused" and paused.next_fire_at is None
        fired = client.schedules.trigger(schedule.id, key="now")
        assert fired.firing.outcome == "triggered" and fired.firing.task_id is not None
        assert client.schedules.trigger(schedule.id, key="now").deduplicated
        preview = client.schedules.preview_backfill(schedule.id, DAY, DAY.replace(day=4))
        assert len(preview.slots) == 3 and preview.firings == []
        filled = client.schedules.backfill(schedule.id, DAY, DAY.replace(day=4))
        assert [f.nominal_at for f in filled.firings] == preview.slots
        assert len(client.schedules.firings(schedule.id, 100)) == 4
        assert schedule.id in {item.id for item in client.schedules.iter()}
        resumed = client.schedules.resume(schedule.id, 3)
        assert resumed.state == "active" and resumed.next_fire_at is not None
        client.schedules.delete(schedule.id, 4)
        assert schedule.id not in {item.id for item in client.schedules.iter()}


async def test_the_async_client_has_the_same_operations(tenant: Tenant) -> None:
    spec = ScheduleSpec.of_interval(60_000, DAY)
    async with AsyncClient(tenant.base_url, tenant.token) as client:
        request = CreateScheduleRequest(template(tenant), spec, state="paused")
        created = await client.schedules.create(f"async-{secrets.token_hex(4)}", request)
        schedule_id = created.schedule.id
        assert created.schedule.spec == ScheduleSpec(interval_ms=60_000, anchor_at=DAY)
        got = await client.schedules.get(schedule_id)
        assert got.state == "paused" and got.next_fire_at is None
        page = await client.schedules.list(tenant.queue_id, "paused", 10)
        assert schedule_id in [item.id for item in page.items]
        seen = [item.id async for item in client.schedules.iter(state="paused")]
        assert schedule_id in seen
        fired = await client.schedules.trigger(schedule_id, key="async-now")
        got = await client.schedules.get(schedule_id)
        assert got.last_firing == fired.firing
        assert len(await client.schedules.next_times(schedule_id, 5)) == 5
        await client.schedules.delete(schedule_id)


def test_the_cli_creates_shows_pauses_triggers_backfills_and_deletes(tenant: Tenant) -> None:
    created = orbit(
        tenant,
        "create",
        "--queue-id",
        tenant.queue_id,
        "--handler",
        "demo.work",
        "--handler-version",
        "v1",
        "--payload-version",
        "v1",
        "--payload",
        '{"n": 1}',
        "--cron",
        "0 9 * * mon-fri",
        "--time-zone",
        "America/New_York",
        "--key",
        f"cli-{secrets.token_hex(4)}",
    )
    schedule_id = created["id"]
    assert created["deduplicated"] is False and created["revision"] == "1"
    listed = orbit(tenant, "list")
    assert schedule_id in json.dumps(listed)
    assert schedule_id in json.dumps(orbit(tenant, "show", schedule_id))
    paused = orbit(tenant, "pause", schedule_id, "--note", "holiday")
    assert paused["state"] == "paused" and paused["note"] == "holiday"
    fired = orbit(tenant, "trigger", schedule_id, "--key", "cli-now")
    assert fired["firing"]["outcome"] == "triggered"
    preview = orbit(
        tenant,
        "backfill",
        schedule_id,
        "--from",
        "2026-01-05T00:00:00Z",
        "--to",
        "2026-01-10T00:00:00Z",
        "--preview",
    )
    assert preview["slots"][0] == "2026-01-05T14:00:00Z" and len(preview["slots"]) == 5
    resumed = orbit(tenant, "resume", schedule_id)
    assert resumed["state"] == "active"
    assert orbit(tenant, "delete", schedule_id) == {"id": schedule_id, "deleted": True}
