"""The task search filter (docs/orbit/search.md): what `GET /v1/tasks` narrows a
queue's list by, and what a bulk operation acts on. One parser reads it from the query string
and from a JSON object (`{"queue_id": ..., "handler": ...}`), so both are checked alike.

Times: `created_from`/`completed_from` are inclusive, `created_before`/`completed_before`
exclusive. A business key prefix is matched as a range of code points (the same on MariaDB's
binary collation and SQLite), never with LIKE."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from datetime import datetime

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import NAME_PATTERN, ObjectReader
from agentcall.orbit.domain.ids import check_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import MAX_BUSINESS_KEY_CHARS
from agentcall.orbit.domain.times import format_time

FILTER_FIELDS = frozenset(
    {
        "queue_id",
        "state",
        "handler",
        "handler_version",
        "business_key",
        "business_key_prefix",
        "error_code",
        "created_from",
        "created_before",
        "completed_from",
        "completed_before",
    }
)
_NAMES = {"handler": 128, "handler_version": 64, "error_code": 32}
_MAX_CODE_POINT = 0x10FFFF


@dataclass(frozen=True, slots=True)
class TaskFilter:
    queue_id: str
    state: TaskState | None = None
    handler: str | None = None
    handler_version: str | None = None
    business_key: str | None = None
    business_key_prefix: str | None = None
    error_code: str | None = None
    created_from: datetime | None = None
    created_before: datetime | None = None
    completed_from: datetime | None = None
    completed_before: datetime | None = None

    @property
    def narrowed(self) -> bool:
        """Whether anything besides the queue is asked for (a bulk operation needs it)."""
        return any(getattr(self, f.name) is not None for f in fields(self)[1:])

    def digest(self) -> str:
        """What the list cursor binds beyond (queue_id, state): "" when nothing else is set,
        so the cursors of a plain list stay as they were."""
        extra = filter_json(self)
        extra.pop("queue_id")
        extra.pop("state", None)
        if not extra:
            return ""
        text = "&".join(f"{k}={extra[k]}" for k in sorted(extra))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def parse_filter(value: JsonValue, prefix: str = "") -> TaskFilter:
    """A filter from a JSON object of strings (the query string's parameters are one)."""
    reader = ObjectReader(value, FILTER_FIELDS, prefix)
    found = TaskFilter(
        queue_id=check_id(reader.raw("queue_id"), reader.name("queue_id")),
        state=_state(reader),
        handler=_name(reader, "handler"),
        handler_version=_name(reader, "handler_version"),
        business_key=_key(reader, "business_key"),
        business_key_prefix=_key(reader, "business_key_prefix"),
        error_code=_name(reader, "error_code"),
        created_from=reader.time("created_from"),
        created_before=reader.time("created_before"),
        completed_from=reader.time("completed_from"),
        completed_before=reader.time("completed_before"),
    )
    _check_combination(found, reader)
    return found


def filter_json(where: TaskFilter) -> dict[str, JsonValue]:
    """The filter as the JSON object `parse_filter` reads (only the fields that are set)."""
    out: dict[str, JsonValue] = {}
    for f in fields(where):
        value = getattr(where, f.name)
        if value is None:
            continue
        out[f.name] = format_time(value) if isinstance(value, datetime) else str(value)
    return out


def prefix_end(prefix: str) -> str | None:
    """The least string above every string starting with `prefix` (None: no bound)."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if 0xD800 <= last <= 0xDFFF:
            last = 0xE000
        if last <= _MAX_CODE_POINT:
            return "".join(chars) + chr(last)
    return None


def _state(reader: ObjectReader) -> TaskState | None:
    text = reader.raw("state")
    if text is None:
        return None
    if not isinstance(text, str) or text not in TaskState.__members__:
        raise InvalidArgument(f"must be one of {', '.join(TaskState)}", reader.name("state"))
    return TaskState(text)


def _name(reader: ObjectReader, key: str) -> str | None:
    value = reader.string(key, required=False, max_chars=_NAMES[key])
    if value is not None and not NAME_PATTERN.match(value):
        raise InvalidArgument(
            "must start with an ASCII letter or digit and contain only letters, digits and _ . : -",
            reader.name(key),
        )
    return value


def _key(reader: ObjectReader, key: str) -> str | None:
    value = reader.string(key, required=False, max_chars=MAX_BUSINESS_KEY_CHARS)
    if value is not None and any(ch in value for ch in "\x00\r\n"):
        raise InvalidArgument("must not contain NUL or line breaks", reader.name(key))
    return value


def _check_combination(where: TaskFilter, reader: ObjectReader) -> None:
    if where.handler_version is not None and where.handler is None:
        raise InvalidArgument("needs handler (a version belongs to one handler)", "handler_version")
    if where.business_key is not None and where.business_key_prefix is not None:
        raise InvalidArgument("give business_key or business_key_prefix, not both", "business_key")
    for low, high in (
        ("created_from", "created_before"),
        ("completed_from", "completed_before"),
    ):
        start, end = getattr(where, low), getattr(where, high)
        if start is not None and end is not None and start >= end:
            raise InvalidArgument(f"must be later than {low}", reader.name(high))
