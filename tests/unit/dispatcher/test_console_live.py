"""The console's live-calls panel and per-task figures (pure): callees masked, duration and
agent turns of a live call, answer rate and average handle time per task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.dispatcher.cell.port import CellCall
from agentcall.dispatcher.console import live
from agentcall.dispatcher.domain.results import TranscriptSegment
from agentcall.dispatcher.store.console import Live

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 1, 12, 7, 30, tzinfo=UTC)
S = timedelta(seconds=1)


@pytest.mark.parametrize(
    ("callee", "shown"),
    [
        ("+15550000047", "+••••••••047"),
        ("15550000047", "••••••••047"),
        ("sip:alice@example.com", "••••••••••••••••••com"),
        ("1234567", "••••567"),
        ("123456", "••••••"),  # too short to show any part of it
        ("+12", "+••"),
        ("", ""),
        ("+", "+"),
    ],
)
def test_a_callee_is_masked_but_its_last_three_characters(callee: str, shown: str) -> None:
    assert live.mask(callee) == shown
    assert len(live.mask(callee)) == len(callee)


def _segment(turn: str, role: str, n: int) -> TranscriptSegment:
    return TranscriptSegment(turn, f"{turn}-{n}", role, "text", n, n + 1)


def _cell_call(call_id: str, *segments: TranscriptSegment) -> CellCall:
    return CellCall(
        call_id, "boot-1", "in_call", NOW, None, None, None, tuple(segments), False, False, None
    )


@pytest.mark.parametrize(
    ("calls", "turns"),
    [
        ([], {}),
        ([_cell_call("c1")], {"c1": 0}),
        ([_cell_call("c1", _segment("t1", "user", 0))], {"c1": 0}),
        (
            [
                _cell_call(
                    "c1",
                    _segment("t1", "agent", 0),
                    _segment("t1", "agent", 1),  # two segments of one turn
                    _segment("t2", "user", 2),
                    _segment("t3", "agent", 3),
                ),
                _cell_call("c2", _segment("t1", "agent", 0)),
            ],
            {"c1": 2, "c2": 1},
        ),
    ],
)
def test_agent_turns_count_distinct_agent_turns_of_each_call(
    calls: list[CellCall], turns: dict[str, int]
) -> None:
    assert live.agent_turns(calls) == turns


def _live(call_id: str, state: str, accepted: datetime, dialled: datetime | None) -> Live:
    return Live(call_id, "task-1", state, "+15550000047", accepted, dialled)


@pytest.mark.parametrize(
    ("row", "turns", "since", "duration", "agent"),
    [
        (_live("c1", "accepted", NOW - 3 * S, None), {}, NOW - 3 * S, 3.0, 0),
        (_live("c1", "in_call", NOW - 90 * S, NOW - 80 * S), {"c1": 4}, NOW - 80 * S, 80.0, 4),
        (_live("c1", "ringing", NOW - 9 * S, NOW - 8 * S), None, NOW - 8 * S, 8.0, None),
        (_live("c1", "dialing", NOW + 2 * S, NOW + S), {"c1": 1}, NOW + S, 0.0, 1),  # clock skew
    ],
)
def test_a_live_call_shows_its_duration_since_dialled_and_the_agent_turns(
    row: Live,
    turns: dict[str, int] | None,
    since: datetime,
    duration: float,
    agent: int | None,
) -> None:
    (shown,) = live.live_rows([row], turns, NOW)
    assert (shown.call_id, shown.state, shown.callee) == (row.call_id, row.state, row.callee)
    assert (shown.since, shown.duration_s, shown.agent_turns) == (since, duration, agent)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([], []),
        (
            [("t1", "answered", 3, 90.0), ("t1", "no_answer", 1, 30.0)],
            [("t1", 4, 4, 3, 0.75, 30.0)],
        ),
        (
            [("t1", "rejected", 2, 0.0), ("t1", "canceled", 1, 0.0), ("t1", "busy", 1, 2.0)],
            [("t1", 4, 1, 0, 0.0, None)],
        ),
        ([("t2", "rejected", 2, 0.0)], [("t2", 2, 0, 0, None, None)]),
        (
            [("t2", "answered", 1, 10.0), ("t1", "failed", 1, 1.0), ("t2", "answered", 1, 20.0)],
            [("t1", 1, 1, 0, 0.0, None), ("t2", 2, 2, 2, 1.0, 15.0)],
        ),
    ],
)
def test_answer_rate_is_answered_of_dialled_and_handle_time_the_answered_average(
    rows: list[tuple[str, str, int, float]],
    expected: list[tuple[str, int, int, int, float | None, float | None]],
) -> None:
    found = [
        (r.task_id, r.calls, r.dialled, r.answered, r.answer_rate, r.handle_time_s)
        for r in live.task_rates(rows)
    ]
    assert found == expected
