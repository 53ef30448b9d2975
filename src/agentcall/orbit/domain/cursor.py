"""The opaque list cursor (O-LST-1): the keyset position (created_at, id) bound to the
queue and state filter it was issued for. A checksum detects corruption; the cursor is not a
security boundary (authorization is checked on every page)."""

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
_CURSOR_CHARS = re.compile(r"[A-Za-z0-9_-]+\Z")


@dataclass(frozen=True, slots=True)
class Position:
    queue_id: str
    state: TaskState | None
    created_at: datetime
    task_id: str


def encode_cursor(position: Position) -> str:
    body = "|".join(
        (
            _VERSION,
            position.queue_id,
            position.state.value if position.state else "",
            format_time(position.created_at),
            position.task_id,
        )
    )
    text = f"{body}|{_check(body)}"
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, queue_id: str, state: TaskState | None) -> Position:
    """Decode and check the binding; any defect is a 400 naming `cursor`."""
    if len(cursor) > MAX_CURSOR_CHARS or not _CURSOR_CHARS.match(cursor):
        raise InvalidArgument("is not a cursor returned by this API", "cursor")
    position = _decode(cursor)
    if position.queue_id != queue_id or position.state != state:
        raise InvalidArgument("was issued for a different queue_id or state filter", "cursor")
    return position


def _decode(cursor: str) -> Position:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        version, queue_id, state, created, task_id, check = text.split("|")
        body = text.rsplit("|", 1)[0]
        if version != _VERSION or check != _check(body) or not (is_id(queue_id) and is_id(task_id)):
            raise ValueError(text)
        return Position(
            queue_id, TaskState(state) if state else None, parse_time(created, "cursor"), task_id
        )
    except (ValueError, binascii.Error, UnicodeDecodeError, InvalidArgument):
        raise InvalidArgument("is not a cursor returned by this API", "cursor") from None


def _check(body: str) -> str:
    return hashlib.sha256(body.encode("ascii")).hexdigest()[:12]
