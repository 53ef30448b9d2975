"""Bulk operations (docs/orbit/bulk.md): one action (cancel, retry, resolve) on every
task a search filter (`agentcall.orbit.domain.search`) matched when the operation started,
run in batches by whichever server process holds its claim.

Pure parts: the request (`parse_bulk`), the per-task request each matched task gets (its
expected revision is the one it had when matched), the outcome of one task's write, the
progress arithmetic and the claim rule. A task acted on is DONE; one that changed since it
was matched (or left the states the action applies to) is SKIPPED with the reason; any other
refusal is FAILED with its message."""

from __future__ import annotations

import base64
import binascii
import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

from agentcall.orbit.domain.cancel import parse_cancel
from agentcall.orbit.domain.errors import Conflict, InvalidArgument, NotFound, OrbitError
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.ids import is_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.review import RETRYABLE, parse_resolve, parse_retry
from agentcall.orbit.domain.search import TaskFilter, filter_json, parse_filter
from agentcall.orbit.domain.times import format_time, parse_time

MAX_MATCHED = 100_000  # tasks one operation may act on (narrow the filter for more)
SAMPLE_SIZE = 10  # tasks a preview shows
BATCH_SIZE = 200  # tasks read and acted on per batch (one progress write each)
MAX_MESSAGE_CHARS = 255  # what a task's outcome message keeps (bulk_operation_tasks.message)
ACTION_FIELDS = {
    "cancel": frozenset({"reason"}),
    "retry": frozenset({"reason"}),
    "resolve": frozenset({"reason", "outcome", "result", "error"}),
}


class BulkAction(enum.StrEnum):
    CANCEL = "cancel"
    RETRY = "retry"
    RESOLVE = "resolve"


