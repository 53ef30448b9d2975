"""Admin API routes (``/admin/v1``): thin wrappers around :mod:`agentcall.mocksaas.ops`."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentcall.mocksaas.domain.results import ResultFacts
from agentcall.mocksaas.errors import InvalidRequest, MockSaasError, wire_error
from agentcall.mocksaas.ops import dispatchers, faults, publish, tasks
from agentcall.mocksaas.ops.fields import IDEMPOTENCY_HEADER, Reply, as_object, idempotency_key
from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.store import results

log = logging.getLogger("mocksaas.admin")
Op = Callable[[Runtime, dict[str, str], dict[str, Any], Request], Awaitable[dict[str, Any] | Reply]]
MAX_ADMIN_BODY = 16 * 1024 * 1024
RESULT_FILTERS = tuple(f.name for f in fields(ResultFacts))


async def _body(request: Request) -> dict[str, Any]:
    if request.method in ("GET", "DELETE"):
        return {}
    raw = await request.body()
    if len(raw) > MAX_ADMIN_BODY:
        raise InvalidRequest("body", f"larger than {MAX_ADMIN_BODY} bytes")
    if not raw.strip():
        return {}
    try:
        return as_object(json.loads(raw))
    except RecursionError:
        raise InvalidRequest("body", "nested too deeply") from None
    except ValueError as exc:  # not UTF-8, not JSON, an integer of more than 4,300 digits
        raise InvalidRequest("body", f"not JSON: {str(exc)[:200]}") from exc


def admin(op: Op, status: int = 200) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def run(request: Request) -> JSONResponse:
        rt: Runtime = request.app.state.runtime
        try:
            answer = await op(rt, dict(request.path_params), await _body(request), request)
            out, code = (
                (answer.body, answer.status) if isinstance(answer, Reply) else (answer, status)
            )
        except MockSaasError as exc:
            code, name = wire_error(exc)
            out = {"error": {"code": name, "message": exc.message, "hint": exc.hint}}
            log.info(
                "admin request rejected",
                extra={
                    "fields": {
                        "path": request.url.path,
                        "status": code,
                        "code": name,
                        "why": exc.message,
                    }
                },
            )
        rt.metrics.http.labels("admin", str(code)).inc()
        return JSONResponse(out, status_code=code)

    return run


def _limit(request: Request, default: int = 1000) -> int:
    raw = request.query_params.get("limit", str(default))
    if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
        raise InvalidRequest("limit", "must be an integer 1..100000")
    return int(raw)


async def _results(rt: Runtime, p: dict[str, str], b: dict[str, Any], r: Request) -> dict[str, Any]:
    await dispatchers.show(rt, p["d"])
    unknown = sorted(set(r.query_params) - set(RESULT_FILTERS) - {"limit", "invalid"})
    if unknown:
        raise InvalidRequest(unknown[0], f"unknown filter (allowed: {', '.join(RESULT_FILTERS)})")
    filters: dict[str, Any] = {
        k: v for k, v in r.query_params.items() if k not in ("limit", "invalid")
    }
    if "invalid" in r.query_params:
        filters["valid"] = r.query_params["invalid"] not in ("1", "true")
    rows = await rt.db.run(results.query, p["d"], filters, _limit(r))
    return {"results": rows}


async def _summary(rt: Runtime, p: dict[str, str], b: dict[str, Any], r: Request) -> dict[str, Any]:
    await dispatchers.show(rt, p["d"])
    return await rt.db.run(results.summary, p["d"])


async def _head(rt: Runtime, p: dict[str, str], b: dict[str, Any], r: Request) -> dict[str, Any]:
    d = await dispatchers.show(rt, p["d"])
    return {"dispatcher_id": p["d"], "head": d["head"]}


async def _events(rt: Runtime, p: dict[str, str], b: dict[str, Any], r: Request) -> dict[str, Any]:
    after = r.query_params.get("after", "0")
    if not after.isdigit():
        raise InvalidRequest("after", "must be a non-negative integer")
    return await dispatchers.events(rt, p["d"], int(after), _limit(r))


async def _calls(rt: Runtime, p: dict[str, str], b: dict[str, Any], r: Request) -> Reply:
    key = idempotency_key(r.headers.get(IDEMPOTENCY_HEADER))
    return await publish.calls(rt, p["d"], p["t"], b, key)


D = "/admin/v1/dispatchers/{d}"
T = D + "/tasks/{t}"
routes = [
    Route(
        "/admin/v1/dispatchers",
        admin(lambda rt, p, b, r: dispatchers.create(rt, b), 201),
        methods=["POST"],
    ),
    Route(
        "/admin/v1/dispatchers",
        admin(lambda rt, p, b, r: dispatchers.list_all(rt)),
        methods=["GET"],
    ),
    Route(D, admin(lambda rt, p, b, r: dispatchers.show(rt, p["d"])), methods=["GET"]),
    Route(D, admin(lambda rt, p, b, r: dispatchers.update(rt, p["d"], b)), methods=["PATCH"]),
    Route(D, admin(lambda rt, p, b, r: dispatchers.purge(rt, p["d"])), methods=["DELETE"]),
    Route(
        D + "/sip", admin(lambda rt, p, b, r: dispatchers.set_sip(rt, p["d"], b)), methods=["PUT"]
    ),
    Route(D + "/tasks", admin(lambda rt, p, b, r: tasks.list_for(rt, p["d"])), methods=["GET"]),
    Route(T, admin(lambda rt, p, b, r: tasks.put_task(rt, p["d"], p["t"], b)), methods=["PUT"]),
    Route(T, admin(lambda rt, p, b, r: tasks.show(rt, p["d"], p["t"])), methods=["GET"]),
    Route(
        T + "/status",
        admin(lambda rt, p, b, r: tasks.set_status(rt, p["d"], p["t"], b)),
        methods=["POST"],
    ),
    Route(
        T + "/controls",
        admin(lambda rt, p, b, r: tasks.publish_control(rt, p["d"], p["t"], b)),
        methods=["POST"],
    ),
    Route(T + "/calls", admin(_calls), methods=["POST"]),
    Route(
        D + "/tenants/{tenant}/quota",
        admin(lambda rt, p, b, r: publish.set_quota(rt, p["d"], p["tenant"], b)),
        methods=["PUT"],
    ),
    Route(D + "/results", admin(_results), methods=["GET"]),
    Route(D + "/results/summary", admin(_summary), methods=["GET"]),
    Route(D + "/events/head", admin(_head), methods=["GET"]),
    Route(D + "/events", admin(_events), methods=["GET"]),
    Route(
        D + "/faults/discovery",
        admin(lambda rt, p, b, r: faults.arm_discovery(rt, p["d"], b), 201),
        methods=["POST"],
    ),
    Route(
        D + "/faults/config",
        admin(lambda rt, p, b, r: faults.arm_config(rt, p["d"], b), 201),
        methods=["POST"],
    ),
    Route(
        D + "/faults/raw", admin(lambda rt, p, b, r: publish.raw(rt, p["d"], b)), methods=["POST"]
    ),
    Route(D + "/faults", admin(lambda rt, p, b, r: faults.list_for(rt, p["d"])), methods=["GET"]),
    Route(D + "/faults", admin(lambda rt, p, b, r: faults.clear(rt, p["d"])), methods=["DELETE"]),
]
