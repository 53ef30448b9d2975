"""The SaaS client: auth headers, error mapping, no secret in errors (D-ID-2, D-CFG-4, D-DISC-9)."""

from __future__ import annotations

import json

import httpx
import pytest

from agentcall.dispatcher.saas.client import SaasClient, SaasRefused, SaasUnavailable
from agentcall.dispatcher.settings import Secret

D_ID = "c046b893-8628-4589-ae50-619d049248a6"
SECRET = "top-secret-value"


def error(code: str, schema: str = "config-read.v0.1") -> bytes:
    body = {"schema_version": schema, "resource": "error", "error": {"code": code, "message": "m"}}
    return json.dumps(body).encode()


def client(handler: httpx.MockTransport) -> SaasClient:
    return SaasClient("http://saas.invalid", D_ID, Secret(SECRET), 1.0, transport=handler)


async def test_headers_and_no_body_d_id_2() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b"{}")

    saas = client(httpx.MockTransport(handle))
    assert await saas.discovery(42) == b"{}"
    await saas.aclose()
    request = seen[0]
    assert request.headers["x-dispatcher-id"] == D_ID
    assert request.headers["x-dispatcher-secret-key"] == SECRET
    assert request.url.params["after"] == "42"
    assert request.content == b"" and "if-none-match" not in request.headers


@pytest.mark.parametrize(
    ("status", "body", "kind", "code"),
    [
        (404, error("resource_not_found"), SaasRefused, "resource_not_found"),
        (401, error("unauthorized"), SaasRefused, "unauthorized"),
        (403, error("dispatcher_not_authorized"), SaasRefused, "dispatcher_not_authorized"),
        (503, error("tenant_quota_unavailable"), SaasUnavailable, "tenant_quota_unavailable"),
        (503, b"<html>", SaasUnavailable, "invalid_error_body"),
        (302, b"", SaasUnavailable, "unexpected_status"),
    ],
)
async def test_error_mapping(status: int, body: bytes, kind: type, code: str) -> None:
    saas = client(httpx.MockTransport(lambda r: httpx.Response(status, content=body)))
    with pytest.raises(kind) as info:
        await saas.quota("tenant-1")
    await saas.aclose()
    assert info.value.code == code  # type: ignore[attr-defined]
    assert SECRET not in str(info.value)


async def test_404_is_not_found_d_cfg_4() -> None:
    saas = client(
        httpx.MockTransport(lambda r: httpx.Response(404, content=error("resource_not_found")))
    )
    with pytest.raises(SaasRefused) as info:
        await saas.task("task-a")
    await saas.aclose()
    assert info.value.not_found


async def test_transport_failure_is_unavailable() -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    saas = client(httpx.MockTransport(boom))
    with pytest.raises(SaasUnavailable) as info:
        await saas.sip()
    await saas.aclose()
    assert info.value.code == "transport_error" and SECRET not in str(info.value)
