"""The console's live calls, per-task figures and recording links over a real SQLite state
file (rows as the D writes them) and the local S3: callees masked unless asked for, the
agent's turns from the cell's call list, answer rate and handle time per task, and a
recording link that is a presigned GET made on request (303), read back from the bucket,
and never written to the state file."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from agentcall.dispatcher.cell.adapter import CellAdapter
from agentcall.dispatcher.cell.fake import FakeCell
from agentcall.dispatcher.cell.port import CellCall
from agentcall.dispatcher.console.pages import LINK_EXPIRES_S, Console, console_routes
from agentcall.dispatcher.domain.results import TranscriptSegment
from agentcall.dispatcher.recording.storage import S3Store, StorageConfig
from agentcall.dispatcher.settings import Secret
from agentcall.dispatcher.store.db import migrate
from agentcall.dispatcher.web.app import build_app
from tests.support.ports import free_port
from tests.support.services import s3_settings

pytestmark = pytest.mark.integration
NOW = datetime(2026, 12, 1, 12, 7, 30, tzinfo=UTC)
CALLEE = "+15550000047"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(32))


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _execution(conn: sqlite3.Connection, n: int, task: str, state: str, **at: Any) -> None:
    """One execution row (and its inbox row); ``at``: accepted, dialled, ended, outcome."""
    accepted = at.get("accepted", NOW - timedelta(minutes=2))
    conn.execute(
        "INSERT INTO inbox (command_id, task_id, decision, execution_id, received_at)"
        " VALUES (?, ?, 'accepted', ?, ?)",
        (f"cmd-{n}", task, f"ex-{n}", _iso(accepted)),
    )
    end = None
    if "ended" in at:
        started = at["ended"] - timedelta(seconds=at.get("seconds", 10))
        end = {"started_at": _iso(started), "ended_at": _iso(at["ended"]), "outcome": at["outcome"]}
    dialled = at.get("dialled")
    conn.execute(
        "INSERT INTO executions (execution_id, command_id, call_id, task_id, tenant_id, trunk_id,"
        " state, snapshot_json, call_result_event_id, end_json, accepted_at, dial_started_at,"
        " ended_at, finalized_at, updated_at)"
        " VALUES (?,?,?,?,'tenant-1','trunk-1',?,?,?,?,?,?,?,?,?)",
        (
            f"ex-{n}",
            f"cmd-{n}",
            f"call-{n}",
            task,
            state,
            json.dumps({"callee": at.get("callee", CALLEE)}),
            f"ev-{n}",
            json.dumps(end) if end else None,
            _iso(accepted),
            _iso(dialled) if dialled else None,
            _iso(at["ended"]) if end else None,
            _iso(at["ended"]) if end else None,
            _iso(NOW),
        ),
    )


@pytest.fixture
def key() -> str:
    return f"it-console-{uuid.uuid4().hex[:10]}/call-1.wav"


@pytest.fixture
def state(tmp_path: Path, key: str) -> Iterator[Path]:
    path = tmp_path / "state.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn)
    ended = NOW - timedelta(minutes=5)
    for n, outcome, seconds in [(1, "answered", 30), (2, "answered", 90), (3, "no_answer", 40)]:
        _execution(conn, n, "task-a", "finalized", ended=ended, outcome=outcome, seconds=seconds)
    _execution(conn, 4, "task-a", "finalized", ended=ended, outcome="rejected", seconds=0)
    _execution(conn, 5, "task-b", "finalized", ended=ended, outcome="busy", seconds=3)
    _execution(conn, 6, "task-old", "finalized", ended=NOW - timedelta(hours=7), outcome="answered")
    _execution(conn, 10, "task-a", "in_call", dialled=NOW - timedelta(seconds=75))
    _execution(conn, 11, "task-b", "ringing", dialled=NOW - timedelta(seconds=4), callee="+1999")
    _execution(conn, 12, "task-b", "accepted", accepted=NOW - timedelta(seconds=1))
    conn.execute(
        "INSERT INTO recordings (execution_id, call_id, recording_id, upload_id, bucket,"
        " object_key, source, state, ended_at, deadline_at, opened_at, updated_at)"
        " VALUES ('ex-1','call-1','rec-1','up-1',?,?,'call','uploaded',?,?,?,?)",
        (s3_settings().bucket, key, *(_iso(NOW),) * 4),
    )
    conn.execute(
        "INSERT INTO recordings (execution_id, call_id, recording_id, upload_id, bucket,"
        " object_key, source, state, ended_at, deadline_at, opened_at, updated_at)"
        " VALUES ('ex-2','call-2','rec-2','up-2',?,'k/call-2.wav','call','authorized',?,?,?,?)",
        (s3_settings().bucket, *(_iso(NOW),) * 4),
    )
    conn.close()
    yield path


def snapshot() -> dict[str, Any]:
    return {
        "dispatcher_id": "d-1",
        "healthy": True,
        "failed": None,
        "admission": {"open": True, "why_closed": {}},
        "discovery": {"cursor": 1, "caught_up": True, "caught_up_at": _iso(NOW)},
        "config": {"last_success": {}, "limits": {}},
        "outages": {"active": [], "read_failures": {}},
        "cell_identity": {"verified": True, "checked_at": _iso(NOW)},
        "tasks": [],
        "outbox": {"pending": 0, "delivered": 0, "blocked_payload_too_large": 0},
        "outbox_blocked": [],
        "outbox_backlog": {"pending": 0},
        "calls": {"cell_boot_id": "boot-1", "cell_reachable": True},
        "amqp": {"connected": True, "connections": 1},
        "readiness": {"ready": True, "causes": []},
        "last_errors": [],
    }


def _segment(turn: str, role: str) -> TranscriptSegment:
    return TranscriptSegment(turn, f"{turn}-{role}", role, "hello", 0, 1)


def cell() -> FakeCell:
    turns = [_segment("t1", "agent"), _segment("t2", "user"), _segment("t3", "agent")]
    call = CellCall(
        "call-10", "boot-1", "in_call", NOW, None, None, None, tuple(turns), False, True, None
    )
    return FakeCell(calls=[call])


def storage() -> S3Store:
    s3 = s3_settings()
    config = StorageConfig(
        bucket=s3.bucket,
        region=s3.region,
        endpoint=s3.endpoint,
        access_key=s3.access_key,
        secret_key=Secret(s3.secret_key),
    )
    return S3Store(config, threads=1)


def client(state: Path, links: S3Store | None, live_calls: Any = None) -> TestClient:
    async def snap() -> dict[str, Any]:
        return snapshot()

    calls = live_calls or cell().list_calls
    console = Console(snap, state, None, clock=lambda: NOW, live_calls=calls, links=links)
    app = build_app(snap, lambda: True, routes=console_routes(console))
    return TestClient(app, base_url="http://localhost")


def test_live_calls_show_state_masked_callee_duration_and_agent_turns(state: Path) -> None:
    with client(state, None) as http:
        page = http.get("/ui")
        masked = http.get("/ui/panels/live")
        shown = http.get("/ui/panels/live?callees=shown")
    assert page.status_code == masked.status_code == shown.status_code == 200
    assert 'id="live"' in page.text and 'data-panel="/ui/panels/live"' in page.text
    html = masked.text
    assert CALLEE not in html and "+••••••••047" in html
    assert "+1999" not in html and "+••••" in html  # too short to show any digit
    rows = html.split("<tr data-call=")[1:]
    assert [r.split('"')[1] for r in rows] == ["call-10", "call-11", "call-12"]
    in_call, ringing, accepted = rows
    assert 'data-state="in_call"' in in_call and '"num duration"' in in_call
    assert ">75.0 s<" in in_call and 'class="num turns">2<' in in_call
    assert ">4.0 s<" in ringing and 'class="num turns">0<' in ringing
    assert ">1.0 s<" in accepted
    assert "3 calls holding capacity" in html
    assert CALLEE in shown.text and "+1999" in shown.text
    assert "/ui?callees=shown" in html and 'href="/ui#live"' in shown.text


def test_per_task_answer_rate_and_handle_time_of_the_last_six_hours(state: Path) -> None:
    with client(state, None) as http:
        calls = http.get("/ui/panels/calls").text
    rows = {r.split('"')[1]: r for r in calls.split("<tr data-task=")[1:]}
    assert set(rows) == {"task-a", "task-b"}  # task-old ended 7 h ago
    a, b = rows["task-a"], rows["task-b"]
    # task-a: 4 calls, 3 dialled (one rejected), 2 answered (30 s and 90 s)
    assert 'data-rate="0.6667"' in a and ">66.7 %<" in a
    assert 'data-seconds="60.0"' in a and ">60.0 s<" in a
    assert 'data-rate="0.0000"' in b and 'data-seconds=""' in b


@pytest.mark.s3
def test_a_recording_link_is_a_presigned_get_made_on_request_never_stored(
    state: Path, key: str, s3_client: Any
) -> None:
    s3_client.put_object(Bucket=s3_settings().bucket, Key=key, Body=WAV)
    with client(state, storage()) as http:
        calls = http.get("/ui/panels/calls").text
        link = http.get("/ui/recordings/call-1", follow_redirects=False)
        not_uploaded = http.get("/ui/recordings/call-2", follow_redirects=False)
        unknown = http.get("/ui/recordings/" + "x" * 300, follow_redirects=False)
    assert calls.count('class="recording-link"') == 1
    assert 'href="/ui/recordings/call-1"' in calls and "/ui/recordings/call-2" not in calls
    assert link.status_code == 303
    assert link.headers["cache-control"] == "no-store"
    assert link.headers["referrer-policy"] == "no-referrer"
    url = link.headers["location"]
    assert url.startswith(s3_settings().endpoint) and "X-Amz-Signature=" in url
    assert f"X-Amz-Expires={LINK_EXPIRES_S}" in url
    assert httpx.get(url).content == WAV
    assert not_uploaded.status_code == 404 and unknown.status_code == 404
    signature = url.split("X-Amz-Signature=")[1].split("&")[0]
    for stored in state.parent.glob("state.sqlite*"):
        assert signature.encode() not in stored.read_bytes()


def test_without_a_bucket_there_is_no_recording_link(state: Path) -> None:
    with client(state, None) as http:
        calls = http.get("/ui/panels/calls").text
        link = http.get("/ui/recordings/call-1", follow_redirects=False)
    assert "recording-link" not in calls
    assert link.status_code == 404 and "DISPATCHER_S3_BUCKET" in link.text


def test_a_cell_that_does_not_answer_leaves_the_live_calls_with_unknown_turns(
    state: Path,
) -> None:
    nobody = CellAdapter(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    with client(state, None, nobody.list_calls) as http:
        live = http.get("/ui/panels/live")
    assert live.status_code == 200
    assert live.text.count('class="num turns">—<') == 3
