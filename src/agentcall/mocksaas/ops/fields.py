"""Strict readers of admin request fields: each error names the field (fail closed)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.mocksaas.errors import InvalidRequest

IDEMPOTENCY_HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class Reply:
    """An answer whose HTTP status depends on the outcome (e.g. 202: stored, not yet sent)."""

    body: dict[str, Any]
    status: int


def idempotency_key(value: str | None) -> str | None:
    """The ``Idempotency-Key`` header: 1..255 visible ASCII characters, or absent."""
    if value is None:
        return None
    if not 1 <= len(value) <= 255 or not all("!" <= c <= "~" for c in value):
        raise InvalidRequest(IDEMPOTENCY_HEADER, "must be 1..255 visible ASCII characters")
    return value


def only(body: dict[str, Any], allowed: Collection[str]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise InvalidRequest(unknown[0], f"unknown field (allowed: {', '.join(sorted(allowed))})")


def as_object(body: Any, field: str = "body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidRequest(field, "must be a JSON object")
    return body


def opt_int(body: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InvalidRequest(name, f"must be an integer {lo}..{hi}")
    return value


def get_int(body: dict[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = opt_int(body, name, lo, hi)
    return default if value is None else value


def opt_str(body: dict[str, Any], name: str, max_len: int = 256) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= max_len:
        raise InvalidRequest(name, f"must be a non-empty string of at most {max_len} characters")
    return value


def req_str(body: dict[str, Any], name: str, max_len: int = 256) -> str:
    value = opt_str(body, name, max_len)
    if value is None:
        raise InvalidRequest(name, "is required")
    return value


def opt_bool(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise InvalidRequest(name, "must be true or false")
    return value


def opt_str_list(
    body: dict[str, Any], name: str, max_items: int = 100_000
) -> tuple[str, ...] | None:
    value = body.get(name)
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) > max_items
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise InvalidRequest(name, f"must be a list of at most {max_items} non-empty strings")
    return tuple(value)


def opt_object(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is None:
        return None
    return as_object(value, name)


def opt_time(body: dict[str, Any], name: str) -> datetime | None:
    value = opt_str(body, name, 64)
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequest(name, "must be an RFC 3339 date-time") from exc
    if moment.tzinfo is None:
        raise InvalidRequest(name, "must carry a UTC offset")
    return moment


def choice(body: dict[str, Any], name: str, options: Collection[str], default: str | None) -> str:
    value = body.get(name, default)
    if value not in options:
        raise InvalidRequest(name, f"must be one of {', '.join(sorted(options))}")
    assert isinstance(value, str)
    return value