class BulkState(enum.StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"  # every matched task has an outcome (some may be SKIPPED/FAILED)
    CANCELLED = "CANCELLED"  # stopped by an operator; the tasks not reached keep no outcome
    FAILED = "FAILED"  # stopped: its token can no longer act (revoked, expired, narrowed)

    @property
    def finished(self) -> bool:
        return self is not BulkState.RUNNING


class Outcome(enum.StrEnum):
    DONE = "DONE"
    SKIPPED = "SKIPPED"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class BulkRequest:
    """What `POST /v1/bulk-operations` (and its preview) asks: the filter, the action and the
    action's fields (everything of the per-task request but `expected_revision`)."""

    where: TaskFilter
    action: BulkAction
    body: dict[str, JsonValue]

    def task_body(self, revision: int) -> dict[str, JsonValue]:
        return task_body(self.body, revision)


def parse_bulk(value: JsonValue) -> BulkRequest:
    """The request, checked as each task's request will be (so a bad reason or outcome is
    refused at once, not once per task); an empty filter is refused: a bulk operation on a
    whole queue must say which tasks (at least a state)."""
    if not isinstance(value, dict):
        raise InvalidArgument("must be a JSON object", "body")
    action_text = value.get("action")
    if not isinstance(action_text, str) or action_text not in ACTION_FIELDS:
        raise InvalidArgument("must be one of cancel, retry, resolve", "action")
    action = BulkAction(action_text)
    allowed = ACTION_FIELDS[action.value] | {"filter", "action"}
    reader = ObjectReader(value, allowed)
    where = parse_filter(_no_nulls(reader.raw("filter", required=True)), "filter.")
    if not where.narrowed:
        raise InvalidArgument(
            "must narrow the queue by at least one field (state, handler, business key, "
            "error code or a time range)",
            "filter",
        )
    if action is BulkAction.RETRY and where.state is not None and where.state not in RETRYABLE:
        raise InvalidArgument("a retry applies to FAILED or NEEDS_REVIEW tasks", "filter.state")
    body = {k: v for k, v in value.items() if k not in ("filter", "action")}
    _check_task_request(action, body)
    return BulkRequest(where, action, body)


def _no_nulls(value: JsonValue) -> JsonValue:
    """A stored filter names only the fields it sets: null (which the search parser reads as
    "not set" for a time) is refused, so the request is exactly the filter it describes."""
    if isinstance(value, dict):
        for key, item in value.items():
            if item is None:
                raise InvalidArgument("must not be null (leave the field out)", f"filter.{key}")
    return value


def task_body(body: dict[str, JsonValue], revision: int) -> dict[str, JsonValue]:
    """The per-task request: the action's fields and the revision the task was matched with."""
    return {**body, "expected_revision": str(revision)}


def _check_task_request(action: BulkAction, body: dict[str, JsonValue]) -> None:
    sample = task_body(body, 1)
    if action is BulkAction.CANCEL:
        parse_cancel(sample)
    elif action is BulkAction.RETRY:
        parse_retry(sample)
    else:
        parse_resolve(sample)


def outcome_of(exc: OrbitError) -> tuple[Outcome, str]:
    """A refused task write: a conflict (revision or state changed since matched) or a task
    no longer visible is SKIPPED; anything else FAILED. The message is kept short."""
    outcome = Outcome.SKIPPED if isinstance(exc, Conflict | NotFound) else Outcome.FAILED
    return outcome, exc.message[:MAX_MESSAGE_CHARS]


@dataclass(frozen=True, slots=True)
class Progress:
    matched: int
    done: int = 0
    skipped: int = 0
    failed: int = 0

    @property
    def reached(self) -> int:
        return self.done + self.skipped + self.failed

    @property
    def complete(self) -> bool:
        return self.reached >= self.matched

    def add(self, outcomes: list[Outcome]) -> Progress:
        return Progress(
            self.matched,
            self.done + outcomes.count(Outcome.DONE),
            self.skipped + outcomes.count(Outcome.SKIPPED),
            self.failed + outcomes.count(Outcome.FAILED),
        )


def next_batch(next_seq: int, matched: int, size: int = BATCH_SIZE) -> range:
    """The sequence numbers of the next batch (empty: nothing left)."""
    return range(next_seq, min(matched, next_seq + size))


def claimable(
    state: BulkState, claimed_by: str | None, claim_until: datetime | None, now: datetime
) -> bool:
    """A running operation is free to claim when no process holds it or its claim lapsed
    (its process stopped or died without finishing)."""
    if state is not BulkState.RUNNING:
        return False
    return claimed_by is None or claim_until is None or claim_until <= now


def claim_deadline(now: datetime, claim_s: float) -> datetime:
    return now + timedelta(seconds=claim_s)


@dataclass(frozen=True, slots=True)
class BulkOperation:
    """One stored operation (a row of bulk_operations, without its tasks)."""

    id: str
    namespace_id: str
    token_id: str
    queue_id: str
    filter: TaskFilter
    action: BulkAction
    body: dict[str, JsonValue]
    state: BulkState
    progress: Progress
    next_seq: int
    error: str | None
    request_id: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


def operation_view(op: BulkOperation) -> dict[str, JsonValue]:
    """The operation's JSON (the API's `BulkOperation`)."""
    p = op.progress
    out: dict[str, JsonValue] = {
        "id": op.id,
        "queue_id": op.queue_id,
        "filter": dict(filter_json(op.filter)),
        "action": op.action.value,
        "params": dict(op.body),
        "state": op.state.value,
        "matched": p.matched,
        "done": p.done,
        "skipped": p.skipped,
        "failed": p.failed,
        "created_at": format_time(op.created_at),
        "updated_at": format_time(op.updated_at),
        "finished_at": None if op.finished_at is None else format_time(op.finished_at),
        "error": op.error,
    }
    return out


def encode_list_cursor(op: BulkOperation) -> str:
    """The opaque cursor of `GET /v1/bulk-operations`: the last item's (created_at, id)."""
    text = f"b1|{format_time(op.created_at)}|{op.id}"
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def decode_list_cursor(text: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
        version, created, operation_id = raw.split("|")
        if version != "b1" or not is_id(operation_id):
            raise ValueError(raw)
        return parse_time(created, "cursor"), operation_id
    except (ValueError, binascii.Error, InvalidArgument):
        raise InvalidArgument("is not a cursor of this list", "cursor") from None


def parse_outcome(text: str | None) -> Outcome | None:
    if text is None:
        return None
    if text not in Outcome.__members__:
        raise InvalidArgument(f"must be one of {', '.join(Outcome)}", "outcome")
    return Outcome(text)


def parse_seq_cursor(text: str | None) -> int | None:
    """The cursor of an operation's task list: the last sequence number read."""
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise InvalidArgument("is not a cursor of this list", "cursor")
    return int(text)
