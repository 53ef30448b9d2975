"""The console's pages over a real SQLite state file (rows as the D writes them) and a
/status snapshot: every panel renders, hostile text is escaped, the token is asked for,
nothing is written, and the answers carry the strict headers."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agentcall.dispatcher.console.pages import Console, console_routes
from agentcall.dispatcher.store.db import migrate
from agentcall.dispatcher.web.app import build_app

pytestmark = pytest.mark.integration
NOW = datetime(2026, 12, 1, 12, 7, 30, tzinfo=UTC)
TOKEN = "a-console-token-0123"
HOSTILE = "<script>alert('x')</script>"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _call(conn: sqlite3.Connection, n: int, outcome: str, ended: datetime, **end: Any) -> None:
    body = {
        "started_at": _iso(ended - timedelta(seconds=n)),
        "ended_at": _iso(ended),
        "outcome": outcome,
        "reason_code": None,
        "transcript": [],
        "opt_out": False,
        "quality": None,
        **end,
    }
    conn.execute(
        "INSERT INTO inbox (command_id, task_id, decision, execution_id, received_at)"
        " VALUES (?, 'task-1', 'accepted', ?, ?)",
        (f"cmd-{n}", f"ex-{n}", _iso(ended - timedelta(seconds=n + 1))),
    )
    conn.execute(
        "INSERT INTO executions (execution_id, command_id, call_id, task_id, tenant_id, trunk_id,"
        " state, snapshot_json, call_result_event_id, end_json, accepted_at, ended_at,"
        " finalized_at, updated_at) VALUES (?,?,?,'task-1','tenant-1','trunk-1','finalized','{}',"
        " ?,?,?,?,?,?)",
        (
            f"ex-{n}",
            f"cmd-{n}",
            f"call-{n}",
            f"ev-{n}",
            json.dumps(body),
            _iso(ended),
            _iso(ended),
            _iso(ended),
            _iso(ended),
        ),
    )


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "state.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate(conn)
    _call(
        conn,
        1,
        "answered",
        NOW - timedelta(minutes=1),
        opt_out=True,
        transcript=[
            {
                "turn_id": "t",
                "segment_id": "s",
                "role": "user",
                "text": HOSTILE,
                "start_ms": 0,
                "end_ms": 5,
            }
        ],
        quality={"rtp": {"loss_ratio": 0.02, "jitter_ms": 12.5}},
    )
    _call(conn, 2, "busy", NOW - timedelta(minutes=20))
    conn.execute(
        "INSERT INTO inbox (command_id, task_id, decision, reason_code, received_at)"
        " VALUES ('cmd-r', 'task-1', 'rejected', 'task_concurrency_exhausted', ?)",
        (_iso(NOW - timedelta(minutes=3)),),
    )
    conn.execute(
        "INSERT INTO recordings (execution_id, call_id, recording_id, upload_id, bucket,"
        " object_key, source, state, ended_at, deadline_at, opened_at, updated_at)"
        " VALUES ('ex-1','call-1','rec-1','up-1','b','calls/2026/rec-1.wav','call','uploaded',"
        " ?,?,?,?)",
        (_iso(NOW),) * 4,
    )
    conn.close()
    yield path


def snapshot() -> dict[str, Any]:
    return {
        "dispatcher_id": "d-1",
        "healthy": True,
        "failed": None,
        "admission": {"open": False, "why_closed": {"sip": HOSTILE}},
        "discovery": {
            "cursor": 17,
            "caught_up": True,
            "caught_up_at": _iso(NOW),
            "pages_applied": 3,
            "pages_rejected": 0,
            "last_error": None,
        },
        "config": {
            "last_success": {"task:task-1": _iso(NOW)},
            "limits": {"tasks": {"task-1": 4}, "tenants": {}, "trunks": {}},
        },
        "outages": {
            "active": [
                {
                    "read": "quota",
                    "key": "tenant-1",
                    "since": _iso(NOW),
                    "failures": 3,
                    "next_retry_at": _iso(NOW),
                    "last_error": HOSTILE,
                }
            ],
            "read_failures": {},
        },
        "cell_identity": {"verified": True, "checked_at": _iso(NOW)},
        "tasks": [
            {
                "task_id": "task-1",
                "tenant_id": "tenant-1",
                "status": "paused",
                "task_revision": 3,
                "barrier": "paused",
                "admission": "closed",
                "consumer": "closed",
            }
        ],
        "outbox": {"pending": 1, "delivered": 2, "blocked_payload_too_large": 0},
        "outbox_blocked": [],
        "outbox_backlog": {"pending": 1, "oldest_pending_age_s": 150.0},
        "calls": {"cell_boot_id": "boot-1", "cell_reachable": True},
        "amqp": {"connected": False, "connections": 2},
        "readiness": {
            "ready": False,
            "causes": [{"cause": "broker_unreachable", "detail": "no AMQP connection"}],
        },
        "last_errors": [],
    }


def client(state: Path, token: str | None = None) -> TestClient:
    async def snap() -> dict[str, Any]:
        return snapshot()

    console = Console(snap, state, token, clock=lambda: NOW)
    app = build_app(snap, lambda: True, routes=console_routes(console))
    return TestClient(app, base_url="http://localhost")


def test_every_panel_renders_from_state_and_status_escaping_everything(state: Path) -> None:
    before = hashlib.sha256(state.read_bytes()).hexdigest()
    with client(state) as http:
        page = http.get("/ui")
        panels = {name: http.get(f"/ui/panels/{name}") for name in ("tasks", "calls", "plumbing")}
        assert http.get("/ui/panels/other").status_code == 404
        assert http.get("/ui/static/console.js").status_code == 200
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store"
    html = page.text
    assert HOSTILE not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert 'data-outcome="answered" data-count="1"' in html
    assert 'data-outcome="busy" data-count="1"' in html
    assert "calls/2026/rec-1.wav" in html and "opted out" in html
    assert "task_concurrency_exhausted 1" in html and "accepted 2" in html
    assert 'data-ready="no"' in html and "broker_unreachable: no AMQP connection" in html
    assert 'data-connected="no"' in html and "boot-1" in html
    assert 'data-reachable="yes"' in html and "oldest 2 min" in html
    assert "Admission closed: sip: &lt;script&gt;" in html
    tasks, calls, plumbing = (panels[n].text for n in ("tasks", "calls", "plumbing"))
    assert "<html" not in tasks and 'data-task="task-1"' in tasks
    assert 'class="barrier">paused<' in tasks
    assert "<svg" in calls and "outcome-chart" in calls
    assert "calls with media figures: 1" in calls  # loss 0.02, jitter 12.5 ms
    assert "0.02 &lt; 0.05: 1" in calls and "10 ms &lt; 20 ms: 1" in calls
    assert "0 s &lt; 5 s: 2" in calls  # 1 s and 2 s long
    assert "quota:tenant-1" in plumbing and HOSTILE not in plumbing
    assert hashlib.sha256(state.read_bytes()).hexdigest() == before  # read-only


@pytest.mark.parametrize("path", ["/ui", "/ui/panels/tasks", "/ui/static/console.css"])
def test_with_a_token_every_console_route_asks_for_it(state: Path, path: str) -> None:
    basic = base64.b64encode(f"ops:{TOKEN}".encode()).decode()
    with client(state, TOKEN) as http:
        refused = http.get(path)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Basic ")
        assert "DISPATCHER_CONSOLE_TOKEN" in refused.text
        assert (
            http.get(path, headers={"Authorization": "Bearer wrong-token-000000"}).status_code
            == 401
        )
        assert http.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert http.get(path, headers={"Authorization": f"Basic {basic}"}).status_code == 200
        assert http.get("/status").status_code == 200  # the JSON endpoints stay as they were
