"""Batch endpoints: many originates or acks in one request, one result per item.

``POST /v1/calls/batch`` with ``{"plans": [plan, ...]}`` (1–256 plans) originates each
plan exactly as ``POST /v1/calls`` would, concurrently, so their originate-log entries
share one fsync. ``POST /v1/calls/ack`` with ``{"call_ids": [...]}`` acknowledges each.
The answer is ``200 {"results": [...]}`` in request order; an item is
``{"status": 201|200, "call": {...}}`` (originate), ``{"call_id", "status": 200}`` (ack)
or ``{"status", "error": {"code", "message", "field"?}}`` with the status and code the
single-item endpoint would have answered. One item's failure never affects another:
every guarantee of the single endpoints holds per item (idempotent per call_id, a
call_id dialled at most once). A malformed envelope refuses the whole request (400).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentcall.cell.domain.errors import CellError, InvalidRequestError, wire_error
from agentcall.cell.runtime.service import CellService
from agentcall.cell.server.http import read_json

log = logging.getLogger("cell.http")
MAX_BATCH = 256


def _items(body: object, key: str) -> list[Any]:
    if not isinstance(body, dict) or set(body) != {key}:
        raise InvalidRequestError(f'body must be {{"{key}": [...]}} and nothing else', field=key)
    items = body[key]
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
        raise InvalidRequestError(f"{key} must be a list of 1..{MAX_BATCH} items", field=key)
    return items


def error_item(exc: CellError) -> dict[str, Any]:
    """The wire form of one item's error (same status and code as the single endpoint)."""
    status, code = wire_error(exc)
    error: dict[str, Any] = {"code": code, "message": exc.message}
    if exc.field is not None:
        error["field"] = exc.field
    return {"status": status, "error": error}


async def originate_one(service: CellService, plan: object) -> dict[str, Any]:
    try:
        record, created = await service.originate(plan)
    except CellError as exc:
        return error_item(exc)
    except OSError as exc:  # the originate log failed: whether it is durable is unknown
        log.error("originate failed: %s", exc)
        return error_item(CellError(f"originate log write failed: {exc}"))
    return {"status": 201 if created else 200, "call": record.to_json()}


def ack_one(service: CellService, call_id: object) -> dict[str, Any]:
    if not isinstance(call_id, str):
        return error_item(InvalidRequestError("call_ids must be strings", field="call_ids"))
    try:
        service.ack(call_id)
    except CellError as exc:
        return {"call_id": call_id, **error_item(exc)}
    return {"call_id": call_id, "status": 200}


async def originate_batch(request: Request) -> Response:
    service: CellService = request.app.state.service
    plans = _items(await read_json(request), "plans")
    results = await asyncio.gather(*(originate_one(service, plan) for plan in plans))
    return JSONResponse({"results": results})


async def ack_batch(request: Request) -> Response:
    service: CellService = request.app.state.service
    call_ids = _items(await read_json(request), "call_ids")
    return JSONResponse({"results": [ack_one(service, c) for c in call_ids]})


ROUTES = [
    Route("/v1/calls/batch", originate_batch, methods=["POST"]),
    Route("/v1/calls/ack", ack_batch, methods=["POST"]),
]
