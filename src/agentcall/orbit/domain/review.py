"""Manual retry and resolve (docs/orbit/task-control.md §2): request rules, content digests
and the pure decisions. Both need the `tasks:review` permission, an Idempotency-Key and
`expected_revision`.

- retry: FAILED or NEEDS_REVIEW → WAITING with **one** more attempt
  (`retry.max_attempts = attempt_count + 1`), available now, error/result/cancel request
  cleared; refused once a deadline has passed (submit a new task instead).
- resolve: NEEDS_REVIEW → SUCCEEDED (with `result`) or FAILED (with `error`), with the
  operator's reason and evidence.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from datetime import datetime

from agentcall.orbit.domain.canonical import Digest, digest
from agentcall.orbit.domain.errors import InvalidArgument, StateConflict
from agentcall.orbit.domain.evidence import EvidenceItem, read_items, read_result
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.numbers import parse_decimal_uint64
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.worker_errors import InvalidResult

RETRY_OPERATION = "tasks.retry"
RESOLVE_OPERATION = "tasks.resolve"
MAX_REASON_CHARS = 1024
MAX_OPERATOR_KEY_CHARS = 119  # stored as "operator." + key in the attempt's evidence (≤ 128)
OPERATOR_KEY_PREFIX = "operator."
RETRYABLE = frozenset({TaskState.FAILED, TaskState.NEEDS_REVIEW})
_ERROR_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,32}\Z")


class Resolution(enum.StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"


_OUTCOMES = frozenset(r.value for r in Resolution)


@dataclass(frozen=True, slots=True)
class RetryRequest:
    expected_revision: int
    reason: str


@dataclass(frozen=True, slots=True)
class ResolveRequest:
    expected_revision: int
    outcome: Resolution
    reason: str
    result_text: str | None
    error_code: str | None
    error_message: str | None
    evidence: tuple[EvidenceItem, ...]
    result_value: JsonValue = field(default=None, compare=False)  # as sent: for the digest


def parse_retry(body: JsonValue) -> RetryRequest:
    fields = ObjectReader(body, frozenset({"expected_revision", "reason"}))
    return RetryRequest(_revision(fields), _reason(fields))


def parse_resolve(body: JsonValue) -> ResolveRequest:
    allowed = {"expected_revision", "outcome", "reason", "result", "error", "evidence"}
    fields = ObjectReader(body, frozenset(allowed))
    revision, reason = _revision(fields), _reason(fields)
    raw = fields.raw("outcome", required=True)
    if not isinstance(raw, str) or raw not in _OUTCOMES:  # a list or an object is unhashable
        raise InvalidArgument("must be the string succeeded or failed", "outcome")
    outcome = Resolution(raw)
    succeeded = outcome is Resolution.SUCCEEDED
    _only_with(fields, "result", succeeded, outcome)
    _only_with(fields, "error", not succeeded, outcome)
    code, message = (None, None) if succeeded else _error(fields.raw("error"))
    evidence = read_items(fields.raw("evidence"), "evidence", required=False)
    for index, item in enumerate(evidence):
        if len(item.key) > MAX_OPERATOR_KEY_CHARS:
            raise InvalidArgument(
                f"must be 1-{MAX_OPERATOR_KEY_CHARS} characters", f"evidence[{index}].key"
            )
    value = fields.raw("result")
    result = _result(value) if succeeded else None
    return ResolveRequest(revision, outcome, reason, result, code, message, evidence, value)


def retry_digest(request: RetryRequest) -> Digest:
    return digest(
        RETRY_OPERATION,
        {"expected_revision": str(request.expected_revision), "reason": request.reason},
    )


def resolve_digest(request: ResolveRequest) -> Digest:
    document: dict[str, JsonValue] = {
        "expected_revision": str(request.expected_revision),
        "outcome": request.outcome.value,
        "reason": request.reason,
        "result": request.result_value,
        "error": None
        if request.error_code is None
        else {"code": request.error_code, "message": request.error_message or ""},
        "evidence": [item.digest for item in request.evidence],
    }
    return digest(RESOLVE_OPERATION, document)


def decide_retry(task: Task, request: RetryRequest, now: datetime) -> Task:
    """The task a manual retry leaves, or StateConflict naming why it cannot be retried."""
    if task.state not in RETRYABLE:
        raise StateConflict(f"only FAILED or NEEDS_REVIEW tasks can be retried; it is {task.state}")
    _check_revision(task, request.expected_revision)
    if now >= task.deadline_at or (task.start_deadline_at and now >= task.start_deadline_at):
        raise StateConflict("the task's deadline has passed; submit a new task instead")
    return replace(
        task,
        state=TaskState.WAITING,
        revision=task.revision + 1,
        available_at=now,
        retry=replace(task.retry, max_attempts=task.attempt_count + 1),
        result_text=None,
        error_code=None,
        error_message=None,
        attempt_error_text=None,
        cancel_requested_at=None,
        completed_at=None,
        current_attempt_id=None,
        updated_at=now,
    )


def decide_resolve(task: Task, request: ResolveRequest, now: datetime) -> Task:
    """The task a resolution leaves, or StateConflict naming why it cannot be resolved."""
    if task.state is not TaskState.NEEDS_REVIEW:
        raise StateConflict(f"only NEEDS_REVIEW tasks can be resolved; it is {task.state}")
    _check_revision(task, request.expected_revision)
    target = TaskState.SUCCEEDED if request.outcome is Resolution.SUCCEEDED else TaskState.FAILED
    check_transition(task.state, target)
    return replace(
        task,
        state=target,
        revision=task.revision + 1,
        result_text=request.result_text,
        error_code=request.error_code,
        error_message=request.error_message,
        attempt_error_text=None,
        current_attempt_id=None,
        completed_at=now,
        updated_at=now,
    )


def _check_revision(task: Task, expected: int) -> None:
    if task.revision != expected:
        raise StateConflict(f"expected_revision {expected} does not match revision {task.revision}")


def _revision(fields: ObjectReader) -> int:
    text = fields.raw("expected_revision", required=True)
    if not isinstance(text, str):
        raise InvalidArgument('must be a decimal string such as "1"', "expected_revision")
    return parse_decimal_uint64(text, "expected_revision", nonzero=True)


def _reason(fields: ObjectReader) -> str:
    reason = fields.string("reason", required=True, max_chars=MAX_REASON_CHARS)
    assert reason is not None
    if not reason.strip():
        raise InvalidArgument("must not be blank", "reason")
    return reason


def _only_with(fields: ObjectReader, key: str, wanted: bool, outcome: Resolution) -> None:
    if fields.present(key) != wanted:
        rule = "required" if wanted else "not allowed"
        raise InvalidArgument(f"{rule} with outcome {outcome.value}", key)


def _error(value: JsonValue) -> tuple[str, str]:
    fields = ObjectReader(value, frozenset({"code", "message"}), "error.")
    code = fields.raw("code", required=True)
    if not isinstance(code, str) or not _ERROR_CODE.match(code):
        raise InvalidArgument("must be 1-32 characters of [A-Za-z0-9_.:-]", "error.code")
    message = fields.string("message", required=True, max_chars=MAX_REASON_CHARS)
    assert message is not None
    return code, message


def _result(value: JsonValue) -> str:
    try:
        return read_result(value)
    except InvalidResult as exc:
        raise InvalidArgument(exc.message.removeprefix("result: "), "result") from None
