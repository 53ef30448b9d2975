"""Every endpoint answers a field of the wrong JSON type with 400 INVALID_ARGUMENT naming the
field, over HTTP against `orbit serve` on both databases (`:resolve` with an
object as `outcome` raised TypeError inside the server and answered 503 "retry with the same
key", so a client following the advice retried forever). The pure parsers are fuzzed in
tests/unit/orbit/test_hostile_fields.py."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest

from tests.integration.orbit.wire import error
from tests.support.orbit_server import Tenant

pytestmark = pytest.mark.integration
TASK = "1" * 32
WRONG: list[Any] = [{"a": "b"}, ["x"], 7, True]
CANCEL = {"expected_revision": "1", "reason": "r"}
RESOLVE = {
    "expected_revision": "1",
    "outcome": "failed",
    "reason": "r",
    "error": {"code": "c", "message": "m"},
}


def _submit(tenant: Tenant) -> dict[str, Any]:
    return tenant.body(
        business_key="b",
        recovery_safety="IDEMPOTENT",
        task_timeout_ms=60000,
        retry={"max_attempts": 2},
    )


def _cases(tenant: Tenant) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(path, a valid body, the fields to spoil)."""
    submit = _submit(tenant)
    fields = [k for k in submit if k != "payload"]  # any JSON but null is a payload
    return [
        ("/v1/tasks", submit, fields),
        ("/v1/tasks:batch", {"tasks": [submit]}, ["tasks"]),
        (f"/v1/tasks/{TASK}:cancel", CANCEL, list(CANCEL)),
        (f"/v1/tasks/{TASK}:retry", CANCEL, list(CANCEL)),
        (f"/v1/tasks/{TASK}:resolve", RESOLVE, list(RESOLVE)),
    ]


async def test_every_field_of_every_endpoint_with_a_wrong_type_is_400(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    for path, body, fields in _cases(tenant):
        for field in fields:
            for wrong in WRONG:
                spoiled = json.dumps({**body, field: wrong})
                headers = tenant.headers(key=os.urandom(6).hex())
                response = await http.post(path, content=spoiled, headers=headers)
                assert response.status_code == 400, (path, field, wrong, response.text)
                found = response.json()["error"]
                assert found["code"] == "INVALID_ARGUMENT"
                assert field in json.dumps(found), (path, field, wrong, found)


@pytest.mark.parametrize("outcome", [{"a": "b"}, ["succeeded"]])
async def test_resolve_with_an_object_or_array_outcome_is_400_not_503(
    http: httpx.AsyncClient, tenant: Tenant, outcome: Any
) -> None:
    response = await http.post(
        f"/v1/tasks/{TASK}:resolve",
        content=json.dumps({**RESOLVE, "outcome": outcome}),
        headers=tenant.headers(key="resolve-type"),
    )
    assert "outcome" in error(response, 400, "INVALID_ARGUMENT")


async def test_nested_wrong_types_in_batch_items_are_400(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = {
        "tasks": [
            {**_submit(tenant), "retry": {"max_attempts": {"n": 1}}},
            {**_submit(tenant), "recovery_safety": ["IDEMPOTENT"]},
        ]
    }
    response = await http.post(
        "/v1/tasks:batch", content=json.dumps(body), headers=tenant.headers(key="batch-types")
    )
    assert response.status_code == 400, response.text
    assert [item["index"] for item in response.json()["error"]["items"]] == [0, 1]
