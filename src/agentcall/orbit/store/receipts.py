"""What a write operation answers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a write answers: HTTP status, whether it was a replay, the task JSON text; and
    whether the task was leased in the same transaction (eager dispatch: no round needed)."""

    status: int
    deduplicated: bool
    task_text: str
    leased: bool = False
