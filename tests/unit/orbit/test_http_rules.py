"""O-API-2 request rules of the HTTP edge that need no server: content type, single-valued
headers and query parameters, the error table."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from agentcall.orbit.api.errors import ERROR_CODES, wire_error
from agentcall.orbit.api.http import (
    envelope,
    query,
    receipt_envelope,
    require_json_content_type,
    single_header,
)
from agentcall.orbit.domain import errors as e
from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson

pytestmark = pytest.mark.unit


def request(headers: list[tuple[str, str]], query_string: str = "") -> Request:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/tasks",
        "query_string": query_string.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
    }
    return Request(scope)


@pytest.mark.parametrize(
    ("values", "ok"),
    [
        (["application/json"], True),
        (["application/json; charset=utf-8"], True),
        (['APPLICATION/JSON;CHARSET="UTF-8"'], True),
        ([], False),
        (["text/json"], False),
        (["application/json; charset=utf-16"], False),
        (["application/json; boundary=x"], False),
        (["application/json", "application/json"], False),
        (["application/jsonx"], False),
    ],
)
def test_o_api_2_content_type(values: list[str], ok: bool) -> None:
    req = request([("content-type", value) for value in values])
    if ok:
        require_json_content_type(req)
    else:
        with pytest.raises(e.UnsupportedMediaType):
            require_json_content_type(req)


def test_headers_and_query_appear_once() -> None:
    assert single_header(request([("idempotency-key", "a")]), "idempotency-key") == "a"
    assert single_header(request([]), "idempotency-key") is None
    with pytest.raises(e.InvalidArgument, match="once"):
        single_header(
            request([("idempotency-key", "a"), ("idempotency-key", "b")]), "idempotency-key"
        )
    allowed = frozenset({"limit"})
    assert query(request([], "limit=5"), allowed) == {"limit": "5"}
    with pytest.raises(e.InvalidArgument, match="once"):
        query(request([], "limit=5&limit=6"), allowed)
    with pytest.raises(e.InvalidArgument, match="unknown"):
        query(request([], "Limit=5"), allowed)


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (e.InvalidArgument("x", "f"), 400, "INVALID_ARGUMENT"),
        (e.Unauthenticated("x"), 401, "UNAUTHENTICATED"),
        (e.PermissionDenied("x"), 403, "PERMISSION_DENIED"),
        (e.NotFound("x"), 404, "NOT_FOUND"),
        (e.IdempotencyConflict("x"), 409, "IDEMPOTENCY_CONFLICT"),
        (e.StateConflict("x"), 409, "STATE_CONFLICT"),
        (e.IllegalTransition("x"), 409, "STATE_CONFLICT"),
        (e.BodyTooLarge("x"), 413, "BODY_TOO_LARGE"),
        (e.UnsupportedMediaType("x"), 415, "UNSUPPORTED_MEDIA_TYPE"),
        (e.Unavailable("x"), 503, "UNAVAILABLE"),
        (RuntimeError("bug"), 500, "INTERNAL"),
    ],
)
def test_o_err_1_error_table(exc: BaseException, status: int, code: str) -> None:
    """O-ERR-1: one table, looked up along the class hierarchy; an unknown failure is a
    defect of the server, 500 INTERNAL (never 503: see test_error_truth.py)."""
    wire = wire_error(exc)
    assert (wire.status, wire.code) == (status, code)
    assert code in ERROR_CODES


@pytest.mark.parametrize(
    ("request_id", "status", "deduplicated", "task_text"),
    [
        ("0" * 32, 201, False, '{"id":"t","payload":{"n":9007199254740993}}'),
        ("f" * 32, 200, True, '{"id":"t","business_key":"é\\"x"}'),
        ('odd"id\\é', 200, True, "{}"),  # never from new_id, but encoded all the same
    ],
)
def test_receipt_envelope_is_the_generic_envelope(
    request_id: str, status: int, deduplicated: bool, task_text: str
) -> None:
    """The submit answer written directly is byte for byte the generic envelope."""
    data: dict[str, JsonValue] = {"deduplicated": deduplicated, "task": RawJson(task_text)}
    fast = receipt_envelope(request_id, status, deduplicated, task_text)
    generic = envelope(request_id, status, data=data)
    assert (fast.status_code, fast.raw_headers, fast.body) == (
        generic.status_code,
        generic.raw_headers,
        generic.body,
    )
