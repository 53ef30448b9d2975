"""The cell port's events are typed once, in the adapter: each event type's detail is read
from the wire's ``data`` there, and hostile or partial data gives the reading the D has
always made of it (absent is failed / unknown / no recording), never an exception."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agentcall.dispatcher.cell.adapter import event_detail
from agentcall.dispatcher.cell.port import CallEnded, CellUpload
from agentcall.dispatcher.domain.recording import Media

pytestmark = pytest.mark.unit

AT = "2026-09-21T02:00:00.000Z"
WHEN = datetime(2026, 9, 21, 2, 0, tzinfo=UTC)
SHA = "a" * 64


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {
                "outcome": "answered",
                "reason_code": None,
                "started_at": AT,
                "ended_at": AT,
                "opt_out": True,
                "recording_expected": True,
                "transcript_turns": 3,
                "quality": {"rtp": {}},
            },
            CallEnded("answered", None, WHEN, WHEN, True, True, 3, {"rtp": {}}),
        ),
        ({}, CallEnded("failed", None, None, None, False, False, 0, None)),
        (
            {"outcome": "busy", "started_at": "yesterday", "transcript_turns": "2", "quality": 7},
            CallEnded("busy", None, None, None, False, False, 0, None),
        ),
    ],
)
def test_a_call_ended_event_reads_as_call_ended(data: dict[str, Any], expected: CallEnded) -> None:
    assert event_detail("call.ended", data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"size_bytes": 16044, "sha256": SHA, "duration_ms": 1000, "partial": True},
            Media("wav", 1, 8000, 1000, 16044, SHA, True),
        ),
        ({"sha256": SHA}, None),  # no size: nothing to verify an upload against
        ({"size_bytes": 10}, None),  # no digest
        ({"size_bytes": 10, "sha256": ""}, None),
    ],
)
def test_a_recording_ready_event_reads_as_its_media(
    data: dict[str, Any], expected: Media | None
) -> None:
    assert event_detail("call.recording_ready", data) == expected


def test_an_upload_event_reads_as_the_upload_report() -> None:
    data = {
        "call_id": "c1",
        "upload_id": "u1",
        "status": "expired",
        "error_code": None,
        "put_started": False,
        "expires_at": AT,
        "size_bytes": 10,
        "sha256": SHA,
        "message": None,
        "renewal_requested": True,
    }
    expected = CellUpload("c1", "u1", "expired", None, False, WHEN, 10, SHA, None, True)
    assert event_detail("call.upload", data) == expected
    assert event_detail("call.upload", {"status": "uploaded"}) is None  # no upload_id
    odd = event_detail("call.upload", {"upload_id": "u1", "expires_at": 5, "message": 3})
    assert isinstance(odd, CellUpload) and (odd.expires_at, odd.message) == (None, None)


@pytest.mark.parametrize(
    "type_", ["call.dialing", "call.ringing", "call.answered", "call.transcript", "cell.restarted"]
)
def test_the_other_events_carry_no_detail(type_: str) -> None:
    assert event_detail(type_, {"outcome": "answered", "size_bytes": 1, "sha256": SHA}) is None
