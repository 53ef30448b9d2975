"""Request/response helpers: bounded JSON bodies and the wire form of errors."""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agentcall.cell.domain.errors import CellError, InvalidRequestError, wire_error
from agentcall.cell.telemetry.metrics import count_handled

log = logging.getLogger("cell.http")
MAX_BODY_BYTES = 1 << 20


class BodyTooLargeError(InvalidRequestError):
    """The request body is larger than 1 MiB; send a smaller body."""


async def read_json(request: Request) -> Any:
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise BodyTooLargeError(
            f"body is {len(body)} bytes; at most {MAX_BODY_BYTES}", field="body"
        )
    try:
        return json.loads(body)
    except RecursionError:
        raise InvalidRequestError("body is nested too deeply", field="body") from None
    except ValueError as exc:  # not UTF-8, not JSON, an integer of more than 4,300 digits
        raise InvalidRequestError(f"body is not valid JSON: {exc}", field="body") from None


def error_response(exc: CellError) -> JSONResponse:
    status, code = wire_error(exc)
    if isinstance(exc, BodyTooLargeError):
        status = 413
    payload: dict[str, Any] = {"code": code, "message": exc.message}
    if exc.field is not None:
        payload["field"] = exc.field
    if status >= 500:
        log.error("request failed: %s", exc.message)
    else:
        log.info("request refused", extra={"code": code, "field": exc.field})
    return JSONResponse({"error": payload}, status_code=status)


async def handle_cell_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CellError)
    return error_response(exc)


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    """Any other failure: logged, counted, and a 500 in the same JSON error shape."""
    count_handled("http")
    log.error("request failed: %s %s: %r", request.method, request.url.path, exc)
    payload = {"code": "internal_error", "message": f"{type(exc).__name__} while answering"}
    return JSONResponse({"error": payload}, status_code=500)
