"""Helpers of the batch endpoints: request chunks and per-item results."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentcall.cell.client._errors import (
    BY_CODE,
    UNAVAILABLE_BY_CODE,
    CellClientError,
    CellProtocolError,
    CellRequestError,
    CellUnavailableError,
)
from agentcall.cell.client._models import CallInfo

MAX_ITEMS = 256  # the cell's limit per batch request
MAX_BYTES = 900_000  # below the cell's 1 MiB body limit


def error_of(status: int, body: Mapping[str, Any], reason: str) -> CellClientError:
    """The client error for a status and an ``{"code", "message", "field"?}`` body."""
    code = str(body.get("code") or f"http_{status}")
    message = str(body.get("message") or reason)
    if status == 503 or code in UNAVAILABLE_BY_CODE:
        return UNAVAILABLE_BY_CODE.get(code, CellUnavailableError)(message)
    cls = BY_CODE.get(code, CellRequestError)
    field = body.get("field")
    return cls(message, status=status, code=code, field=field if isinstance(field, str) else None)


def chunks(key: str, items: Sequence[Any]) -> Iterator[tuple[int, bytes]]:
    """``(count, body)`` requests of at most MAX_ITEMS items and about MAX_BYTES each."""
    encoded = [json.dumps(item, separators=(",", ":")).encode() for item in items]
    start = 0
    while start < len(encoded):
        end, size = start, 0
        while end < len(encoded) and end - start < MAX_ITEMS:
            if end > start and size + len(encoded[end]) > MAX_BYTES:
                break
            size += len(encoded[end]) + 1
            end += 1
        body = b'{"' + key.encode() + b'":[' + b",".join(encoded[start:end]) + b"]}"
        yield end - start, body
        start = end


def results(answer: Any, count: int) -> list[Mapping[str, Any]]:
    items = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(items, list) or len(items) != count:
        raise CellProtocolError(f"the batch answer does not hold {count} results")
    if not all(isinstance(item, dict) for item in items):
        raise CellProtocolError("a batch result is not an object")
    return items


def item_error(item: Mapping[str, Any]) -> CellClientError | None:
    error = item.get("error")
    if error is None:
        return None
    status = item.get("status")
    if not isinstance(error, dict) or not isinstance(status, int):
        return CellProtocolError("a batch result has a malformed error")
    return error_of(status, error, f"HTTP {status}")


def originated(item: Mapping[str, Any]) -> CallInfo | CellClientError:
    error = item_error(item)
    if error is not None:
        return error
    try:
        return CallInfo.from_json(item.get("call") or {})
    except CellProtocolError as exc:
        return exc
