"""Identifiers: 32 lowercase hex characters (128 random bits)."""

from __future__ import annotations

import re
from os import urandom

from agentcall.orbit.domain.errors import InvalidArgument, NotFound

_ID = re.compile(r"[0-9a-f]{32}\Z")


def new_id() -> str:
    """128 bits from the kernel's CSPRNG (what `secrets.token_hex(16)` returns, without its
    three Python calls: several IDs are made per submit)."""
    return urandom(16).hex()


def is_id(text: str) -> bool:
    return _ID.match(text) is not None


def check_id(text: object, field: str) -> str:
    if not isinstance(text, str) or not is_id(text):
        raise InvalidArgument("must be an ID of 32 lowercase hexadecimal characters", field)
    return text


def task_id_from_path(text: str) -> str:
    """A malformed ID in a path names no resource: 404, like a missing one."""
    if not is_id(text):
        raise NotFound("task not found")
    return text
