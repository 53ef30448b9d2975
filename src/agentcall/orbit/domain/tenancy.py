"""Rules for namespaces, queues and token issuance (operator input, checked at the CLI)."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import NAME_PATTERN

MAX_NAME_CHARS = 128


def check_name(text: str, field: str) -> str:
    if not 1 <= len(text) <= MAX_NAME_CHARS or not NAME_PATTERN.match(text):
        raise InvalidArgument(
            f"must be 1-{MAX_NAME_CHARS} characters: an ASCII letter or digit, then letters, "
            "digits and _ . : -",
            field,
        )
    return text


def check_expiry(expires_at: datetime | None, now: datetime) -> datetime | None:
    if expires_at is not None and expires_at <= now:
        raise InvalidArgument("must be in the future", "expires_at")
    return expires_at


def check_scopes(queue_ids: frozenset[str], namespace_queues: frozenset[str]) -> None:
    if not queue_ids:
        raise InvalidArgument("at least one queue is required", "queue_id")
    foreign = sorted(queue_ids - namespace_queues)
    if foreign:
        raise InvalidArgument(f"not a queue of this namespace: {', '.join(foreign)}", "queue_id")
