"""Every failed SaaS read is reported to telemetry by resource and HTTP status, or by
``timeout`` / ``transport_error`` when no status came back; a success reports nothing."""

from __future__ import annotations

import httpx
import pytest

from agentcall.dispatcher.saas.client import SaasClient, SaasError
from agentcall.dispatcher.settings import Secret
from tests.support.telemetry import RecordedTelemetry

from .test_saas_client import D_ID, error

pytestmark = pytest.mark.unit


def answer(status: int) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if status == 0:
            raise httpx.ConnectError("refused", request=request)
        if status == -1:
            raise httpx.ReadTimeout("slow", request=request)
        return httpx.Response(status, content=b"{}" if status == 200 else error("x"))

    return httpx.MockTransport(handle)


@pytest.mark.parametrize(
    ("status", "resource", "reported"),
    [
        (200, "sip", []),
        (503, "sip", [("sip", "503")]),
        (404, "task", [("task", "404")]),
        (401, "quota", [("quota", "401")]),
        (0, "discovery", [("discovery", "transport_error")]),
        (-1, "discovery", [("discovery", "timeout")]),
    ],
)
async def test_each_failed_read_is_reported_once(
    status: int, resource: str, reported: list[tuple[str, str]]
) -> None:
    telemetry = RecordedTelemetry()
    saas = SaasClient(
        "http://saas.invalid", D_ID, Secret("s"), 1.0, transport=answer(status), telemetry=telemetry
    )  # type: ignore[arg-type]
    reads = {
        "sip": saas.sip,
        "task": lambda: saas.task("t"),
        "quota": lambda: saas.quota("tenant"),
        "discovery": lambda: saas.discovery(0),
    }
    try:
        await reads[resource]()
    except SaasError:
        pass
    await saas.aclose()
    assert telemetry.failed == reported
