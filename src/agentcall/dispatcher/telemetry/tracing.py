"""The tracing port: the facts of one call.execute that make its trace (docs/dispatcher.md,
"Tracing"), reported by the intake, the admission, the call supervisor, the recording loop
and the outbox relay where each happens.

:data:`NO_TRACING` (the default of every component, and the D's while ``DISPATCHER_TRACING``
is 0) reports nothing and imports nothing;
:func:`agentcall.dispatcher.telemetry.tracing_setup.from_settings` builds the OpenTelemetry
one (:mod:`agentcall.dispatcher.telemetry.otel`) only when tracing is on, so a D that does
not trace never imports ``opentelemetry``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


class Arrival(Protocol):
    """A delivery as tracing sees it: when it arrived and its W3C ``traceparent`` header."""

    @property
    def received(self) -> float:
        """``time.monotonic()`` at arrival."""

    @property
    def traceparent(self) -> str | None:
        """The header's value (None: absent, or tracing off)."""


@dataclass(frozen=True)
class Decided:
    """One call.execute decided by the admission: accepted ones name their execution and
    the event id of its one call.result."""

    arrival: Arrival
    command_id: str
    task_id: str
    decision: str
    reason: str
    execution_id: str | None = None
    result_event_id: str | None = None


class Tracing(Protocol):
    @property
    def on(self) -> bool:
        """Whether anything is traced (the components skip preparing facts otherwise)."""

    def decided(self, commands: Sequence[Decided], done: float) -> None:
        """Commands decided in one transaction committed at ``done`` (monotonic)."""

    def originating(self, execution_ids: Iterable[str]) -> None:
        """The originate of these executions is being sent to the cell."""

    def originated(self, execution_id: str, dialled: bool) -> None:
        """The cell answered the originate (``dialled``) or refused it."""

    def calls_ended(self, call_ids: Iterable[str], finalized: Collection[str]) -> None:
        """The cell reported these calls ended; ``finalized`` ones have their result stored,
        the others wait for their recording."""

    def recording_closed(self, execution_id: str, status: str) -> None:
        """The recording of an execution closed (its call.result is stored)."""

    def delivered(
        self, event_ids: Sequence[str], errors: Sequence[str | None], started: float
    ) -> None:
        """A publish round begun at ``started`` (monotonic): per event its error, or None
        when the broker confirmed it."""

    def close(self) -> None:
        """Export what is still queued (a stopping D)."""


class NoTracing:
    """Traces nothing."""

    on = False

    def decided(self, commands: Sequence[Decided], done: float) -> None:
        pass

    def originating(self, execution_ids: Iterable[str]) -> None:
        pass

    def originated(self, execution_id: str, dialled: bool) -> None:
        pass

    def calls_ended(self, call_ids: Iterable[str], finalized: Collection[str]) -> None:
        pass

    def recording_closed(self, execution_id: str, status: str) -> None:
        pass

    def delivered(
        self, event_ids: Sequence[str], errors: Sequence[str | None], started: float
    ) -> None:
        pass

    def close(self) -> None:
        pass


NO_TRACING: Tracing = NoTracing()
