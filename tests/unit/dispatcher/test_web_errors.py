"""The D's HTTP answers a failure as a 500 in the JSON error shape, reported (logged and
counted by the assembly), never a bare text page."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.testclient import TestClient

from agentcall.dispatcher.web.app import build_app


def test_a_failing_status_answers_json_and_is_reported() -> None:
    reported: list[tuple[str, str]] = []

    async def snapshot() -> dict[str, Any]:
        raise RuntimeError("database is locked")

    def on_error(request: Request, exc: Exception) -> None:
        reported.append((request.url.path, type(exc).__name__))

    client = TestClient(build_app(snapshot, lambda: True, on_error), raise_server_exceptions=False)
    answer = client.get("/status")
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["code"] == "internal_error"
    assert reported == [("/status", "RuntimeError")]
