"""The W3C `traceparent` header, read and written without OpenTelemetry (pure): version 00,
a 32-hex trace id and a 16-hex parent id that are not all zeros, and the flags. A value that
does not follow it is ignored, as the W3C Trace Context recommendation says: the span it
would have continued starts a new trace instead."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LENGTH = 55  # "00-" + 32 + "-" + 16 + "-" + 2: the width of tasks.trace_parent
_FORMAT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


@dataclass(frozen=True, slots=True)
class TraceParent:
    trace_id: int
    span_id: int
    flags: int

    @property
    def sampled(self) -> bool:
        return bool(self.flags & 1)

    def text(self) -> str:
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{self.flags:02x}"


def parse(text: str | None) -> TraceParent | None:
    """The trace parent `text` names, or None when it is absent or not a valid version-00
    `traceparent` (upper-case hex, all-zero ids, extra characters)."""
    if text is None or len(text) != MAX_LENGTH:
        return None
    match = _FORMAT.fullmatch(text)
    if match is None:
        return None
    trace_id, span_id = int(match[1], 16), int(match[2], 16)
    if trace_id == 0 or span_id == 0:
        return None
    return TraceParent(trace_id, span_id, int(match[3], 16))
