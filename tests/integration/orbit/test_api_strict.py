"""Strict request reading over HTTP: O-API-2, O-NOTE-3, content type, body size, routes."""

from __future__ import annotations

import httpx
import pytest

from agentcall.orbit.api.app import openapi_text
from tests.integration.orbit.wire import dumps, error, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


def body_with(tenant: Tenant, payload: bytes) -> bytes:
    return dumps(tenant.body(payload=None)).replace(b'"payload":null', b'"payload":' + payload)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b'{"a":1,"a":2}', "duplicate key"),
        (b'{"s":"\\ud800"}', "surrogate"),
        (b'{"s":"\xff"}', "UTF-8"),
        (b'{"s":"\xed\xa0\x80"}', "UTF-8"),
        (b'{"n":1e400}', "exponent"),
        (b'{"n":NaN}', "NaN"),
        (b"[" * 32 + b"]" * 32, "nesting"),  # the payload is depth 2: innermost is 33
        (b"1" + b"0" * 256, "256"),
    ],
)
async def test_o_api_2_rejected_bodies(
    http: httpx.AsyncClient, tenant: Tenant, raw: bytes, fragment: str
) -> None:
    """O-API-2: duplicate keys, lone surrogates, invalid UTF-8, bad numbers, depth > 32."""
    response = await http.post(
        "/v1/tasks", content=body_with(tenant, raw), headers=tenant.headers(key="strict")
    )
    assert fragment in error(response, 400, "INVALID_ARGUMENT")


async def test_o_note_3_depth_32_passes(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-NOTE-3: the top-level body is depth 1, so a payload may nest 31 levels."""
    raw = b"[" * 31 + b"]" * 31  # depths 2..32
    response = await http.post(
        "/v1/tasks", content=body_with(tenant, raw), headers=tenant.headers(key="deep")
    )
    ok(response, 201)


async def test_o_note_3_payload_size_boundary(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-NOTE-3: a payload of exactly 262,144 compact bytes passes; one more byte fails."""
    exact = b'"' + b"x" * 262_142 + b'"'
    ok(
        await http.post(
            "/v1/tasks", content=body_with(tenant, exact), headers=tenant.headers(key="p-exact")
        ),
        201,
    )
    over = b'"' + b"x" * 262_143 + b'"'
    response = await http.post(
        "/v1/tasks", content=body_with(tenant, over), headers=tenant.headers(key="p-over")
    )
    assert error(response, 400, "INVALID_ARGUMENT").startswith("payload")


async def test_o_api_2_body_over_512_kib_is_413(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-API-2: a body above 512 KiB is 413 BODY_TOO_LARGE (declared or streamed)."""
    big = body_with(tenant, b'"' + b"x" * 530_000 + b'"')
    error(
        await http.post("/v1/tasks", content=big, headers=tenant.headers(key="big")),
        413,
        "BODY_TOO_LARGE",
    )

    def chunks() -> object:
        async def gen():  # type: ignore[no-untyped-def]
            for index in range(0, len(big), 65536):
                yield big[index : index + 65536]

        return gen()

    streamed = await http.post("/v1/tasks", content=chunks(), headers=tenant.headers(key="big2"))
    error(streamed, 413, "BODY_TOO_LARGE")


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        (None, 415),
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("application/json; charset=latin-1", 415),
        ("application/json", 201),
        ("Application/JSON; charset=UTF-8", 201),
    ],
)
async def test_o_api_2_content_type(
    http: httpx.AsyncClient, tenant: Tenant, content_type: str | None, status: int
) -> None:
    """O-API-2: writes need Content-Type: application/json (415 otherwise)."""
    headers = tenant.headers(key=f"ct-{(content_type or 'none').replace(' ', '')}")
    headers.pop("Content-Type")
    if content_type:
        headers["Content-Type"] = content_type
    response = await http.post("/v1/tasks", content=dumps(tenant.body()), headers=headers)
    if status == 415:
        error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    else:
        ok(response, 201)


async def test_o_api_2_null_and_body_shape(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-API-2: explicit nulls only for nullable times; the body must be an object."""
    for bad in (tenant.body(handler=None), tenant.body(business_key=None), [tenant.body()]):
        error(
            await http.post("/v1/tasks", content=dumps(bad), headers=tenant.headers(key="n")),
            400,
            "INVALID_ARGUMENT",
        )
    nullable = tenant.body(available_at=None, start_deadline_at=None)
    ok(await http.post("/v1/tasks", content=dumps(nullable), headers=tenant.headers(key="n")), 201)


async def test_unknown_routes_methods_and_query(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """Unknown routes and methods answer 404 in the error format; stray query parameters 400."""
    error(await http.get("/v1/nothing", headers=tenant.headers()), 404, "NOT_FOUND")
    error(await http.delete("/v1/tasks", headers=tenant.headers()), 404, "NOT_FOUND")
    error(
        await http.get(f"/v1/tasks/{'0' * 32}:cancel", headers=tenant.headers()), 404, "NOT_FOUND"
    )
    response = await http.post(
        "/v1/tasks?debug=1", content=dumps(tenant.body()), headers=tenant.headers(key="q")
    )
    assert error(response, 400, "INVALID_ARGUMENT").startswith("debug")


async def test_health_metrics_openapi(http: httpx.AsyncClient) -> None:
    assert (await http.get("/healthz")).json() == {"status": "ok"}
    assert "orbit_http_requests_total" in (await http.get("/metrics")).text
    served = await http.get("/openapi.json")
    assert served.content == openapi_text() and served.json()["openapi"] == "3.1.0"
