"""The server's spans of one task (docs/orbit/tracing.md), one trace from the submitter's
`traceparent` to the worker's handler:

    orbit.submit            the request (its parent: the request's traceparent, if valid)
      orbit.lease           the task leased to a worker connection
        orbit.attempt       from the lease to the result (its context goes to the worker)
          orbit.handler     the worker SDK's span around the handler
          orbit.finish      the result received and applied

The submit span's context is stored with the task (`tasks.trace_parent`), so a lease made by
another server process, or after a restart, continues the trace. An attempt span lives in
this process's memory from its lease to its result, at most `MAX_OPEN_ATTEMPTS` of them (the
oldest then ends, marked `orbit.attempt.untracked`): an attempt whose lease expires or whose
result reaches another process has no finish span."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from agentcall.orbit.domain.submit import SubmitRequest
from agentcall.orbit.telemetry import traceparent
from agentcall.orbit.telemetry.provider import context_of, current, parent_of

if TYPE_CHECKING:
    from opentelemetry.trace import Span
    from starlette.responses import Response

MAX_OPEN_ATTEMPTS = 10_000
_attempts: OrderedDict[str, Span] = OrderedDict()


def on() -> bool:
    """Whether this process traces (the submit route asks before anything else)."""
    return current() is not None


async def submit(
    headers: Mapping[str, str],
    request: SubmitRequest,
    accept: Callable[[SubmitRequest], Awaitable[Response]],
) -> Response:
    """`accept(request)` inside the submit span, the request carrying the span's context."""
    tracer = current()
    if tracer is None:
        return await accept(request)
    from opentelemetry.trace import SpanKind

    parent = context_of(traceparent.parse(headers.get("traceparent")))
    with tracer.start_as_current_span("orbit.submit", parent, SpanKind.SERVER) as span:
        span.set_attribute("orbit.queue.id", request.queue_id)
        span.set_attribute("orbit.handler", request.handler)
        stored = parent_of(span).text()
        response = await accept(replace(request, trace_parent=stored))
        span.set_attribute("http.response.status_code", response.status_code)
        return response


def leased(stored: str, task_id: str, attempt_id: str, number: int) -> str | None:
    """The lease span (ended now) and the attempt span (open until `finished`), children of
    the stored submit context; the attempt's `traceparent` for the worker (None: tracing off,
    or a stored value that is not a traceparent)."""
    tracer = current()
    parent = traceparent.parse(stored)
    if tracer is None or parent is None:
        return None
    attributes = {"orbit.task.id": task_id, "orbit.attempt.id": attempt_id}
    with tracer.start_as_current_span("orbit.lease", context_of(parent), attributes=attributes):
        attempt = tracer.start_span("orbit.attempt", attributes=attributes)
    attempt.set_attribute("orbit.attempt.number", number)
    _track(attempt_id, attempt)
    return parent_of(attempt).text()


def finished(attempt_id: str, outcome: str, accepted: bool) -> None:
    """The finish span of a result and the end of its attempt span (if this process has it)."""
    if not _attempts:  # tracing off, or no attempt span open
        return
    attempt = _attempts.pop(attempt_id, None)
    tracer = current()
    if attempt is None or tracer is None:
        return
    from opentelemetry import trace

    context = trace.set_span_in_context(attempt)
    with tracer.start_as_current_span("orbit.finish", context) as span:
        span.set_attribute("orbit.outcome", outcome)
        span.set_attribute("orbit.result.accepted", accepted)
    attempt.set_attribute("orbit.outcome", outcome)
    attempt.end()


def _track(attempt_id: str, span: Span) -> None:
    previous = _attempts.pop(attempt_id, None)
    if previous is not None:  # the same attempt leased again (rebound): one span for it
        previous.end()
    _attempts[attempt_id] = span
    while len(_attempts) > MAX_OPEN_ATTEMPTS:
        _, oldest = _attempts.popitem(last=False)
        oldest.set_attribute("orbit.attempt.untracked", True)
        oldest.end()
