"""The public client: its surface, wire error mapping and wire models."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import httpx
import pytest

import agentcall.cell.client as client
from agentcall.cell.client import (
    AlreadyDialledError,
    CallInfo,
    CallNotEndedError,
    CallState,
    CellBusyError,
    CellClient,
    CellProtocolError,
    CellRequestError,
    CellUnavailableError,
    InvalidPlanError,
    Plan,
    Trunk,
    UploadTarget,
)
from agentcall.cell.client._errors import BY_CODE, UNAVAILABLE_BY_CODE
from agentcall.cell.domain.errors import WIRE_ERRORS

CLIENT_DIR = Path(client.__file__).parent


def test_public_surface_is_guarded() -> None:
    assert sorted(client.__all__) == client.__all__
    assert set(client.__all__) == {n for n in dir(client) if not n.startswith("_")} - {
        "annotations"
    }


WIRE_VOCABULARY = "agentcall.cell.domain.model"  # call states, event types, AMD actions


def _cell_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    found += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    return [m for m in found if m.startswith("agentcall")]


def test_client_depends_on_the_wire_only() -> None:
    """The D imports agentcall.cell.client; agentcall.cell.client must not pull in cell internals:
    besides itself, only the wire's vocabulary, which imports nothing of ours."""
    for path in CLIENT_DIR.glob("*.py"):
        for module in _cell_imports(path):
            assert module.startswith("agentcall.cell.client") or module == WIRE_VOCABULARY, (
                f"{path.name}: {module}"
            )
    vocabulary = CLIENT_DIR.parent / "domain" / "model.py"
    assert _cell_imports(vocabulary) == []


def test_every_server_error_code_is_known_to_the_client() -> None:
    codes = {code for _, code in WIRE_ERRORS.values()} - {"internal_error"}
    assert codes <= set(BY_CODE) | set(UNAVAILABLE_BY_CODE)


def _client(status: int, body: object) -> CellClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=json.dumps(body).encode())

    return CellClient("http://cell", transport=httpx.MockTransport(handler))


def _err(code: str, field: str | None = None) -> dict[str, object]:
    return {"error": {"code": code, "message": f"{code}!", "field": field}}


@pytest.mark.parametrize(
    ("status", "body", "exc"),
    [
        (409, _err("already_dialled"), AlreadyDialledError),
        (409, _err("call_not_ended"), CallNotEndedError),
        (422, _err("invalid_plan", "callee"), InvalidPlanError),
        (418, _err("teapot"), CellRequestError),
        (503, _err("cell_busy"), CellBusyError),
        (503, {"oops": 1}, CellUnavailableError),
        (500, "not an object", CellRequestError),
    ],
)
async def test_wire_errors_become_typed_exceptions(
    status: int, body: object, exc: type[Exception]
) -> None:
    async with _client(status, body) as cell:
        with pytest.raises(exc) as info:
            await cell.get_call("c1")
    assert type(info.value) is exc
    if isinstance(info.value, CellRequestError) and status == 422:
        assert info.value.field == "callee" and info.value.status == 422


async def test_unreachable_cell_is_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with CellClient("http://cell", transport=httpx.MockTransport(handler)) as cell:
        with pytest.raises(CellUnavailableError, match="ConnectError"):
            await cell.info()


async def test_malformed_answer_is_a_protocol_error() -> None:
    async with _client(200, {"calls": [{"call_id": "x"}]}) as cell:
        with pytest.raises(CellProtocolError, match="lacks .state."):
            await cell.list_calls()


def test_plan_wire_form_and_redacted_upload_url() -> None:
    target = UploadTarget("u1", "https://s3/x?X-Amz-Signature=secret")
    plan = Plan(
        "c1",
        Trunk("t1", "9"),
        "BD1",
        "150",
        30000,
        60000,
        {"mode": "asr_only"},
        recording_upload=target,
        tags={"task_id": "t"},
    )
    wire = plan.to_json()
    assert wire["trunk"] == {
        "trunk_id": "t1",
        "dial_prefix": "9",
        "server_host": None,
        "server_port": None,
        "transport": None,
        "auth_mode": None,
    }
    assert wire["recording_upload"]["url"].endswith("secret")
    assert "secret" not in repr(plan)


def test_call_info_from_wire() -> None:
    info = CallInfo.from_json(
        {
            "call_id": "c1",
            "boot_id": "b",
            "state": "ended",
            "callee": "1",
            "dialled": "91",
            "caller_id": "BD",
            "trunk_id": "t",
            "created_at": "2026-09-21T00:00:00.000Z",
            "ended_at": "2026-09-21T00:00:05.000Z",
            "outcome": "busy",
            "reason_code": "busy",
            "transcript": [
                {
                    "turn_id": "turn-1",
                    "segment_id": "segment-1",
                    "role": "user",
                    "text": "hi",
                    "start_ms": 0,
                    "end_ms": 5,
                }
            ],
            "recording": None,
        }
    )
    assert info.state is CallState.ENDED and info.ended
    assert info.ended_at is not None and info.ended_at.tzinfo is not None
    assert info.transcript[0].text == "hi"
