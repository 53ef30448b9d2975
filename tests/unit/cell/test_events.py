"""The event log: per-boot sequence numbers, resume after a seq, pruning of acked calls."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentcall.cell.domain.events import EventLog, iso
from agentcall.cell.domain.model import EventType

AT = datetime(2026, 9, 21, 8, 0, tzinfo=UTC)


def _log(*calls: str) -> EventLog:
    log = EventLog("boot-1")
    for call_id in calls:
        log.append(EventType.DIALING, call_id, AT, {"n": call_id})
    return log


def test_sequence_numbers_start_at_one_and_increase_by_one() -> None:
    log = _log("a", "b", "a", "c")
    assert [e.seq for e in log.since(0)] == [1, 2, 3, 4]
    assert log.last_seq == 4
    assert all(e.boot_id == "boot-1" for e in log.since(0))


@pytest.mark.parametrize(
    ("after", "limit", "seqs"),
    [
        (0, None, [1, 2, 3, 4, 5]),
        (2, None, [3, 4, 5]),
        (5, None, []),
        (99, None, []),
        (0, 2, [1, 2]),
        (3, 1, [4]),
    ],
)
def test_resume_after_a_sequence_number(after: int, limit: int | None, seqs: list[int]) -> None:
    assert [e.seq for e in _log(*"abcde").since(after, limit)] == seqs


def test_pruning_drops_only_the_acked_call_and_keeps_numbering() -> None:
    log = _log("a", "b", "a", "c")
    assert log.prune("a") == 2
    assert [(e.seq, e.call_id) for e in log.since(0)] == [(2, "b"), (4, "c")]
    assert log.prune("a") == 0  # idempotent
    event = log.append(EventType.RINGING, "b", AT, {})
    assert event.seq == 5  # never reused
    assert len(log) == 3


def test_no_events_after_a_call_was_acknowledged() -> None:
    log = _log("a")
    log.prune("a")
    with pytest.raises(ValueError, match="acknowledged"):
        log.append(EventType.ENDED, "a", AT, {})


def test_compaction_keeps_order_and_resume() -> None:
    log = _log(*[f"c{i}" for i in range(10)])
    for i in range(8):
        log.prune(f"c{i}")
    assert [e.seq for e in log.since(0)] == [9, 10]
    assert [e.seq for e in log.since(9)] == [10]
    assert log.for_call("c9")[0].seq == 10


def test_on_append_sees_every_event_in_order() -> None:
    seen: list[int] = []
    log = EventLog("b", on_append=lambda e: seen.append(e.seq))
    for _ in range(3):
        log.append(EventType.DIALING, "x", AT, {})
    assert seen == [1, 2, 3]


def test_wire_form() -> None:
    event = _log("a").since(0)[0]
    assert event.to_json() == {
        "seq": 1,
        "boot_id": "boot-1",
        "type": "call.dialing",
        "call_id": "a",
        "at": "2026-09-21T08:00:00.000Z",
        "data": {"n": "a"},
    }
    assert iso(AT) == "2026-09-21T08:00:00.000Z"
