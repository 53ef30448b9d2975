"""The one shared fake behind the Dispatcher's telemetry port
(`agentcall.dispatcher.telemetry.port.Telemetry`): it keeps every report, in order, per kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class RecordedTelemetry:
    """Keeps what the components report: latencies, accepted executions, originates, failed
    SaaS reads (``failed``: resource, status) and confirmed call results (``results``:
    outcome, reason, recording; ``result_tasks``: their task ids) and decided commands
    (``decisions``: task id, decision)."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.accepted_executions: list[dict[str, float]] = []
        self.originates: list[tuple[str, bool]] = []
        self.failed: list[tuple[str, str]] = []
        self.results: list[tuple[str, str, str]] = []
        self.result_tasks: list[str] = []
        self.decisions: list[tuple[str, str]] = []

    def admission_latency(self, seconds: float) -> None:
        self.latencies.append(seconds)

    def accepted(self, received: Mapping[str, float]) -> None:
        self.accepted_executions.append(dict(received))

    def originated(self, execution_id: str, dialled: bool) -> None:
        self.originates.append((execution_id, dialled))

    def saas_read_failed(self, resource: str, status: str) -> None:
        self.failed.append((resource, status))

    def commands_decided(self, decisions: Sequence[tuple[str, str]]) -> None:
        self.decisions.extend(decisions)

    def call_result(self, outcome: str, reason: str, recording: str, task_id: str) -> None:
        self.results.append((outcome, reason, recording))
        self.result_tasks.append(task_id)
