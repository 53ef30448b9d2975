"""The bulk operation calls as `Call`s (what to send, how to read the answer), written once for
the blocking and the asyncio client (`agentcall.orbit.sdk.client.bulk`). A start carries an
idempotency key: after `TransportError` or `UnavailableError` resend it with the same key (the
answer is then the operation it started). A cancel is idempotent by nature."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentcall.orbit.sdk.client._calls import Call, checked_id, encode
from agentcall.orbit.sdk.client.binding import Page
from agentcall.orbit.sdk.client.bulk_models import (
    BulkOperation,
    BulkOperationPage,
    BulkPreview,
    BulkRequest,
    BulkStarted,
    BulkTask,
    BulkTaskPage,
)
from agentcall.orbit.sdk.client.models import page_params

BASE = "/v1/bulk-operations"
MAX_LIMIT = 100


def operation_path(operation_id: str) -> str:
    return f"{BASE}/{checked_id(operation_id, 'operation_id')}"


def _operation(data: Any, _: str) -> BulkOperation:
    return BulkOperation.from_json(data)


def _limit(limit: int | None) -> int | None:
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be 1-{MAX_LIMIT}")
    return limit


def preview(request: BulkRequest) -> Call[BulkPreview]:
    """How many tasks the request would act on now, and the newest 10; writes nothing."""
    return Call(
        "POST",
        BASE + ":preview",
        lambda data, _: BulkPreview.from_json(data),
        headers={"Content-Type": "application/json"},
        content=encode(request.to_json()),
    )


def start(key: str, request: BulkRequest) -> Call[BulkStarted]:
    """Start the operation: the matching tasks are recorded now and acted on in batches."""

    def started(data: Any, request_id: str) -> BulkStarted:
        operation = BulkOperation.from_json(data["operation"])
        return BulkStarted(operation, bool(data["deduplicated"]), request_id)

    return Call(
        "POST",
        BASE,
        started,
        ok=frozenset({200, 201}),
        headers={"Content-Type": "application/json", "Idempotency-Key": key},
        content=encode(request.to_json()),
    )


def get(operation_id: str) -> Call[BulkOperation]:
    """One operation and its progress."""
    return Call("GET", operation_path(operation_id), _operation)


def list_page(limit: int | None = None, cursor: str | None = None) -> Call[BulkOperationPage]:
    """One page of the operations on the token's queues, newest first."""
    params = page_params(_limit(limit), cursor)
    return Call("GET", BASE, lambda data, _: BulkOperationPage.from_json(data), params=params)


def every() -> Callable[[str | None], Call[Page[BulkOperation]]]:
    """Every operation on the token's queues, newest first, page after page."""

    def page(cursor: str | None) -> Call[Page[BulkOperation]]:
        plain = list_page(MAX_LIMIT, cursor)
        return Call(plain.method, plain.path, plain.parse, params=plain.params)

    return page


def tasks(
    operation_id: str,
    outcome: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[BulkTaskPage]:
    """One page of the tasks the operation matched (only those with `outcome`, if given)."""
    params = ({"outcome": outcome} if outcome else {}) | page_params(_limit(limit), cursor)
    path = operation_path(operation_id) + "/tasks"
    return Call("GET", path, lambda data, _: BulkTaskPage.from_json(data), params=params)


def every_task(
    operation_id: str, outcome: str | None = None
) -> Callable[[str | None], Call[Page[BulkTask]]]:
    """Every task the operation matched (with `outcome`, if given), page after page."""

    def page(cursor: str | None) -> Call[Page[BulkTask]]:
        plain = tasks(operation_id, outcome, MAX_LIMIT, cursor)
        return Call(plain.method, plain.path, plain.parse, params=plain.params)

    return page


def cancel(operation_id: str) -> Call[BulkOperation]:
    """Stop a running operation (the batch in flight is finished and recorded); a finished
    one is answered as it is."""
    return Call("POST", operation_path(operation_id) + ":cancel", _operation)
