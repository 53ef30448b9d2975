"""The opaque list cursor (O-LST-1): the keyset position (created_at, id) bound to the
queue and state filter it was issued for, and to the digest of the search filter's other
fields (`agentcall.orbit.domain.search.TaskFilter.digest`) when any is set. A checksum
detects corruption; the cursor is not a security boundary (authorization is checked on every
page)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.ids import is_id
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import format_time, parse_time

MAX_CURSOR_CHARS = 1024
_VERSION = "c1"
_FILTERED = "c2"  # a cursor that also binds the search filter's digest
_CURSOR_CHARS = re.compile(r"[A-Za-z0-9_-]+\Z")


@dataclass(frozen=True, slots=True)
class Position:
    queue_id: str
    state: TaskState | None
    created_at: datetime
    task_id: str
    filters: str = ""  # the search filter's digest, "" for a plain queue/state list


def encode_cursor(position: Position) -> str:
    parts = [
        _FILTERED if position.filters else _VERSION,
        position.queue_id,
        position.state.value if position.state else "",
        format_time(position.created_at),
        position.task_id,
    ]
    if position.filters:
        parts.append(position.filters)
    body = "|".join(parts)
    text = f"{body}|{_check(body)}"
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def decode_cursor(
    cursor: str, queue_id: str, state: TaskState | None, filters: str = ""
) -> Position:
    """Decode and check the binding; any defect is a 400 naming `cursor`."""
    if len(cursor) > MAX_CURSOR_CHARS or not _CURSOR_CHARS.match(cursor):
        raise InvalidArgument("is not a cursor returned by this API", "cursor")
    position = _decode(cursor)
    if position.queue_id != queue_id or position.state != state:
        raise InvalidArgument("was issued for a different queue_id or state filter", "cursor")
    if position.filters != filters:
        raise InvalidArgument("was issued for a different search filter", "cursor")
    return position


def _decode(cursor: str) -> Position:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        body, check = text.rsplit("|", 1)
        version, queue_id, state, created, task_id, *rest = body.split("|")
        filters = rest[0] if version == _FILTERED and len(rest) == 1 and rest[0] else ""
        shape = (version == _VERSION and not rest) or (version == _FILTERED and filters)
        if not shape or check != _check(body) or not (is_id(queue_id) and is_id(task_id)):
            raise ValueError(text)
        when = parse_time(created, "cursor")
        return Position(queue_id, TaskState(state) if state else None, when, task_id, filters)
    except (ValueError, binascii.Error, UnicodeDecodeError, InvalidArgument):
        raise InvalidArgument("is not a cursor returned by this API", "cursor") from None


def _check(body: str) -> str:
    return hashlib.sha256(body.encode("ascii")).hexdigest()[:12]
