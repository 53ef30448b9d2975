"""RFC 3339 time formatting shared by the builders."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
FAR_FUTURE = "2099-12-31T23:59:59Z"


def rfc3339(moment: datetime) -> str:
    """UTC, millisecond precision, ``Z`` suffix."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def canonical_sha256(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def open_all_week() -> dict[str, list[dict[str, str]]]:
    """Weekly windows open 24x7 (``[00:00, 24:00)`` every day)."""
    return {day: [{"start": "00:00", "end": "24:00"}] for day in WEEKDAYS}
