"""The telemetry port: what the components report where an event happens.

The admission service, the call supervisor, the outbox relay and the SaaS client are given
one :class:`Telemetry` at assembly (:mod:`agentcall.dispatcher.service`) and call it after the fact
they report; the pure core never sees it. :data:`NO_TELEMETRY` is the default of every
component, so a component built alone (tests, tools) reports nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class Telemetry(Protocol):
    def admission_latency(self, seconds: float) -> None:
        """One delivery from its arrival to the commit of its decision."""

    def accepted(self, received: Mapping[str, float]) -> None:
        """Executions accepted now, with the ``time.monotonic()`` their command arrived."""

    def originated(self, execution_id: str, dialled: bool) -> None:
        """The cell answered the originate of an execution (``dialled``) or refused it."""

    def saas_read_failed(self, resource: str, status: str) -> None:
        """A SaaS read failed: ``status`` is the HTTP status, or ``timeout`` /
        ``transport_error`` when none came back."""

    def commands_decided(self, decisions: Sequence[tuple[str, str]]) -> None:
        """A batch of call.execute commands decided: ``(task_id, decision)`` of each."""

    def call_result(self, outcome: str, reason: str, recording: str, task_id: str) -> None:
        """A call.result the broker confirmed: the call's outcome, reason, the final
        status of its recording and the task (campaign) it belongs to."""


class NoTelemetry:
    """Reports nothing."""

    def admission_latency(self, seconds: float) -> None:
        pass

    def accepted(self, received: Mapping[str, float]) -> None:
        pass

    def originated(self, execution_id: str, dialled: bool) -> None:
        pass

    def saas_read_failed(self, resource: str, status: str) -> None:
        pass

    def commands_decided(self, decisions: Sequence[tuple[str, str]]) -> None:
        pass

    def call_result(self, outcome: str, reason: str, recording: str, task_id: str) -> None:
        pass


NO_TELEMETRY: Telemetry = NoTelemetry()
