"""Assertions about the wire format shared by the API suite."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

ID = re.compile(r"[0-9a-f]{32}")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


def ok(response: httpx.Response, status: int = 200) -> Any:
    """O-API-3: `{"request_id","data"}` with the same X-Request-ID; returns data."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"request_id", "data"}
    assert ID.fullmatch(body["request_id"])
    assert response.headers["x-request-id"] == body["request_id"]
    assert response.headers["content-type"].startswith("application/json")
    return body["data"]


def error(response: httpx.Response, status: int, code: str) -> str:
    """O-ERR-1: `{"request_id","error":{code,message}}`; returns the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"request_id", "error"}
    assert ID.fullmatch(body["request_id"])
    assert response.headers["x-request-id"] == body["request_id"]
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code, body
    assert body["error"]["message"]
    return str(body["error"]["message"])


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
