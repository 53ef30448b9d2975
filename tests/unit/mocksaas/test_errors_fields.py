"""Exception tree -> wire errors, and strict admin field readers."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.mocksaas import errors as e
from agentcall.mocksaas.ops import fields


@pytest.mark.parametrize(
    ("exc", "wire"),
    [
        (e.Unauthorized("x"), (401, "unauthorized")),
        (e.DispatcherNotAuthorized("x"), (403, "dispatcher_not_authorized")),
        (e.ResourceNotFound("x"), (404, "resource_not_found")),
        (e.InvalidCursor("x"), (400, "invalid_cursor")),
        (e.TenantQuotaUnavailable("x"), (503, "tenant_quota_unavailable")),
        (e.ServiceUnavailable("x"), (503, "service_unavailable")),
        (e.InvalidRequest("f", "bad"), (400, "invalid_request")),
        (e.TaskQueueLimit("x"), (409, "task_queue_limit")),
        (e.IllegalTransition("x"), (409, "illegal_transition")),
        (e.Conflict("x"), (409, "conflict")),
        (e.NotFound("x"), (404, "not_found")),
        (e.ConfigurationError("x"), (500, "internal_error")),
    ],
)
def test_wire_error_table(exc: e.MockSaasError, wire: tuple[int, str]) -> None:
    assert e.wire_error(exc) == wire
    assert exc.hint


def test_invalid_request_names_the_field() -> None:
    exc = e.InvalidRequest("count", "must be positive")
    assert exc.field == "count" and exc.message.startswith("count:")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: fields.only({"a": 1, "zz": 2}, {"a"}), "zz"),
        (lambda: fields.get_int({"n": "1"}, "n", 0, 0, 9), "n"),
        (lambda: fields.get_int({"n": True}, "n", 0, 0, 9), "n"),
        (lambda: fields.get_int({"n": 10}, "n", 0, 0, 9), "n"),
        (lambda: fields.req_str({}, "s"), "s"),
        (lambda: fields.opt_str({"s": ""}, "s"), "s"),
        (lambda: fields.opt_bool({"b": "yes"}, "b"), "b"),
        (lambda: fields.opt_str_list({"l": ["a", 1]}, "l"), "l"),
        (lambda: fields.opt_time({"t": "2026-01-01T00:00:00"}, "t"), "t"),
        (lambda: fields.opt_time({"t": "yesterday"}, "t"), "t"),
        (lambda: fields.choice({"c": "x"}, "c", ("a", "b"), None), "c"),
        (lambda: fields.as_object([1]), "body"),
    ],
)
def test_fields_fail_closed_naming_the_field(call: Any, field: str) -> None:
    with pytest.raises(e.InvalidRequest) as info:
        call()
    assert info.value.field == field


def test_fields_accept_good_values() -> None:
    assert fields.get_int({}, "n", 5, 0, 9) == 5
    assert fields.opt_str_list({"l": ["a"]}, "l") == ("a",)
    assert fields.opt_time({"t": "2026-01-01T00:00:00Z"}, "t") is not None
    assert fields.choice({}, "c", ("a", "b"), "a") == "a"
