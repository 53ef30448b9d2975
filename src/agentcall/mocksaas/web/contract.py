"""Routes of the four GETs a Dispatcher calls."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response as HttpResponse
from starlette.routing import Route

from agentcall.mocksaas.domain.faults import FaultScope, Response
from agentcall.mocksaas.errors import ContractError
from agentcall.mocksaas.ops import contract
from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.store.dispatchers import Dispatcher

Handler = Callable[[Runtime, Dispatcher, Request], Awaitable[Response]]


def _send(rt: Runtime, route: str, r: Response) -> HttpResponse:
    rt.metrics.http.labels(route, str(r.status)).inc()
    return HttpResponse(r.body, status_code=r.status, media_type="application/json")


def endpoint(
    route: str, scope: FaultScope, handler: Handler
) -> Callable[[Request], Awaitable[HttpResponse]]:
    async def run(request: Request) -> HttpResponse:
        rt: Runtime = request.app.state.runtime
        try:
            d = await contract.authenticate(rt, request.headers)
            r = await handler(rt, d, request)
        except ContractError as exc:
            r = contract.error_response(rt, exc, scope)
        if r.delay_ms:
            await asyncio.sleep(r.delay_ms / 1000)
        return _send(rt, route, r)

    return run


async def _sip(rt: Runtime, d: Dispatcher, request: Request) -> Response:
    return await contract.get_sip(rt, d)


async def _task(rt: Runtime, d: Dispatcher, request: Request) -> Response:
    return await contract.get_task(rt, d, request.path_params["task_id"])


async def _quota(rt: Runtime, d: Dispatcher, request: Request) -> Response:
    return await contract.get_quota(rt, d, request.path_params["tenant_id"])


async def _tasks(rt: Runtime, d: Dispatcher, request: Request) -> Response:
    values = request.query_params.getlist("after")
    return await contract.get_page(rt, d, values[0] if len(values) == 1 else None)


PREFIX = "/internal/v1/dispatcher"
routes = [
    Route(f"{PREFIX}/sip", endpoint("sip", FaultScope.CONFIG, _sip), methods=["GET"]),
    Route(
        f"{PREFIX}/task/{{task_id}}", endpoint("task", FaultScope.CONFIG, _task), methods=["GET"]
    ),
    Route(
        f"{PREFIX}/tenant/{{tenant_id}}/quota",
        endpoint("quota", FaultScope.CONFIG, _quota),
        methods=["GET"],
    ),
    Route(f"{PREFIX}/tasks", endpoint("tasks", FaultScope.DISCOVERY, _tasks), methods=["GET"]),
]
