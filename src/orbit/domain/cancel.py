"""POST /v1/tasks/{id}:cancel request rules and the cancel decision (O-CAN-1)."""

from __future__ import annotations

from dataclasses import dataclass

from orbit.domain.canonical import Digest, digest
from orbit.domain.errors import InvalidArgument, StateConflict
from orbit.domain.fields import ObjectReader
from orbit.domain.jsonvalue import JsonValue
from orbit.domain.numbers import parse_decimal_uint64
from orbit.domain.states import TaskState, check_transition

CANCEL_FIELDS = frozenset({"expected_revision", "reason"})
MAX_REASON_CHARS = 1024
OPERATION = "tasks.cancel"


@dataclass(frozen=True, slots=True)
class CancelRequest:
    expected_revision: int
    reason: str


def parse_cancel(body: JsonValue) -> CancelRequest:
    fields = ObjectReader(body, CANCEL_FIELDS)
    revision_text = fields.raw("expected_revision", required=True)
    if not isinstance(revision_text, str):
        raise InvalidArgument("must be a decimal string such as \"1\"", "expected_revision")
    revision = parse_decimal_uint64(revision_text, "expected_revision", nonzero=True)
    reason = fields.string("reason", required=True, max_chars=MAX_REASON_CHARS)
    assert reason is not None
    if not reason.strip():
        raise InvalidArgument("must not be blank", "reason")
    return CancelRequest(revision, reason)


def cancel_digest(request: CancelRequest) -> Digest:
    return digest(
        OPERATION, {"expected_revision": str(request.expected_revision), "reason": request.reason}
    )


def decide_cancel(state: TaskState, revision: int, request: CancelRequest) -> int:
    """Return the new revision, or raise StateConflict naming why the task cannot be cancelled."""
    if state is not TaskState.WAITING:
        raise StateConflict(f"only WAITING tasks can be cancelled; the task is {state}")
    if revision != request.expected_revision:
        raise StateConflict(
            f"expected_revision {request.expected_revision} does not match revision {revision}"
        )
    check_transition(state, TaskState.CANCELLED)
    return revision + 1
