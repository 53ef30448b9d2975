"""Request reading and response writing: body limit (413), content type (415), single-valued
headers and query parameters, the `{"request_id","data"}` envelope and `X-Request-ID`."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.domain.errors import BodyTooLarge, InvalidArgument, UnsupportedMediaType
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.strictjson import read_json

MAX_BODY_BYTES = 524_288
JSON_MEDIA_TYPE = "application/json"
_encode_str = json.encoder.encode_basestring


def require_json_content_type(request: Request) -> None:
    values = request.headers.getlist("content-type")
    if len(values) != 1 or not _is_json(values[0]):
        raise UnsupportedMediaType("send the body as Content-Type: application/json")


def _is_json(value: str) -> bool:
    media, _, params = value.partition(";")
    if media.strip().lower() != JSON_MEDIA_TYPE:
        return False
    for param in filter(None, (p.strip() for p in params.split(";"))):
        name, _, arg = param.partition("=")
        if name.strip().lower() != "charset" or arg.strip().strip('"').lower() != "utf-8":
            return False
    return True


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"the body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"the body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json_body(request: Request) -> JsonValue:
    require_json_content_type(request)
    return read_json(await read_body(request))


def single_header(request: Request, name: str) -> str | None:
    values = request.headers.getlist(name)
    if len(values) > 1:
        raise InvalidArgument("header must appear once", name)
    return values[0] if values else None


def query(request: Request, allowed: frozenset[str]) -> dict[str, str]:
    """Each parameter at most once; unknown parameters are refused."""
    result: dict[str, str] = {}
    if not request.scope["query_string"]:  # no parameters: nothing to parse
        return result
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            raise InvalidArgument("unknown query parameter", name)
        if name in result:
            raise InvalidArgument("query parameter must appear once", name)
        result[name] = value
    return result


def envelope(
    request_id: str, status: int, *, data: JsonValue = None, error: Mapping[str, str] | None = None
) -> Response:
    body: dict[str, JsonValue] = {"request_id": request_id}
    if error is None:
        body["data"] = data
    else:
        body["error"] = dict(error)
    return _json_response(request_id, status, dumps(body))


def receipt_envelope(request_id: str, status: int, deduplicated: bool, task_text: str) -> Response:
    """`envelope(request_id, status, data={"deduplicated": ..., "task": RawJson(task_text)})`
    written without the generic encoder (every submit answers with it)."""
    flag = "true" if deduplicated else "false"
    text = (
        f'{{"request_id":{_encode_str(request_id)},"data":{{"deduplicated":{flag},'
        f'"task":{task_text}}}}}'
    )
    return _json_response(request_id, status, text)


def _json_response(request_id: str, status: int, text: str) -> Response:
    return Response(
        text.encode("utf-8"),
        status_code=status,
        media_type=JSON_MEDIA_TYPE,
        headers={"X-Request-ID": request_id},
    )
