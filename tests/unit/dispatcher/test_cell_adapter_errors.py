"""The cell adapter's error mapping: a used call_id is never "nothing dialled" (crash rule).

The cell's HTTP answers are served by an httpx MockTransport behind the real
``agentcall.cell.client.CellClient``; nothing of the cell's internals is imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from agentcall.cell.client import CellClient
from agentcall.dispatcher.cell.adapter import CellAdapter
from agentcall.dispatcher.cell.port import (
    CallIdTaken,
    CellPlan,
    CellRejected,
    CellTrunk,
    CellUnavailable,
)

PLAN = CellPlan(
    call_id="exec-1",
    trunk=CellTrunk("trunk-mock", ""),
    caller_id="BD00000000",
    callee="15000000001",
    ring_timeout_ms=30000,
    max_duration_ms=120000,
    agent={"mode": "asr_only"},
    tags={},
)


def adapter(handler: Callable[[httpx.Request], httpx.Response]) -> CellAdapter:
    cell = CellAdapter("http://cell.invalid")
    cell._client = CellClient("http://cell.invalid", transport=httpx.MockTransport(handler))
    return cell


def error(status: int, code: str) -> Callable[[httpx.Request], httpx.Response]:
    body = {"error": {"code": code, "message": f"{code} from the cell"}}
    return lambda request: httpx.Response(status, json=body)


@pytest.mark.parametrize(
    ("status", "code", "raised"),
    [
        (409, "already_dialled", CallIdTaken),
        (409, "call_id_conflict", CallIdTaken),
        (422, "invalid_plan", CellRejected),
        (422, "unknown_provider", CellRejected),
        (503, "cell_busy", CellRejected),
        (503, "cell_draining", CellRejected),
        (500, "internal", CellUnavailable),  # may have dialled: unknown
    ],
)
async def test_originate_errors_map_to_port_outcomes(
    status: int, code: str, raised: type[Exception]
) -> None:
    """AlreadyDialled / CallIdConflict mean the call_id exists: unknown, not refused."""
    cell = adapter(error(status, code))
    with pytest.raises(raised) as caught:
        await cell.originate(PLAN)
    if raised is CallIdTaken:
        assert isinstance(caught.value, CellUnavailable)  # the supervisor marks it unknown
        assert not isinstance(caught.value, CellRejected)
        assert caught.value.code == code  # type: ignore[attr-defined]
    await cell.aclose()


async def test_unreachable_cell_is_unknown() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    cell = adapter(down)
    with pytest.raises(CellUnavailable):
        await cell.originate(PLAN)
    await cell.aclose()


async def test_upload_answer_and_refusal_d_rec_1() -> None:
    answer = {
        "call_id": "exec-1",
        "upload_id": "upload-exec-1",
        "status": "expired",
        "put_started": False,
        "http_status": None,
        "error_code": "upload_authorization_expired",
        "message": "expired",
        "expires_at": "2026-09-18T10:15:00Z",
        "size_bytes": 10,
        "sha256": "a" * 64,
    }
    seen: list[dict[str, object]] = []

    def ok(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=answer)

    cell = adapter(ok)
    got = await cell.upload_recording("exec-1", "upload-exec-1", "http://s3/put?sig", {})
    assert (got.status, got.error_code, got.put_started) == (
        "expired",
        "upload_authorization_expired",
        False,
    )
    assert seen == [{"upload_id": "upload-exec-1", "url": "http://s3/put?sig", "headers": {}}]
    await cell.aclose()

    refused = adapter(error(409, "upload_not_allowed"))
    with pytest.raises(CellRejected) as caught:
        await refused.upload_recording("exec-1", "upload-exec-1", "http://s3/put?sig", {})
    assert caught.value.code == "upload_not_allowed"
    await refused.aclose()


async def test_orphans_are_listed_with_their_upload_state() -> None:
    body = {
        "orphans": [
            {
                "call_id": "exec-7",
                "boot_id": "boot-a",
                "path": "/x/exec-7.wav",
                "complete": True,
                "partial": True,
                "size_bytes": 160044,
                "sha256": "b" * 64,
                "duration_ms": 10000,
                "created_at": "2026-09-18T10:00:00Z",
                "upload": {"upload_id": "upload-exec-7", "status": "unknown"},
            }
        ]
    }
    cell = adapter(lambda request: httpx.Response(200, json=body))
    (orphan,) = await cell.orphans()
    assert (orphan.call_id, orphan.partial, orphan.upload_status) == ("exec-7", True, "unknown")
    assert orphan.size_bytes == 160044
    await cell.aclose()


@pytest.mark.parametrize(
    "failure",
    [
        AttributeError("'NoneType' object has no attribute 'getpeername'"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        ConnectionResetError("reset"),
    ],
)
async def test_a_cell_dying_mid_request_is_unavailable_not_a_crash(failure: Exception) -> None:
    """Whatever the HTTP stack raises when the cell dies mid-request means: no answer."""

    def dies(request: httpx.Request) -> httpx.Response:
        raise failure

    cell = adapter(dies)
    for call in (
        cell.boot_id(),
        cell.list_calls(),
        cell.upload_recording("exec-1", "upload-exec-1", "http://s3/put?sig", {}),
        cell.orphans(),
    ):
        with pytest.raises(CellUnavailable):
            await call
    await cell.aclose()
