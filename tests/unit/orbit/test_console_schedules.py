"""The console's schedule pages and actions over a fake `ScheduleDesk` (the use cases are
tested on real databases elsewhere): what the list and a schedule's page show, that reading
needs schedules:read and acting schedules:write, that every action needs the session's CSRF
token, and what each action passes on (revision, note, the form's idempotency key)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agentcall.orbit.console.routes import Hooks, console_routes
from agentcall.orbit.console.schedule_views import (
    FiringView,
    ScheduleList,
    ScheduleView,
    describe_ms,
)
from agentcall.orbit.console.session import COOKIE, csrf_token
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.tokens import Permission, Principal

pytestmark = pytest.mark.unit
NOW = datetime.now(UTC).replace(microsecond=0)
SID = "a" * 32
TASK = "b" * 32
SESSION = "orbsess_" + "c" * 40
READ_ONLY = "orbsess_" + "d" * 40
NO_SCHEDULES = "orbsess_" + "e" * 40


def _principal(*permissions: str) -> Principal:
    known = {p.value: p for p in Permission}
    chosen: Any = frozenset(known.get(p, p) for p in permissions)
    return Principal("t" * 32, "n" * 32, chosen, frozenset({"q" * 32}))


PRINCIPALS = {
    SESSION: _principal("tasks:read", "schedules:read", "schedules:write"),
    READ_ONLY: _principal("tasks:read", "schedules:read"),
    NO_SCHEDULES: _principal("tasks:read"),
}


def _in(delay: timedelta) -> datetime:
    return datetime.now(UTC).replace(microsecond=0) + delay


def _schedule(state: str = "active", **changes: Any) -> ScheduleView:
    last = FiringView(
        NOW - timedelta(minutes=5), NOW - timedelta(minutes=5), "scheduled", "fired", TASK
    )
    fields: dict[str, Any] = {
        "id": SID,
        "revision": 3,
        "state": state,
        "note": "nightly export",
        "queue_id": "q" * 32,
        "handler": "reports.export",
        "handler_version": "v2",
        "cron": "30 2 * * *",
        "time_zone": "Europe/Berlin",
        "interval_ms": None,
        "overlap": "skip",
        "catchup_window_ms": 300_000,
        "jitter_ms": 0,
        # from the clock when the page is built (NOW is the module's import, maybe long ago)
        "next_fire_at": None if state == "paused" else _in(timedelta(hours=3, minutes=10)),
        "last_firing": last,
    }
    return ScheduleView(**(fields | changes))


@dataclass
class FakeDesk:
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    state: str = "active"

    async def page(
        self, principal: Principal, state: str | None, cursor: str | None, limit: int
    ) -> ScheduleList:
        self.calls.append(("page", state, cursor, limit))
        every = (
            _schedule(self.state),
            _schedule(
                "paused",
                id="f" * 32,
                cron=None,
                time_zone=None,
                interval_ms=300_000,
                last_firing=None,
            ),
        )
        return ScheduleList([s for s in every if state in (None, s.state)], "next-1")

    async def get(self, principal: Principal, schedule_id: str) -> ScheduleView:
        if schedule_id != SID:
            raise NotFound("schedule not found")
        return _schedule(self.state)

    async def firings(self, principal: Principal, schedule_id: str, limit: int) -> list[FiringView]:
        return [
            FiringView(NOW - timedelta(minutes=1), NOW, "trigger", "triggered", TASK),
            FiringView(
                NOW - timedelta(days=1), NOW - timedelta(days=1), "scheduled", "missed", None, 4
            ),
        ]

    async def next_times(
        self, principal: Principal, schedule_id: str, count: int
    ) -> list[datetime]:
        return [NOW + timedelta(days=n) for n in range(count)]

    async def pause(
        self,
        principal: Principal,
        schedule_id: str,
        revision: int,
        note: str | None,
        request_id: str,
    ) -> None:
        self.calls.append(("pause", schedule_id, revision, note))

    async def resume(
        self, principal: Principal, schedule_id: str, revision: int, request_id: str
    ) -> None:
        self.calls.append(("resume", schedule_id, revision))

    async def trigger(
        self, principal: Principal, schedule_id: str, key: str, request_id: str
    ) -> FiringView:
        self.calls.append(("trigger", schedule_id, key))
        return FiringView(NOW, NOW, "trigger", "triggered", TASK)

    async def delete(
        self, principal: Principal, schedule_id: str, revision: int, request_id: str
    ) -> None:
        self.calls.append(("delete", schedule_id, revision))


class FakeSessions:
    async def resume(self, session_id: str | None) -> Principal | None:
        return PRINCIPALS.get(session_id or "")


def _client(desk: FakeDesk, session: str | None = SESSION) -> TestClient:
    hooks = Hooks(lambda _: None, lambda *_: None, lambda _: None)
    routes = console_routes(None, FakeSessions(), None, hooks, lambda: None, desk)  # type: ignore[arg-type]
    client = TestClient(Starlette(routes=routes), follow_redirects=False)
    if session is not None:
        client.cookies.set(COOKIE, session)
    return client


def _form(session: str = SESSION, **fields: str) -> dict[str, str]:
    return {"csrf": csrf_token(session), **fields}


def test_schedules_list_shows_target_spec_zone_next_firing_last_outcome_and_state() -> None:
    page = _client(FakeDesk()).get("/ui/schedules")
    assert page.status_code == 200, page.text
    row = page.text.split(f'id="schedule-{SID}"')[1].split("</tr>")[0]
    for shown in ("reports.export", "30 2 * * *", "Europe/Berlin", "fired", "nightly export"):
        assert shown in row, shown
    assert f'id="state-{SID}">active' in row and f'id="next-{SID}"><time' in row
    assert "in 3 h" in row.split(f'id="next-{SID}"')[1]
    interval = page.text.split(f'id="schedule-{"f" * 32}"')[1].split("</tr>")[0]
    assert "every 5 min" in interval and ">paused<" in interval and "never" in interval
    assert 'id="next-page"' in page.text and 'id="nav-schedules"' in page.text


def test_schedules_list_filters_by_state_and_refuses_unknown_parameters() -> None:
    desk = FakeDesk()
    page = _client(desk).get("/ui/schedules?state=paused")
    assert page.status_code == 200 and SID not in page.text and "f" * 32 in page.text
    assert desk.calls == [("page", "paused", None, 50)]
    assert _client(desk).get("/ui/schedules?queue=x").status_code == 400


def test_schedule_pages_need_schedules_read() -> None:
    for path in ("/ui/schedules", f"/ui/schedules/{SID}"):
        refused = _client(FakeDesk(), NO_SCHEDULES).get(path)
        assert refused.status_code == 403 and "schedules:read" in refused.text
    assert _client(FakeDesk(), None).get("/ui/schedules").headers["location"] == "/ui/signin"


def test_schedule_page_shows_firings_with_task_links_and_next_times() -> None:
    page = _client(FakeDesk()).get(f"/ui/schedules/{SID}")
    assert page.status_code == 200, page.text
    firings = page.text.split('id="firings"')[1]
    assert f'href="/ui/tasks/{TASK}"' in firings and "triggered" in firings
    assert "missed" in firings and "4 slots" in firings
    assert len(re.findall("<li>", page.text.split('id="upcoming"')[1].split("</ol>")[0])) == 5
    for form in ("trigger-form", "pause-form", "delete-form"):
        assert f'id="{form}"' in page.text
    assert 'id="resume-form"' not in page.text


def test_paused_schedule_offers_resume_and_read_only_token_sees_no_action() -> None:
    page = _client(FakeDesk(state="paused")).get(f"/ui/schedules/{SID}")
    assert 'id="resume-form"' in page.text and 'id="pause-form"' not in page.text
    read_only = _client(FakeDesk(), READ_ONLY).get(f"/ui/schedules/{SID}")
    assert read_only.status_code == 200 and 'id="actions"' not in read_only.text
    assert 'method="post" action="/ui/schedules' not in read_only.text


def test_unknown_or_malformed_schedule_is_not_found() -> None:
    assert _client(FakeDesk()).get(f"/ui/schedules/{'9' * 32}").status_code == 404
    assert _client(FakeDesk()).get("/ui/schedules/nope").status_code == 404


def test_each_action_passes_its_revision_note_or_form_key_and_goes_back() -> None:
    desk = FakeDesk()
    client = _client(desk)
    base = f"/ui/schedules/{SID}"
    paused = client.post(base + "/pause", data=_form(revision="3", note=" for the migration "))
    assert paused.status_code == 303 and paused.headers["location"] == f"{base}?done=pause"
    client.post(base + "/resume", data=_form(revision="4"))
    triggered = client.post(base + "/trigger", data=_form(key="console-k1-trigger"))
    assert triggered.headers["location"] == f"{base}?done=trigger"
    deleted = client.post(base + "/delete", data=_form(revision="5"))
    assert deleted.headers["location"] == "/ui/schedules?done=delete"
    assert desk.calls == [
        ("pause", SID, 3, "for the migration"),
        ("resume", SID, 4),
        ("trigger", SID, "console-k1-trigger"),
        ("delete", SID, 5),
    ]


@pytest.mark.parametrize(
    ("session", "form", "status", "says"),
    [
        (READ_ONLY, {"revision": "3"}, 403, "schedules:write"),
        (SESSION, {"revision": "3", "csrf": "0" * 64}, 403, "CSRF"),
        (SESSION, {"revision": "x"}, 400, "revision"),
        (SESSION, {"revision": "0"}, 400, "revision"),
    ],
)
def test_actions_need_schedules_write_the_csrf_token_and_a_revision(
    session: str, form: dict[str, str], status: int, says: str
) -> None:
    desk = FakeDesk()
    answer = _client(desk, session).post(f"/ui/schedules/{SID}/pause", data=_form(session) | form)
    assert answer.status_code == status and says in answer.text
    assert desk.calls == []


def test_trigger_needs_a_key_and_unknown_actions_are_refused() -> None:
    desk = FakeDesk()
    client = _client(desk)
    assert client.post(f"/ui/schedules/{SID}/trigger", data=_form()).status_code == 400
    assert client.post(f"/ui/schedules/{SID}/backfill", data=_form(revision="3")).status_code == 400
    assert desk.calls == []


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (1000, "1 s"),
        (90_000, "90 s"),
        (300_000, "5 min"),
        (7_200_000, "2 h"),
        (86_400_000, "1 d"),
        (1500, "1500 ms"),
    ],
)
def test_intervals_read_in_their_largest_whole_unit(ms: int, text: str) -> None:
    assert describe_ms(ms) == text
