"""The live-calls panel and the per-task figures (pure: plain rows in, plain rows out).

A callee is masked unless the reader asks for numbers (``?callees=shown``): every character
but the last :data:`SHOWN_DIGITS` becomes ``•`` (a leading ``+`` is kept), so a screen or a
screenshot shows which call it is without the number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agentcall.dispatcher.domain.results import TranscriptSegment
from agentcall.dispatcher.store.console import Live

SHOWN_DIGITS = 3
MASK = "•"
# Outcomes of calls that never reached the callee's phone: not counted as dialled.
NOT_DIALLED = frozenset({"rejected", "canceled"})


def mask(callee: str) -> str:
    """``callee`` with all but its last :data:`SHOWN_DIGITS` characters masked (all of
    them when it is that short or shorter)."""
    plus = "+" if callee.startswith("+") else ""
    body = callee[len(plus) :]
    shown = body[-SHOWN_DIGITS:] if len(body) > 2 * SHOWN_DIGITS else ""
    return plus + MASK * (len(body) - len(shown)) + shown


class ListedCall(Protocol):
    """A call as the cell lists it (the cell port's ``CellCall``): its transcript so far."""

    @property
    def call_id(self) -> str: ...

    @property
    def transcript(self) -> Sequence[TranscriptSegment]: ...


def agent_turns(calls: Iterable[ListedCall]) -> dict[str, int]:
    """Per call, how many turns the agent has spoken so far (distinct ``turn_id`` of its
    ``agent`` segments in the cell's transcript)."""
    return {
        call.call_id: len({s.turn_id for s in call.transcript if s.role == "agent"})
        for call in calls
    }


@dataclass(frozen=True, slots=True)
class LiveRow:
    call_id: str
    task_id: str
    state: str
    callee: str
    since: datetime  # dialled at, or accepted at while not dialled yet
    duration_s: float
    agent_turns: int | None  # None: the cell did not say


def live_rows(
    rows: Sequence[Live], turns: Mapping[str, int] | None, now: datetime
) -> list[LiveRow]:
    """The live calls with their duration so far and the agent's turns (None for every
    call when the cell could not be asked; 0 for a call the cell does not list yet)."""
    found = []
    for row in rows:
        since = row.dial_started_at or row.accepted_at
        found.append(
            LiveRow(
                row.call_id,
                row.task_id,
                row.state,
                row.callee,
                since,
                max(0.0, (now - since).total_seconds()),
                None if turns is None else turns.get(row.call_id, 0),
            )
        )
    return found


@dataclass(frozen=True, slots=True)
class TaskRate:
    task_id: str
    calls: int  # finalized in the window
    dialled: int  # of them, the ones that reached the network (not rejected or canceled)
    answered: int
    answered_s: float  # summed duration of the answered calls

    @property
    def answer_rate(self) -> float | None:
        """Answered calls per dialled call; None before any call was dialled."""
        return self.answered / self.dialled if self.dialled else None

    @property
    def handle_time_s(self) -> float | None:
        """Average duration of an answered call; None before any answer."""
        return self.answered_s / self.answered if self.answered else None


def task_rates(rows: Iterable[tuple[str, str, int, float]]) -> list[TaskRate]:
    """Per task, from (task_id, outcome, how many, summed duration s), sorted by task."""
    found: dict[str, list[float]] = {}
    for task_id, outcome, n, seconds in rows:
        figures = found.setdefault(task_id, [0, 0, 0, 0.0])
        figures[0] += n
        if outcome not in NOT_DIALLED:
            figures[1] += n
        if outcome == "answered":
            figures[2] += n
            figures[3] += seconds
    return [
        TaskRate(task, int(f[0]), int(f[1]), int(f[2]), f[3]) for task, f in sorted(found.items())
    ]
