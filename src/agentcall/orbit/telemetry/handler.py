"""The worker SDK's span around a handler (`orbit.handler`), a child of the attempt span
whose `traceparent` the lease carried (docs/orbit/tracing.md). For an async handler the span
is the current span while it runs, so spans the handler starts through the OpenTelemetry
API are its children."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from agentcall.orbit.telemetry import traceparent
from agentcall.orbit.telemetry.provider import context_of, current

if TYPE_CHECKING:
    from opentelemetry.trace import Span


@contextlib.contextmanager
def handler_span(
    lease_traceparent: str | None, handler: str, task_id: str, number: int
) -> Iterator[Span | None]:
    """The span while the handler runs; None when tracing is off or the lease carried no
    valid `traceparent`."""
    tracer = current()
    parent = traceparent.parse(lease_traceparent)
    if tracer is None or parent is None:
        yield None
        return
    from opentelemetry.trace import SpanKind

    attributes = {"orbit.handler": handler, "orbit.task.id": task_id}
    with tracer.start_as_current_span(
        "orbit.handler", context_of(parent), SpanKind.CONSUMER, attributes=attributes
    ) as span:
        span.set_attribute("orbit.attempt.number", number)
        yield span


def record_outcome(span: Span | None, body: Mapping[str, object] | None) -> None:
    """The handler's outcome on its span (`succeeded`, `failed`, ... or `released`)."""
    if span is None:
        return
    outcome = "released" if body is None else str(body.get("outcome"))
    span.set_attribute("orbit.outcome", outcome)
    if outcome not in ("succeeded", "released"):
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, outcome))
