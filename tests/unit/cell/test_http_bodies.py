"""The cell's HTTP refuses a body it cannot read as 400 naming the body, never a 500."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request

from agentcall.cell.domain.errors import InvalidRequestError
from agentcall.cell.server.http import read_json

BAD = [
    ("5,000 nested [", b"[" * 5000 + b"]" * 5000),
    ("an integer of 5,000 digits", b"1" * 5000),
    ("invalid UTF-8", b'{"a": "\xff"}'),
    ("truncated", b'{"a": '),
]


def request_with(body: bytes) -> Request:
    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    return Request({"type": "http", "method": "POST", "headers": []}, receive)


@pytest.mark.parametrize(("name", "body"), BAD, ids=[b[0] for b in BAD])
def test_unreadable_body_is_an_invalid_request(name: str, body: bytes) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        asyncio.run(read_json(request_with(body)))
    assert refused.value.field == "body"
