"""The D's tracing, chosen by DISPATCHER_TRACING (docs/dispatcher.md, "Tracing")."""

from __future__ import annotations

from agentcall.dispatcher.telemetry.tracing import NO_TRACING, Tracing

SERVICE_NAME = "dispatcher"


def from_settings(enabled: bool) -> Tracing:
    """OpenTelemetry's tracing, exporting over OTLP as the standard ``OTEL_*`` variables say,
    when ``enabled``; else :data:`~agentcall.dispatcher.telemetry.tracing.NO_TRACING`, and
    ``opentelemetry`` is never imported."""
    if not enabled:
        return NO_TRACING
    from agentcall.dispatcher.telemetry.otel import CallTraces

    return CallTraces.exporting(SERVICE_NAME)
