"""The request of a bulk operation (docs/orbit/bulk.md): what is refused before anything is
matched, and the per-task request each matched task gets."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.bulk import BulkAction, parse_bulk
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonValue

pytestmark = pytest.mark.unit
QUEUE = "1" * 32


def request(action: str = "retry", **fields: JsonValue) -> dict[str, JsonValue]:
    where: dict[str, JsonValue] = {"queue_id": QUEUE, "state": "FAILED"}
    return {"filter": where, "action": action, "reason": "fixed", **fields}


def refused_field(value: JsonValue) -> str:
    with pytest.raises(InvalidArgument) as caught:
        parse_bulk(value)
    return str(caught.value.field)


def test_a_filter_of_the_queue_alone_is_refused() -> None:
    assert refused_field({**request(), "filter": {"queue_id": QUEUE}}) == "filter"


def test_a_null_filter_field_is_refused_not_read_as_unset() -> None:
    where: JsonValue = {"queue_id": QUEUE, "state": "FAILED", "created_from": None}
    assert refused_field({**request(), "filter": where}) == "filter.created_from"


def test_a_retry_of_tasks_that_cannot_be_retried_is_refused() -> None:
    where: JsonValue = {"queue_id": QUEUE, "state": "WAITING"}
    assert refused_field({**request(), "filter": where}) == "filter.state"


def test_the_fields_of_another_action_are_refused() -> None:
    assert refused_field(request("cancel", outcome="failed")) == "outcome"


def test_a_resolve_is_checked_as_each_task_resolve_will_be() -> None:
    assert refused_field(request("resolve", outcome="succeeded")) == "result"


def test_each_task_gets_the_action_fields_and_its_matched_revision() -> None:
    parsed = parse_bulk(request("cancel"))
    assert parsed.action is BulkAction.CANCEL
    assert parsed.task_body(7) == {"reason": "fixed", "expected_revision": "7"}
