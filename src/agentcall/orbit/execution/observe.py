"""What the execution side reports as it runs, for metrics and for waiters: a lease granted
(how long the task waited for it), an attempt ended (its handler, outcome, error code and
duration), a task changed state. `ExecutionObserver` does nothing; the server's observer
(`agentcall.orbit.api.observability`) turns each call into an O(1) metric update or a wake-up."""

from __future__ import annotations

from dataclasses import dataclass


class ExecutionObserver:
    def lease_waited(self, handler: str, seconds: float) -> None:
        """A task became LEASED `seconds` after it was ready (WAITING → LEASED)."""

    def attempt_ended(self, handler: str, outcome: str, error_code: str, seconds: float) -> None:
        """An attempt leased by this process ended after `seconds`; `outcome` is the task's
        state after it (or the refusal code of the ending message, or LOST)."""

    def task_changed(self, task_id: str) -> None:
        """A task's state was committed by this process (a worker's result, an operator's
        cancel or resolve): whoever waits for it may read it again."""


@dataclass(frozen=True, slots=True)
class Leased:
    """An attempt leased by this process: its task, handler and when (monotonic seconds)."""

    task_id: str
    handler: str
    at: float
