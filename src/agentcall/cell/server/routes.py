"""HTTP endpoints: thin adapters from requests to :class:`CellService` calls."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentcall.cell.calls.plan import parse_upload_target
from agentcall.cell.domain.errors import InvalidPlanError, InvalidRequestError
from agentcall.cell.domain.model import CallState
from agentcall.cell.recording.store import RecordingMeta
from agentcall.cell.runtime.service import CellService
from agentcall.cell.server.http import read_json


def _service(request: Request) -> CellService:
    service: CellService = request.app.state.service
    return service


def _orphan_json(service: CellService, meta: RecordingMeta) -> dict[str, Any]:
    return {**meta.to_json(), "path": str(service.recordings.wav_path(meta.call_id))}


async def originate(request: Request) -> Response:
    record, created = await _service(request).originate(await read_json(request))
    return JSONResponse(record.to_json(), status_code=201 if created else 200)


async def list_calls(request: Request) -> Response:
    raw = request.query_params.get("state")
    try:
        state = CallState(raw) if raw else None
    except ValueError:
        states = ", ".join(s.value for s in CallState)
        raise InvalidRequestError(f"state must be one of {states}", field="state") from None
    calls = _service(request).list_calls(state)
    return JSONResponse({"calls": [c.to_json() for c in calls]})


async def get_call(request: Request) -> Response:
    return JSONResponse(_service(request).record(request.path_params["call_id"]).to_json())


async def hangup(request: Request) -> Response:
    record = _service(request).hangup(request.path_params["call_id"])
    return JSONResponse(record.to_json(), status_code=200 if record.ended else 202)


async def ack(request: Request) -> Response:
    call_id = request.path_params["call_id"]
    _service(request).ack(call_id)
    return JSONResponse({"call_id": call_id, "acked": True})


class InvalidUploadError(InvalidPlanError):
    """The upload request is invalid; fix the named field."""


async def upload(request: Request) -> Response:
    target = parse_upload_target(await read_json(request), "", InvalidUploadError)
    result = await _service(request).upload(request.path_params["call_id"], target)
    return JSONResponse(result.to_json())


async def orphans(request: Request) -> Response:
    service = _service(request)
    return JSONResponse({"orphans": [_orphan_json(service, m) for m in service.orphans()]})


async def delete_orphan(request: Request) -> Response:
    _service(request).delete_orphan(request.path_params["call_id"])
    return Response(status_code=204)


async def info(request: Request) -> Response:
    return JSONResponse(_service(request).info())


async def load_config(request: Request) -> Response:
    return JSONResponse(_service(request).load_config(await read_json(request)))


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok", "boot_id": _service(request).boot_id})


async def metrics(request: Request) -> Response:
    body = _service(request).metrics.render()
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


ROUTES = [
    Route("/v1/calls", originate, methods=["POST"]),
    Route("/v1/calls", list_calls, methods=["GET"]),
    Route("/v1/calls/{call_id}", get_call, methods=["GET"]),
    Route("/v1/calls/{call_id}/hangup", hangup, methods=["POST"]),
    Route("/v1/calls/{call_id}/ack", ack, methods=["POST"]),
    Route("/v1/calls/{call_id}/recording/upload", upload, methods=["POST"]),
    Route("/v1/orphans", orphans, methods=["GET"]),
    Route("/v1/orphans/{call_id}", delete_orphan, methods=["DELETE"]),
    Route("/v1/info", info, methods=["GET"]),
    Route("/v1/config", load_config, methods=["PUT"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]
