"""The OpenTelemetry traces of call.execute commands, one trace per command (imported only
while DISPATCHER_TRACING is 1; docs/dispatcher.md, "Tracing"):

    dispatcher.call.execute          from the delivery to the broker's confirm of its
    │                                call.result (a refused command: to its decision)
    ├── dispatcher.admit             the delivery to the commit of its decision
    ├── dispatcher.originate         the originate sent to the cell, to its answer
    ├── dispatcher.call              the cell's call, from its originate to call.ended
    ├── dispatcher.upload            call.ended to the recording closed (when recorded)
    └── dispatcher.result.publish    the result stored to the broker's confirm
        └── dispatcher.outbox.deliver   one publish round of the outbox relay each

The root's parent is the command's W3C ``traceparent`` header when it has a valid one, else
the trace starts there. The spans of an execution live in this process's memory until its
result is confirmed, at most ``MAX_OPEN`` executions (the oldest then ends, marked
``dispatcher.call.untracked``); a restarted D does not continue the traces of its earlier
run. The times are the monotonic clock's, placed on the wall clock once per report."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agentcall.dispatcher.telemetry.tracing import Decided

INSTRUMENTATION = "agentcall.dispatcher"
MAX_OPEN = 10_000
_PROPAGATOR = TraceContextTextMapPropagator()


def _wall_ns(monotonic: float) -> int:
    return time.time_ns() - int((time.monotonic() - monotonic) * 1e9)


def parent_context(traceparent: str | None) -> Context | None:
    """The context continuing a valid ``traceparent``, else None (a new trace)."""
    if traceparent is None:
        return None
    context = _PROPAGATOR.extract({"traceparent": traceparent})
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


@dataclass
class _Trace:
    root: Span
    event_id: str
    last: int  # when its latest step ended (ns): where the next one starts
    originating: int | None = None
    phase: Span | None = None  # the call, or the recording upload
    in_call: bool = False  # whether the phase is the call
    publish: Span | None = None
    attempts: int = 0


class CallTraces:
    on = True

    def __init__(self, tracer: Tracer, provider: TracerProvider | None = None) -> None:
        self._tracer = tracer
        self._provider = provider
        self._open: OrderedDict[str, _Trace] = OrderedDict()
        self._by_event: dict[str, str] = {}

    @classmethod
    def exporting(cls, service_name: str, exporter: SpanExporter | None = None) -> CallTraces:
        """Traces exported over OTLP HTTP/protobuf (``OTEL_EXPORTER_OTLP_*``), as
        ``service_name`` unless ``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES`` name it;
        ``exporter`` (tests) replaces the OTLP exporter."""
        resource = Resource.create()
        if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: service_name}))
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(exporter or OTLPSpanExporter()))
        return cls(provider.get_tracer(INSTRUMENTATION), provider)

    def close(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()

    def _child(self, state: _Trace, name: str, start: int) -> Span:
        context = trace.set_span_in_context(state.root)
        return self._tracer.start_span(name, context, start_time=start)

    def decided(self, commands: Sequence[Decided], done: float) -> None:
        end = _wall_ns(done)
        for command in commands:
            start = _wall_ns(command.arrival.received)
            attributes = {
                "dispatcher.command.id": command.command_id,
                "dispatcher.task.id": command.task_id,
                "dispatcher.decision": command.decision,
                "dispatcher.reason": command.reason,
            }
            parent = parent_context(command.arrival.traceparent)
            root = self._tracer.start_span(
                "dispatcher.call.execute", parent, SpanKind.CONSUMER, attributes, start_time=start
            )
            state = _Trace(root, command.result_event_id or "", end)
            admission = self._child(state, "dispatcher.admit", start)
            admission.set_attributes(attributes)
            admission.end(end)
            if command.execution_id is None:
                root.end(end)
                continue
            root.set_attribute("dispatcher.execution.id", command.execution_id)
            self._track(command.execution_id, state)

    def _track(self, execution_id: str, state: _Trace) -> None:
        earlier = self._open.pop(execution_id, None)
        if earlier is not None:  # admitted again (a redelivery after a lost state file)
            self._end_phase(earlier, time.time_ns())
            earlier.root.end()
        self._open[execution_id] = state
        self._by_event[state.event_id] = execution_id
        while len(self._open) > MAX_OPEN:
            _, oldest = self._open.popitem(last=False)
            self._by_event.pop(oldest.event_id, None)
            oldest.root.set_attribute("dispatcher.call.untracked", True)
            self._end_phase(oldest, time.time_ns())
            oldest.root.end()

    def originating(self, execution_ids: Iterable[str]) -> None:
        now = time.time_ns()
        for execution_id in execution_ids:
            state = self._open.get(execution_id)
            if state is not None:
                state.originating = now

    def originated(self, execution_id: str, dialled: bool) -> None:
        state = self._open.get(execution_id)
        if state is None:
            return
        now = time.time_ns()
        span = self._child(state, "dispatcher.originate", state.originating or state.last)
        span.set_attribute("dispatcher.originate.dialled", dialled)
        if not dialled:
            span.set_status(Status(StatusCode.ERROR, "not dialled"))
        span.end(now)
        state.last = now
        if dialled:
            state.phase, state.in_call = self._child(state, "dispatcher.call", now), True

    def calls_ended(self, call_ids: Iterable[str], finalized: Collection[str]) -> None:
        now = time.time_ns()
        for call_id in call_ids:
            state = self._open.get(call_id)
            if state is None or state.phase is None or not state.in_call:
                continue
            self._end_phase(state, now)
            if call_id not in finalized:
                state.phase = self._child(state, "dispatcher.upload", now)
                state.in_call = False

    def recording_closed(self, execution_id: str, status: str) -> None:
        state = self._open.get(execution_id)
        if state is None or state.phase is None:
            return
        state.phase.set_attribute("dispatcher.upload.status", status)
        self._end_phase(state, time.time_ns())

    def _end_phase(self, state: _Trace, now: int) -> None:
        if state.phase is not None:
            state.phase.end(now)
            state.phase, state.in_call = None, False
            state.last = now

    def delivered(
        self, event_ids: Sequence[str], errors: Sequence[str | None], started: float
    ) -> None:
        begun, now = _wall_ns(started), time.time_ns()
        for event_id, error in zip(event_ids, errors, strict=True):
            execution_id = self._by_event.get(event_id)
            state = None if execution_id is None else self._open.get(execution_id)
            if execution_id is None or state is None:
                continue
            self._end_phase(state, min(begun, now))
            if state.publish is None:
                state.publish = self._child(state, "dispatcher.result.publish", state.last)
            context = trace.set_span_in_context(state.publish)
            attempt = self._tracer.start_span(
                "dispatcher.outbox.deliver", context, start_time=begun
            )
            state.attempts += 1
            attempt.set_attribute("dispatcher.outbox.attempt", state.attempts)
            if error is not None:
                attempt.set_status(Status(StatusCode.ERROR, error))
                attempt.end(now)
                continue
            attempt.end(now)
            state.publish.set_attribute("dispatcher.outbox.attempts", state.attempts)
            state.publish.end(now)
            state.root.end(now)
            del self._open[execution_id], self._by_event[event_id]
