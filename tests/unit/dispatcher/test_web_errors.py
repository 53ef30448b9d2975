"""The D's HTTP answers a failure as a 500 in the JSON error shape, reported (logged and
counted by the assembly), never a bare text page."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.requests import Request

from agentcall.dispatcher.web.app import build_app


async def test_a_failing_status_answers_json_and_is_reported() -> None:
    reported: list[tuple[str, str]] = []

    async def snapshot() -> dict[str, Any]:
        raise RuntimeError("database is locked")

    def on_error(request: Request, exc: Exception) -> None:
        reported.append((request.url.path, type(exc).__name__))

    app = build_app(snapshot, lambda: True, on_error)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        answer = await client.get("/status")
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["code"] == "internal_error"
    assert reported == [("/status", "RuntimeError")]
