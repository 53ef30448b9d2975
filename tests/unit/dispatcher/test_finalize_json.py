"""The stored end of a call is what it always was (D-RES-1: the call.result is built from it)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.dispatcher.domain.results import CallEnd, TranscriptSegment
from agentcall.dispatcher.finalize.result import _end_json, end_from_json

START = datetime(2026, 9, 21, 2, 0, tzinfo=UTC)
SEGMENTS = (
    TranscriptSegment("t1", "s1", "agent", "Hello, é ☎", 0, 900),
    TranscriptSegment("t2", "s2", "callee", "Stop calling me.", 1000, 2400),
)
ENDS = [
    CallEnd(START, START + timedelta(seconds=3), "answered", None, SEGMENTS, True),
    CallEnd(START, START, "no_answer", "no_answer"),
    CallEnd(START, START + timedelta(milliseconds=1), "failed", "cell_has_no_call", (), False),
]


def reference(end: CallEnd) -> dict[str, object]:
    """The former implementation: asdict with ISO times."""
    body = asdict(end)
    body["started_at"] = end.started_at.isoformat()
    body["ended_at"] = end.ended_at.isoformat()
    return body


@pytest.mark.parametrize("end", ENDS, ids=["transcript", "no_answer", "failed"])
def test_end_json_same_text_as_asdict_d_res_1(end: CallEnd) -> None:
    def text(body: object) -> str:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)

    assert text(_end_json(end)) == text(reference(end))
    assert end_from_json(json.loads(text(_end_json(end)))) == end
