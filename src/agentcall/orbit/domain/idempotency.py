"""Idempotency keys and replay decisions (O-SUB-1, O-CAN-1, O-NOTE-6).

A key is 1-128 printable ASCII characters without spaces, scoped to namespace + operation
(+ task ID for cancel). A stored record is replayed when the digest matches and refused with
IDEMPOTENCY_CONFLICT otherwise. Records are kept at least `RETENTION`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import IdempotencyConflict, InvalidArgument

RETENTION = timedelta(days=90)
MAX_KEY_CHARS = 128
_KEY = re.compile(r"[\x21-\x7e]{1,128}\Z")


def check_key(key: str | None) -> str:
    if key is None:
        raise InvalidArgument("header is required for writes", "Idempotency-Key")
    if not _KEY.match(key):
        raise InvalidArgument(
            "must be 1-128 printable ASCII characters without spaces", "Idempotency-Key"
        )
    return key


@dataclass(frozen=True, slots=True)
class Scope:
    namespace_id: str
    operation: str
    target: str  # "" for submit, the task ID for cancel
    key: str


@dataclass(frozen=True, slots=True)
class StoredReceipt:
    digest: Digest
    status: int
    receipt_text: str  # the task object JSON of the first response


def check_replay(stored: StoredReceipt, digest: Digest) -> StoredReceipt:
    """The stored receipt when `digest` matches it, else IdempotencyConflict."""
    if stored.digest != digest:
        raise IdempotencyConflict("idempotency key was used with different content")
    return stored
