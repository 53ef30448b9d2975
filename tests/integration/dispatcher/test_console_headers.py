"""Every answer under the console's ``/ui`` (pages, panels, assets, redirects, refusals) forbids
framing (``X-Frame-Options: DENY``, ``frame-ancestors 'none'``) and carries a
Content-Security-Policy; the console's pages carry its own strict one (its own script and
style only). The console changes nothing, so it has nothing to forge: every route refuses
POST, PUT, PATCH and DELETE (405, same headers), and no answer sets a cookie (access is the
token of every request, there is no session). Over a real, migrated SQLite state file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agentcall.dispatcher.console.pages import Console, console_routes
from agentcall.dispatcher.store.db import migrate
from agentcall.dispatcher.web.app import build_app
from tests.integration.dispatcher.test_console_pages import snapshot

pytestmark = pytest.mark.integration
TOKEN = "a-console-token-0123-x9"


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "state.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn)
    conn.close()
    yield path


def _client(state: Path, token: str | None) -> TestClient:
    async def snap() -> dict[str, Any]:
        return snapshot()

    console = Console(snap, state, token)
    app = build_app(snap, lambda: True, routes=console_routes(console))
    return TestClient(app, base_url="http://localhost:9470", follow_redirects=False)


@pytest.mark.parametrize(
    ("path", "token", "status"),
    [
        ("/ui/", None, 308),
        ("/ui/panels/nothing", None, 404),
        ("/ui/static/console.js", None, 200),
        ("/ui/static/console.css", None, 200),
        ("/ui/static/missing.js", None, 404),
        ("/ui/elsewhere", None, 404),
        ("/ui", TOKEN, 401),
        ("/ui/static/console.js", TOKEN, 401),
    ],
)
def test_every_console_answer_forbids_framing(
    state: Path, path: str, token: str | None, status: int
) -> None:
    with _client(state, token) as http:
        answer = http.get(path)
    assert answer.status_code == status
    assert answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_the_console_pages_carry_their_strict_policy_once(state: Path) -> None:
    with _client(state, None) as http:
        page = http.get("/ui")
    assert page.status_code == 200
    policies = page.headers.get_list("content-security-policy")
    assert len(policies) == 1 and "script-src 'self'" in policies[0]
    assert "frame-ancestors 'none'" in policies[0]
    assert page.headers.get_list("x-frame-options") == ["DENY"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", ["/ui", "/ui/", "/ui/panels/live", "/ui/recordings/c-1"])
def test_no_console_route_changes_state(state: Path, method: str, path: str) -> None:
    with _client(state, None) as http:
        answer = http.request(
            method, path, data={"csrf": "x"}, headers={"Origin": "http://attacker.example"}
        )
    assert answer.status_code == 405
    assert answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert "set-cookie" not in answer.headers


@pytest.mark.parametrize("token", [None, TOKEN])
def test_no_console_answer_sets_a_cookie(state: Path, token: str | None) -> None:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with _client(state, token) as http:
        answers = [http.get(path, headers=headers) for path in ("/ui", "/ui/panels/live")]
        answers.append(http.get("/ui", headers={"Authorization": "Bearer wrong-token-0123"}))
    assert [a.status_code for a in answers] == [200, 200, 200 if token is None else 401]
    assert all("set-cookie" not in a.headers for a in answers)
