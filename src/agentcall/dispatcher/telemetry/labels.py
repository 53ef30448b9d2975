"""Bounded label values: the per-task counters take their ``task`` label from the SaaS's
task ids, so the first ``limit`` tasks a process sees keep their own label for its whole
life, and every later one is counted under ``_other`` (so is an empty or oversized id).
A scrape therefore holds at most ``limit + 1`` tasks per counter, and a task's series never
moves once it has one."""

from __future__ import annotations

OTHER = "_other"
TASK_LIMIT = 100
LONGEST = 128


class FirstSeen:
    def __init__(self, limit: int = TASK_LIMIT) -> None:
        self.limit = limit
        self._kept: set[str] = set()

    def __call__(self, value: str) -> str:
        if value in self._kept:
            return value
        if not value or len(value) > LONGEST or value == OTHER or len(self._kept) >= self.limit:
            return OTHER
        self._kept.add(value)
        return value
