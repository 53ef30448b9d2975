"""The OpenTelemetry traces of call.execute commands (docs/dispatcher.md, "Tracing"), fed
the facts the components report, exported to memory: the span tree of each path a command
can take."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentcall.dispatcher.telemetry import otel
from agentcall.dispatcher.telemetry.otel import CallTraces
from agentcall.dispatcher.telemetry.tracing import Decided

pytestmark = pytest.mark.unit

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@dataclass(frozen=True)
class Arrived:
    received: float
    traceparent: str | None = None


def traces() -> tuple[CallTraces, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return CallTraces(provider.get_tracer("test"), provider), exporter


def accepted(execution_id: str, traceparent: str | None = None) -> Decided:
    arrival = Arrived(time.monotonic(), traceparent)
    return Decided(
        arrival, "cmd-1", "task-1", "accepted", "accepted", execution_id, f"ev-{execution_id}"
    )


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


def test_a_recorded_call_retried_once_by_the_relay_is_one_tree() -> None:
    tracing, exporter = traces()
    tracing.decided([accepted("ex-1", PARENT)], time.monotonic())
    tracing.originating(["ex-1"])
    tracing.originated("ex-1", dialled=True)
    tracing.calls_ended(["ex-1"], finalized=set())
    tracing.recording_closed("ex-1", "uploaded")
    tracing.delivered(["ev-ex-1"], ["nack"], time.monotonic())
    assert "dispatcher.call.execute" not in by_name(exporter)  # open until confirmed
    tracing.delivered(["ev-ex-1"], [None], time.monotonic())
    spans = by_name(exporter)
    [root] = spans["dispatcher.call.execute"]
    assert root.parent is not None and root.parent.span_id == 0x00F067AA0BA902B7
    for name in ("admit", "originate", "call", "upload", "result.publish"):
        [span] = spans[f"dispatcher.{name}"]
        assert span.parent is not None and span.parent.span_id == root.context.span_id, name
    failed, confirmed = sorted(spans["dispatcher.outbox.deliver"], key=lambda s: s.start_time or 0)
    assert failed.status.status_code is StatusCode.ERROR
    assert (
        confirmed.attributes is not None and confirmed.attributes["dispatcher.outbox.attempt"] == 2
    )
    [upload] = spans["dispatcher.upload"]
    assert (
        upload.attributes is not None
        and upload.attributes["dispatcher.upload.status"] == "uploaded"
    )


def test_a_refused_originate_has_no_call_and_a_refused_command_only_its_admission() -> None:
    tracing, exporter = traces()
    refused = Decided(Arrived(time.monotonic()), "cmd-2", "task-1", "rejected", "expired")
    tracing.decided([accepted("ex-2"), refused], time.monotonic())
    tracing.originated("ex-2", dialled=False)
    tracing.delivered(["ev-ex-2"], [None], time.monotonic())
    spans = by_name(exporter)
    assert len(spans["dispatcher.call.execute"]) == 2
    assert len(spans["dispatcher.admit"]) == 2
    assert "dispatcher.call" not in spans and "dispatcher.upload" not in spans
    [originate] = spans["dispatcher.originate"]
    assert originate.status.status_code is StatusCode.ERROR
    assert all(root.parent is None for root in spans["dispatcher.call.execute"])


def test_the_oldest_open_execution_ends_untracked_beyond_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otel, "MAX_OPEN", 2)
    tracing, exporter = traces()
    tracing.decided([accepted("ex-a"), accepted("ex-b"), accepted("ex-c")], time.monotonic())
    [root] = by_name(exporter)["dispatcher.call.execute"]
    assert root.attributes is not None and root.attributes["dispatcher.execution.id"] == "ex-a"
    assert root.attributes["dispatcher.call.untracked"] is True
    tracing.delivered(["ev-ex-a"], [None], time.monotonic())  # no longer traced: nothing more
    assert len(by_name(exporter)["dispatcher.call.execute"]) == 1
