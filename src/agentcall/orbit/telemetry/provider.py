"""The one tracer of a process (the server or a worker): built by `enable` from the standard
`OTEL_*` environment (read by OpenTelemetry itself: `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`), exporting over OTLP
HTTP/protobuf. Until `enable` is called nothing imports `opentelemetry`, and `current()` is
None: every hook of `agentcall.orbit.telemetry` then returns at once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.telemetry.traceparent import TraceParent

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

INSTRUMENTATION = "agentcall.orbit"
MISSING = "tracing needs the OpenTelemetry packages: pip install 'agentcall[otel]'"


class _Process:
    tracer: Tracer | None = None
    provider: Any = None


_process = _Process()


def current() -> Tracer | None:
    """The tracer while tracing is on, else None."""
    return _process.tracer


def enable(service_name: str, exporter: SpanExporter | None = None) -> None:
    """Trace this process from now on, as `service_name` unless `OTEL_SERVICE_NAME` (or
    `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) names it; `exporter` (tests) replaces the
    OTLP exporter. Raises SetupError when the `otel` extra is not installed."""
    if _process.tracer is not None:
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise SetupError(MISSING) from exc
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter or OTLPSpanExporter()))
    _process.provider = provider
    _process.tracer = provider.get_tracer(INSTRUMENTATION)


def disable() -> None:
    """Export what is still queued and stop tracing (a stopping process, tests)."""
    provider, _process.provider, _process.tracer = _process.provider, None, None
    if provider is not None:
        provider.shutdown()


def context_of(parent: TraceParent | None) -> Context | None:
    """The OpenTelemetry context continuing `parent` (None: a new trace)."""
    if parent is None:
        return None
    from opentelemetry import trace

    span = trace.NonRecordingSpan(
        trace.SpanContext(
            parent.trace_id,
            parent.span_id,
            is_remote=True,
            trace_flags=trace.TraceFlags(parent.flags),
        )
    )
    return trace.set_span_in_context(span)


def parent_of(span: Span) -> TraceParent:
    """The `traceparent` that makes a span's children (stored, sent to the worker)."""
    context = span.get_span_context()
    return TraceParent(context.trace_id, context.span_id, int(context.trace_flags))
