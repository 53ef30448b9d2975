"""The four GETs a Dispatcher calls (D-ID-2, D-CFG-1..4, D-DISC-1..9).

Each handler authenticates, builds the normal response from the store (validated
against the contract), then lets at most one armed fault rewrite it.
"""

from __future__ import annotations

import hmac
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentcall.mocksaas.domain import discovery
from agentcall.mocksaas.domain.discovery import TaskRecord
from agentcall.mocksaas.domain.faults import (
    ConfigFault,
    ConfigResource,
    DiscoveryFault,
    FaultScope,
    Response,
    config_fault,
    discovery_fault,
    encode,
    error_body,
)
from agentcall.mocksaas.domain.quota import quota_body
from agentcall.mocksaas.domain.task_config import build_task_config
from agentcall.mocksaas.domain.tasks import TaskStatus
from agentcall.mocksaas.errors import (
    ContractError,
    DispatcherNotAuthorized,
    ResourceNotFound,
    Unauthorized,
    wire_error,
)
from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.store import configs, dispatchers, faults, tasks
from agentcall.mocksaas.store.dispatchers import Dispatcher

CONFIG_VERSION = "config-read.v0.1"


async def authenticate(rt: Runtime, headers: Mapping[str, str]) -> Dispatcher:
    """D-ID-2: both headers (names case-insensitive); 401 unknown/wrong, 403 disabled."""
    dispatcher_id = headers.get("x-dispatcher-id")
    secret = headers.get("x-dispatcher-secret-key")
    if not dispatcher_id or not secret:
        raise Unauthorized("X-DISPATCHER-ID and X-DISPATCHER-SECRET-KEY are required.")
    found = await rt.db.run(dispatchers.find, dispatcher_id)
    if found is None or not hmac.compare_digest(found.secret.encode(), secret.encode()):
        raise Unauthorized("Unknown dispatcher or wrong secret.")
    if not found.authorized:
        raise DispatcherNotAuthorized("This dispatcher is not authorized.")
    return found


def error_response(rt: Runtime, exc: ContractError, scope: FaultScope) -> Response:
    status, code = wire_error(exc)
    if scope is FaultScope.DISCOVERY:
        version, kind = discovery.SCHEMA_VERSION, "task-discovery.error"
    else:
        version, kind = CONFIG_VERSION, "config-read.error"
    body = error_body(version, code, exc.message)
    rt.check_out(kind, body)
    return Response(status, encode(body))


Build = Callable[[sqlite3.Connection], dict[str, Any]]


async def _render(rt: Runtime, kind: str, build: Build) -> Response:
    try:
        body = await rt.db.run(build)
        rt.check_out(kind, body)
        return Response(200, encode(body))
    except ContractError as exc:
        return error_response(rt, exc, FaultScope.CONFIG)


async def _config(
    rt: Runtime,
    d: str,
    resource: ConfigResource,
    target: str | None,
    kind: str,
    build: Build,
    stale: Build | None = None,
) -> Response:
    normal = await _render(rt, kind, build)
    fault = await rt.db.run(faults.take, d, FaultScope.CONFIG, resource, target)
    if fault is None:
        return normal
    rt.metrics.faults.labels("config", fault.kind).inc()
    old = None
    if fault.kind == ConfigFault.STALE_REPLICA and stale is not None and normal.status == 200:
        old = await _render(rt, kind, stale)
    return config_fault(ConfigFault(fault.kind), resource, normal, fault.delay_ms, old)


async def get_sip(rt: Runtime, d: Dispatcher) -> Response:
    def build(conn: sqlite3.Connection) -> dict[str, Any]:
        body = configs.get_sip(conn, d.dispatcher_id)
        if body is None:
            raise ResourceNotFound("No approved SIP snapshot for this Dispatcher.")
        return body

    return await _config(
        rt, d.dispatcher_id, ConfigResource.SIP, None, "config-read.sip_config", build
    )


async def get_task(rt: Runtime, d: Dispatcher, task_id: str) -> Response:
    def build(conn: sqlite3.Connection) -> dict[str, Any]:
        task = tasks.find(conn, task_id)
        if (
            task is None
            or task.dispatcher_id != d.dispatcher_id
            or task.status is TaskStatus.REMOVED
        ):
            raise ResourceNotFound("Task is not assigned to this Dispatcher.")
        return build_task_config(task.identity, task.status.value, task.task_revision, task.spec)

    def first(conn: sqlite3.Connection) -> dict[str, Any]:
        task = tasks.find(conn, task_id)
        assert task is not None  # only asked after ``build`` answered 200
        status, revision = tasks.first_record(conn, d.dispatcher_id, task_id)
        return build_task_config(task.identity, status, revision, task.spec)

    return await _config(
        rt, d.dispatcher_id, ConfigResource.TASK, task_id, "config-read.task_config", build, first
    )


async def get_quota(rt: Runtime, d: Dispatcher, tenant_id: str) -> Response:
    now = rt.now()

    def build(conn: sqlite3.Connection) -> dict[str, Any]:
        quota = configs.get_quota(conn, d.dispatcher_id, tenant_id)
        if quota is None and tasks.tenant_key_of(conn, d.dispatcher_id, tenant_id) is None:
            raise ResourceNotFound("Tenant has no task on this Dispatcher.")
        return quota_body(d.dispatcher_id, quota, now)

    return await _config(
        rt, d.dispatcher_id, ConfigResource.QUOTA, tenant_id, "config-read.tenant_quota", build
    )


@dataclass(frozen=True)
class _PageRead:
    after: int
    records: list[TaskRecord]
    basis: TaskRecord | None


async def get_page(rt: Runtime, d: Dispatcher, after_raw: str | None) -> Response:
    size = d.page_size or rt.settings.page_size

    def read(conn: sqlite3.Connection) -> _PageRead:
        head = dispatchers.get(conn, d.dispatcher_id).head
        after = discovery.parse_cursor(after_raw, head)
        return _PageRead(
            after,
            tasks.page(conn, d.dispatcher_id, after, size),
            tasks.latest_record(conn, d.dispatcher_id),
        )

    try:
        got = await rt.db.run(read)
    except ContractError as exc:
        return error_response(rt, exc, FaultScope.DISCOVERY)
    page = discovery.build_page(d.dispatcher_id, got.after, got.records)
    rt.check_out("task-discovery.page", page)
    fault = await rt.db.run(faults.take, d.dispatcher_id, FaultScope.DISCOVERY, None, None)
    if fault is None:
        return Response(200, encode(page))
    rt.metrics.faults.labels("discovery", fault.kind).inc()
    return discovery_fault(DiscoveryFault(fault.kind), page, got.basis, got.after, fault.delay_ms)
