"""The opaque cursor of the schedule listing: the last schedule id of a page, bound to the
queue and state filter it was issued for, with a checksum against corruption (not a security
boundary: authorization is checked on every page)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.ids import is_id

MAX_CURSOR_CHARS = 256
_VERSION = "s1"
_CHARS = re.compile(r"[A-Za-z0-9_-]+\Z")


def encode_schedule_cursor(queue_id: str | None, state: str | None, after_id: str) -> str:
    body = "|".join((_VERSION, queue_id or "", state or "", after_id))
    text = f"{body}|{_check(body)}"
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def decode_schedule_cursor(cursor: str, queue_id: str | None, state: str | None) -> str:
    """The id the page starts after; any defect or another filter is a 400 naming `cursor`."""
    refused = InvalidArgument("is not a cursor returned by this API", "cursor")
    if len(cursor) > MAX_CURSOR_CHARS or not _CHARS.match(cursor):
        raise refused
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        body, check = text.rsplit("|", 1)
        version, queue, wanted, after_id = body.split("|")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise refused from None
    if version != _VERSION or check != _check(body) or not is_id(after_id):
        raise refused
    if (queue or None, wanted or None) != (queue_id, state):
        raise InvalidArgument("was issued for a different queue_id or state filter", "cursor")
    return after_id


def _check(body: str) -> str:
    return hashlib.sha256(body.encode("ascii")).hexdigest()[:12]
