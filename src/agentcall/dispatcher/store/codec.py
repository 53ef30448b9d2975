"""Encoding helpers shared by the store modules."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def from_iso(text: str) -> datetime:
    return datetime.fromisoformat(text)


def dumps(body: Any) -> bytes:
    """Compact UTF-8 JSON: the exact bytes that are stored, hashed and published."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sha256_hex(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
