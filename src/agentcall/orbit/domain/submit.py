"""POST /v1/tasks request rules (O-SUB-3, O-NOTE-4): field validation, defaults, then bounds.

`parse_submit(body)` checks everything that does not depend on the clock and applies the
defaults; `plan_times(request, now)` checks the time rules against the acceptance time `now`
(the database clock) and derives `available_at` and `deadline_at`.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.canonical import Digest, canonical_text, digest_canonical
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.flow_settings import (
    DEFAULT_TASK_FLOW,
    TASK_FIELDS,
    TaskFlow,
    parse_task_flow,
)
from agentcall.orbit.domain.ids import check_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.numbers import canonical_decimal
from agentcall.orbit.domain.times import format_time, milliseconds

DEFAULT_TASK_TIMEOUT_MS = 86_400_000
MAX_TASK_TIMEOUT_MS = 2_592_000_000
DEFAULT_ATTEMPT_TIMEOUT_MS = 30_000
MAX_ATTEMPTS = 100
DEFAULT_INITIAL_DELAY_MS = 1_000
DEFAULT_MAX_DELAY_MS = 30_000
MAX_DELAY_MS = 9_223_372_036_854
MAX_PAYLOAD_BYTES = 262_144
MAX_BUSINESS_KEY_CHARS = 191
PAST_TOLERANCE_MS = 1_000
_encode_str = json.encoder.encode_basestring

SUBMIT_FIELDS = frozenset(
    {
        "queue_id",
        "handler",
        "handler_version",
        "payload_version",
        "payload",
        "business_key",
        "available_at",
        "start_deadline_at",
        "task_timeout_ms",
        "recovery_safety",
        "retry",
    }
    | TASK_FIELDS
)
RETRY_FIELDS = frozenset({"max_attempts", "attempt_timeout_ms", "initial_delay_ms", "max_delay_ms"})


class RecoverySafety(enum.StrEnum):
    RECONCILE_ONLY = "RECONCILE_ONLY"
    IDEMPOTENT = "IDEMPOTENT"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int
    initial_delay_ms: int
    max_delay_ms: int
    attempt_timeout_ms: int


@dataclass(frozen=True, slots=True)
class SubmitRequest:
    """A validated submit with defaults applied; `payload_text` is its compact JSON."""

    queue_id: str
    handler: str
    handler_version: str
    payload_version: str
    payload: JsonValue
    payload_text: str
    business_key: str | None
    available_at: datetime | None
    start_deadline_at: datetime | None
    task_timeout_ms: int
    recovery_safety: RecoverySafety
    retry: RetryPolicy
    trace_parent: str | None = None  # the submit span's W3C traceparent while tracing is on
    flow: TaskFlow = DEFAULT_TASK_FLOW  # priority, concurrency and fairness keys


@dataclass(frozen=True, slots=True)
class TaskTimes:
    available_at: datetime
    start_deadline_at: datetime | None
    deadline_at: datetime


def parse_submit(body: JsonValue) -> SubmitRequest:
    fields = ObjectReader(body, SUBMIT_FIELDS)
    task_timeout_ms = fields.uint64("task_timeout_ms") or DEFAULT_TASK_TIMEOUT_MS
    if task_timeout_ms > MAX_TASK_TIMEOUT_MS:
        raise InvalidArgument(f"must be at most {MAX_TASK_TIMEOUT_MS} (30 days)", "task_timeout_ms")
    payload, payload_text = _payload(fields)
    return SubmitRequest(
        queue_id=check_id(fields.raw("queue_id", required=True), "queue_id"),
        handler=fields.name_string("handler", 128),
        handler_version=fields.name_string("handler_version", 64),
        payload_version=fields.name_string("payload_version", 32),
        payload=payload,
        payload_text=payload_text,
        business_key=_business_key(fields),
        available_at=fields.time("available_at"),
        start_deadline_at=fields.time("start_deadline_at"),
        task_timeout_ms=task_timeout_ms,
        recovery_safety=_recovery_safety(fields),
        retry=_retry(fields.raw("retry"), task_timeout_ms),
        flow=parse_task_flow(fields),
    )


def _payload(fields: ObjectReader) -> tuple[JsonValue, str]:
    payload = fields.raw("payload", required=True)
    text = dumps(payload)
    if len(text.encode("utf-8")) > MAX_PAYLOAD_BYTES:
        raise InvalidArgument(
            f"compact JSON encoding exceeds {MAX_PAYLOAD_BYTES} bytes; pass a reference", "payload"
        )
    return payload, text


def _business_key(fields: ObjectReader) -> str | None:
    value = fields.string("business_key", required=False, max_chars=MAX_BUSINESS_KEY_CHARS)
    if value is not None and any(char in value for char in "\x00\n\r"):
        raise InvalidArgument("must not contain NUL or line breaks", "business_key")
    return value


def _recovery_safety(fields: ObjectReader) -> RecoverySafety:
    value = fields.raw("recovery_safety")
    if value is None:
        return RecoverySafety.RECONCILE_ONLY
    if not isinstance(value, str) or value not in RecoverySafety.__members__:
        raise InvalidArgument("must be RECONCILE_ONLY or IDEMPOTENT", "recovery_safety")
    return RecoverySafety(value)


def _retry(value: JsonValue, task_timeout_ms: int) -> RetryPolicy:
    fields = ObjectReader({} if value is None else value, RETRY_FIELDS, "retry.")
    attempts = fields.uint64("max_attempts") or 1
    if attempts > MAX_ATTEMPTS:
        raise InvalidArgument(f"must be 1-{MAX_ATTEMPTS}", "retry.max_attempts")
    attempt_timeout = fields.uint64("attempt_timeout_ms") or DEFAULT_ATTEMPT_TIMEOUT_MS
    if attempt_timeout > task_timeout_ms:
        raise InvalidArgument(
            f"must not exceed task_timeout_ms ({task_timeout_ms})", "retry.attempt_timeout_ms"
        )
    several = attempts > 1
    initial = fields.uint64("initial_delay_ms") or (DEFAULT_INITIAL_DELAY_MS if several else 0)
    maximum = fields.uint64("max_delay_ms") or (DEFAULT_MAX_DELAY_MS if several else 0)
    if maximum > MAX_DELAY_MS:
        raise InvalidArgument(f"must be at most {MAX_DELAY_MS}", "retry.max_delay_ms")
    if initial > maximum:
        raise InvalidArgument(f"must not exceed max_delay_ms ({maximum})", "retry.initial_delay_ms")
    return RetryPolicy(attempts, initial, maximum, attempt_timeout)


def plan_times(request: SubmitRequest, now: datetime) -> TaskTimes:
    """Time rules against the acceptance time `now` (aware UTC)."""
    deadline = now + milliseconds(request.task_timeout_ms)
    available = request.available_at or now
    if available < now - milliseconds(PAST_TOLERANCE_MS):
        raise InvalidArgument("must not be more than 1 second in the past", "available_at")
    if available >= deadline:
        raise InvalidArgument("must be before the task deadline", "available_at")
    start = request.start_deadline_at
    if start is not None:
        if start <= now:
            raise InvalidArgument("must be in the future", "start_deadline_at")
        if start < available:
            raise InvalidArgument("must not be before available_at", "start_deadline_at")
        if start > deadline:
            raise InvalidArgument("must not be after the task deadline", "start_deadline_at")
    return TaskTimes(available, start, deadline)


OPERATION = "tasks.submit"


def submit_document(request: SubmitRequest) -> dict[str, JsonValue]:
    """What the idempotency digest covers: the request with defaults applied; an omitted
    `available_at` stays omitted (its acceptance-time default is not content, O-NOTE-4)."""
    retry = request.retry
    document: dict[str, JsonValue] = {
        "queue_id": request.queue_id,
        "handler": request.handler,
        "handler_version": request.handler_version,
        "payload_version": request.payload_version,
        "payload": request.payload,
        "task_timeout_ms": request.task_timeout_ms,
        "recovery_safety": request.recovery_safety.value,
        "retry": {
            "max_attempts": retry.max_attempts,
            "initial_delay_ms": retry.initial_delay_ms,
            "max_delay_ms": retry.max_delay_ms,
            "attempt_timeout_ms": retry.attempt_timeout_ms,
        },
    }
    if request.business_key is not None:
        document["business_key"] = request.business_key
    if request.available_at is not None:
        document["available_at"] = format_time(request.available_at)
    if request.start_deadline_at is not None:
        document["start_deadline_at"] = format_time(request.start_deadline_at)
    document.update(flow_document(request.flow))
    return document


def flow_document(flow: TaskFlow) -> dict[str, JsonValue]:
    """The flow fields the digest covers: only those that differ from their defaults, so that
    an omitted field and its default digest alike (and digests of older submits hold)."""
    document: dict[str, JsonValue] = {}
    if flow is DEFAULT_TASK_FLOW:
        return document
    default = DEFAULT_TASK_FLOW
    if flow.priority != default.priority:
        document["priority"] = flow.priority
    if flow.concurrency_key is not None:
        document["concurrency_key"] = flow.concurrency_key
    if flow.fairness_key is not None:
        document["fairness_key"] = flow.fairness_key
    if flow.fairness_weight != default.fairness_weight:
        document["fairness_weight"] = flow.fairness_weight
    return document


def submit_digest(request: SubmitRequest) -> Digest:
    """`digest(OPERATION, submit_document(request))`, with the document written straight in
    canonical key order (every submit computes it; a test compares both)."""
    return digest_canonical(OPERATION, _canonical_submit(request))


def _canonical_submit(request: SubmitRequest) -> str:
    """`canonical_text(submit_document(request))`: the keys in code point order."""
    if request.flow is not DEFAULT_TASK_FLOW:  # rare: the general canonical form
        return canonical_text(submit_document(request))
    text, number, retry = _encode_str, canonical_decimal, request.retry
    parts = []
    if request.available_at is not None:
        parts.append('"available_at":' + text(format_time(request.available_at)))
    if request.business_key is not None:
        parts.append('"business_key":' + text(request.business_key))
    parts += [
        '"handler":' + text(request.handler),
        '"handler_version":' + text(request.handler_version),
        '"payload":' + canonical_text(request.payload),
        '"payload_version":' + text(request.payload_version),
        '"queue_id":' + text(request.queue_id),
        '"recovery_safety":' + text(request.recovery_safety.value),
        f'"retry":{{"attempt_timeout_ms":{number(retry.attempt_timeout_ms)},'
        f'"initial_delay_ms":{number(retry.initial_delay_ms)},'
        f'"max_attempts":{number(retry.max_attempts)},"max_delay_ms":{number(retry.max_delay_ms)}}}',
    ]
    if request.start_deadline_at is not None:
        parts.append('"start_deadline_at":' + text(format_time(request.start_deadline_at)))
    parts.append('"task_timeout_ms":' + number(request.task_timeout_ms))
    return "{" + ",".join(parts) + "}"
