"""Batch submit rules (docs/orbit/task-control.md §4): 1-100 items, every bad item listed, the
digest covers every item in order (O-SUB-1, O-SUB-2, O-SUB-3)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agentcall.orbit.domain.batch import (
    MAX_BATCH,
    BatchInvalid,
    ItemError,
    batch_digest,
    parse_batch,
    plan_batch,
    receipt_items,
)
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonNumber
from agentcall.orbit.domain.task import new_task

pytestmark = pytest.mark.unit
NOW = datetime(2026, 9, 17, 12, 0, 0, tzinfo=UTC)


def item(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "queue_id": "a" * 32,
        "handler": "h",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"n": JsonNumber("1")},
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "tasks"),
        ({"tasks": []}, "tasks"),
        ({"tasks": [item()] * (MAX_BATCH + 1)}, "tasks"),
        ({"tasks": item()}, "tasks"),
        ({"tasks": [item()], "extra": 1}, "extra"),
        ([item()], "body"),
    ],
)
def test_batch_shape_rejected(body: Any, field: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_batch(body)
    assert caught.value.field == field and not isinstance(caught.value, BatchInvalid)


@pytest.mark.parametrize(
    ("items", "errors"),
    [
        ([item(), item(handler="-x")], [(1, "handler")]),
        (
            [item(payload=None), item(), item(retry={"max_attempts": 101})],
            [(0, "payload"), (2, "retry.max_attempts")],
        ),
        (
            [item(queue_id="nope"), item(business_key="a\nb")],
            [(0, "queue_id"), (1, "business_key")],
        ),
        (["not an object"], [(0, "body")]),
    ],
)
def test_batch_lists_every_bad_item(items: list[Any], errors: list[tuple[int, str]]) -> None:
    """Every invalid item is reported by index and field; the batch is refused as a whole."""
    with pytest.raises(BatchInvalid) as caught:
        parse_batch({"tasks": items})
    assert [(e.index, e.field) for e in caught.value.items] == errors
    assert f"tasks[{errors[0][0]}]" in caught.value.message


def test_batch_plan_times_lists_late_items() -> None:
    request = parse_batch({"tasks": [item(), item(start_deadline_at="2001-01-01T00:00:00Z")]})
    with pytest.raises(BatchInvalid) as caught:
        plan_batch(request, NOW)
    assert [(e.index, e.field) for e in caught.value.items] == [(1, "start_deadline_at")]


def test_batch_digest_and_receipt() -> None:
    """O-SUB-2: 1 == 1.0 inside items; order and content matter."""
    one = parse_batch({"tasks": [item(), item(handler="g")]})
    same = parse_batch({"tasks": [item(payload={"n": JsonNumber("1.0")}), item(handler="g")]})
    swapped = parse_batch({"tasks": [item(handler="g"), item()]})
    assert batch_digest(one) == batch_digest(same) != batch_digest(swapped)
    tasks = [
        new_task(f"{i:032x}", "n" * 32, req, times, NOW)
        for i, (req, times) in enumerate(zip(one.items, plan_batch(one, NOW), strict=True))
    ]
    assert receipt_items(tasks) == [
        {"index": 0, "task_id": "0" * 32, "state": "WAITING", "revision": "1"},
        {"index": 1, "task_id": "0" * 31 + "1", "state": "WAITING", "revision": "1"},
    ]


def test_batch_invalid_message_is_bounded() -> None:
    errors = [ItemError(i, "handler", "bad") for i in range(25)]
    message = BatchInvalid(errors).message
    assert message.startswith("25 invalid item(s)") and "(and 15 more)" in message
