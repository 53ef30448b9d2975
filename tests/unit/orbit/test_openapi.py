"""The OpenAPI 3.1 document kept in the repo matches the application: every route and method,
every error code (with its status), and the task views' fields."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route

from agentcall.orbit.api.app import openapi_text
from agentcall.orbit.api.errors import ERROR_CODES, ERROR_TABLE, INTERNAL
from agentcall.orbit.api.transport import HEADER_TIMEOUT_S, MAX_HEADER_BYTES
from agentcall.orbit.assembly.server import create_app
from agentcall.orbit.domain.bulk import (
    ACTION_FIELDS,
    BulkOperation,
    BulkState,
    Progress,
    operation_view,
    parse_bulk,
)
from agentcall.orbit.domain.jsonvalue import JsonNumber
from agentcall.orbit.domain.search import FILTER_FIELDS
from agentcall.orbit.domain.submit import RETRY_FIELDS, SUBMIT_FIELDS, parse_submit, plan_times
from agentcall.orbit.domain.task import cancelled, new_task, summarize, summary_view, task_view
from agentcall.orbit.store.db import Database

pytestmark = pytest.mark.unit
DOC: dict[str, Any] = json.loads(openapi_text())
STATUS = {wire.code: wire.status for wire in (*ERROR_TABLE.values(), INTERNAL)}

# what each operation can answer, beyond success (O-ERR-1)
EXPECTED = {
    ("/v1/tasks", "post"): {
        "INVALID_ARGUMENT",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "IDEMPOTENCY_CONFLICT",
        "BODY_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "UNAVAILABLE",
    },
    ("/v1/tasks", "get"): {
        "INVALID_ARGUMENT",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "UNAVAILABLE",
    },
    ("/v1/tasks/{task_id}", "get"): {
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "UNAVAILABLE",
    },
    ("/v1/tasks/{task_id}:cancel", "post"): {
        "INVALID_ARGUMENT",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "IDEMPOTENCY_CONFLICT",
        "STATE_CONFLICT",
        "BODY_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "UNAVAILABLE",
    },
    # inspection
    **{
        (path, "get"): {"INVALID_ARGUMENT", "UNAUTHENTICATED", "PERMISSION_DENIED", "UNAVAILABLE"}
        for path in ("/v1/queues", "/v1/workers", "/v1/audit")
    },
    ("/v1/queues/{queue_id}", "get"): {
        "INVALID_ARGUMENT",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "UNAVAILABLE",
    },
    ("/v1/queues/{queue_id}", "patch"): {
        "INVALID_ARGUMENT",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "STATE_CONFLICT",
        "BODY_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "UNAVAILABLE",
    },
    # task control
    ("/v1/tasks:batch", "post"): {
        "INVALID_ARGUMENT",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "IDEMPOTENCY_CONFLICT",
        "BODY_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "UNAVAILABLE",
    },
    **{
        (f"/v1/tasks/{{task_id}}:{op}", "post"): {
            "INVALID_ARGUMENT",
            "UNAUTHENTICATED",
            "PERMISSION_DENIED",
            "NOT_FOUND",
            "IDEMPOTENCY_CONFLICT",
            "STATE_CONFLICT",
            "BODY_TOO_LARGE",
            "UNSUPPORTED_MEDIA_TYPE",
            "UNAVAILABLE",
        }
        for op in ("retry", "resolve")
    },
}


def documented_codes(operation: dict[str, Any]) -> dict[str, int]:
    found: dict[str, int] = {}
    for status, response in operation["responses"].items():
        content = response.get("content", {}).get("application/json", {})
        for example in content.get("examples", {}).values():
            found[example["value"]["error"]["code"]] = int(status)
    return found


def test_every_route_is_described(tmp_path: Path) -> None:
    """Every route the app serves (batch, retry and resolve too) is in the document, and
    nothing else."""
    app = create_app(Database.open(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"))
    served = {
        (route.path, method.lower())
        for route in app.routes
        if isinstance(route, Route) and not route.path.startswith("/ui")  # the console: HTML
        for method in (route.methods or set()) - {"HEAD"}
    }
    described = {(path, method) for path, item in DOC["paths"].items() for method in item}
    assert served == described
    assert DOC["openapi"] == "3.1.0"


def test_every_error_code_is_described_with_its_status() -> None:
    """O-ERR-1: each code appears with the status of the error table, on the right routes."""
    everywhere: dict[str, int] = {}
    for (path, method), expected in EXPECTED.items():
        codes = documented_codes(DOC["paths"][path][method])
        assert expected <= set(codes), (path, method, expected - set(codes))
        everywhere.update(codes)
    assert set(everywhere) == ERROR_CODES
    assert everywhere == {code: STATUS[code] for code in everywhere}
    enum = DOC["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
    assert set(enum["enum"]) == ERROR_CODES


def test_task_schemas_match_the_views() -> None:
    """Every field the server writes is described; every required field is always written."""
    request = parse_submit(
        {
            "queue_id": "1" * 32,
            "handler": "h",
            "handler_version": "v",
            "payload_version": "v",
            "payload": {"n": JsonNumber("1")},
            "business_key": "b",
            "start_deadline_at": "2026-09-17T01:00:00Z",
        }
    )
    now = datetime(2026, 9, 17, tzinfo=UTC)
    task = cancelled(new_task("2" * 32, "3" * 32, request, plan_times(request, now), now), 2, now)
    schemas = DOC["components"]["schemas"]
    for view, schema in (
        (task_view(task), schemas["Task"]),
        (summary_view(summarize(task)), schemas["TaskSummary"]),
    ):
        assert set(view) <= set(schema["properties"])
        assert set(schema["required"]) <= set(view)
    submit_fields = set(schemas["SubmitTaskRequest"]["properties"])
    assert submit_fields == SUBMIT_FIELDS
    assert set(schemas["SubmitTaskRequest"]["properties"]["retry"]["properties"]) == RETRY_FIELDS


def test_every_reference_resolves() -> None:
    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            own = [node["$ref"]] if "$ref" in node else []
            return own + [r for value in node.values() for r in refs(value)]
        if isinstance(node, list):
            return [r for value in node for r in refs(value)]
        return []

    for ref in refs(DOC):
        target: Any = DOC
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        assert isinstance(target, dict), ref


def test_every_operation_documents_the_http_layer_refusals() -> None:
    """Any request can be refused before routing, whatever its operation: a head over
    MAX_HEADER_BYTES (431) or not arrived within HEADER_TIMEOUT_S (408), answered as plain text
    (the long Schemathesis profile met an undocumented 431)."""
    for path, item in DOC["paths"].items():
        for method, operation in item.items():
            for status in ("408", "431"):
                response = operation["responses"].get(status)
                assert response is not None, (method, path, status)
                assert set(response["content"]) == {"text/plain"}, (method, path, status)
    described = DOC["paths"]["/v1/tasks"]["post"]["responses"]
    assert f"{MAX_HEADER_BYTES // 1024} KiB" in described["431"]["description"]
    assert f"{HEADER_TIMEOUT_S:g} s" in described["408"]["description"]


def test_bulk_schemas_match_the_views() -> None:
    """The bulk filter is the search filter; an operation's view writes what is described."""
    schemas = DOC["components"]["schemas"]
    assert set(schemas["BulkFilter"]["properties"]) == FILTER_FIELDS
    request = parse_bulk(
        {"filter": {"queue_id": "1" * 32, "state": "FAILED"}, "action": "retry", "reason": "r"}
    )
    now = datetime(2026, 9, 17, tzinfo=UTC)
    op = BulkOperation(
        *("2" * 32, "3" * 32, "4" * 32, "1" * 32),
        request.where,
        request.action,
        request.body,
        BulkState.RUNNING,
        Progress(3, 1, 1, 0),
        2,
        None,
        "5" * 32,
        now,
        now,
        None,
    )
    view = operation_view(op)
    assert set(view) == set(schemas["BulkOperation"]["properties"])
    assert set(schemas["BulkOperation"]["required"]) <= set(view)
    actions = {
        variant["properties"]["action"]["const"]: set(variant["properties"]) - {"filter", "action"}
        for variant in schemas["BulkOperationRequest"]["oneOf"]
    }
    assert actions == {name: set(fields) for name, fields in ACTION_FIELDS.items()}
