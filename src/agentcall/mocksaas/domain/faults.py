"""Fault injection, pure part: fault kinds and how each one rewrites a response.

A fault never changes stored state: the Dispatcher that sees it must fail closed and
retry with the same cursor / request (D-DISC-4, D-DISC-9, D-CFG-4).
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass, replace
from typing import Any

from agentcall.mocksaas.domain.discovery import SCHEMA_VERSION as DISCOVERY_VERSION
from agentcall.mocksaas.domain.discovery import TaskRecord

CONFIG_VERSION = "config-read.v0.1"
MALFORMED = b'{"schema_version": "truncated", "tasks": [{"task_id": '


class FaultScope(enum.StrEnum):
    DISCOVERY = "discovery"
    CONFIG = "config"


class DiscoveryFault(enum.StrEnum):
    UNAVAILABLE = "unavailable"
    MALFORMED_JSON = "malformed_json"
    SCHEMA_INVALID = "schema_invalid"
    DUPLICATE_TASK = "duplicate_task"
    NON_ADVANCING_CURSOR = "non_advancing_cursor"
    IDENTITY_CONFLICT = "identity_conflict"
    REVISION_BACKWARDS = "revision_backwards"
    SLOW = "slow"


class ConfigFault(enum.StrEnum):
    NOT_FOUND = "not_found"
    UNAVAILABLE = "unavailable"
    MALFORMED_JSON = "malformed_json"
    SCHEMA_INVALID = "schema_invalid"
    IDENTITY_CONFLICT = "identity_conflict"
    SLOW = "slow"
    # task GET only: a lagging replica answers the task as it was at its first revision
    # (status and revision of its first event), a valid body that is simply old (D-NOTE-1)
    STALE_REPLICA = "stale_replica"


class ConfigResource(enum.StrEnum):
    SIP = "sip"
    TASK = "task"
    QUOTA = "quota"


@dataclass(frozen=True)
class Fault:
    """One armed fault: applies to the next ``remaining`` matching responses."""

    fault_id: int
    scope: FaultScope
    kind: str
    remaining: int
    resource: ConfigResource | None = None
    target: str | None = None
    delay_ms: int = 0

    def matches(self, resource: ConfigResource | None, target: str | None) -> bool:
        if self.scope is FaultScope.DISCOVERY:
            return resource is None
        return self.resource is resource and self.target in (None, target)


@dataclass(frozen=True)
class Response:
    """A rendered HTTP response: status, raw body bytes and a delay before sending."""

    status: int
    body: bytes
    delay_ms: int = 0


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def error_body(schema_version: str, code: str, message: str) -> dict[str, Any]:
    return {
        "schema_version": schema_version,
        "resource": "error",
        "error": {"code": code, "message": message},
    }


SYNTHETIC = TaskRecord(0, "mock-fault-task", "mock-fault-tenant", "mock-fault-tenant", "running", 1)


def _items_for(page: dict[str, Any], basis: TaskRecord | None, after: int) -> tuple[list[Any], str]:
    """Items and cursor to corrupt: the real page, or one known task when the page is empty."""
    if page["tasks"]:
        return [dict(item) for item in page["tasks"]], page["next_cursor"]
    record = basis or SYNTHETIC
    return [record.item()], str(after)


def discovery_fault(
    kind: DiscoveryFault,
    page: dict[str, Any],
    basis: TaskRecord | None,
    after: int,
    delay_ms: int = 0,
) -> Response:
    """The response a discovery fault serves instead of (or, for ``slow``, after) ``page``."""
    if kind is DiscoveryFault.UNAVAILABLE:
        return Response(
            503,
            encode(
                error_body(
                    DISCOVERY_VERSION,
                    "service_unavailable",
                    "Injected: discovery temporarily unavailable.",
                )
            ),
        )
    if kind is DiscoveryFault.MALFORMED_JSON:
        return Response(200, MALFORMED)
    if kind is DiscoveryFault.SCHEMA_INVALID:
        return Response(200, encode({**page, "changes": []}))
    if kind is DiscoveryFault.SLOW:
        return Response(200, encode(page), delay_ms)
    items, cursor = _items_for(page, basis, after)
    body = {**page, "tasks": items, "next_cursor": cursor}
    if kind is DiscoveryFault.DUPLICATE_TASK:
        body["tasks"] = [*items, dict(items[0])]
    elif kind is DiscoveryFault.NON_ADVANCING_CURSOR:
        body["next_cursor"] = str(after)
    elif kind is DiscoveryFault.IDENTITY_CONFLICT:
        items[0]["tenant_key"] = f"{items[0]['tenant_key']}-conflict"
    elif kind is DiscoveryFault.REVISION_BACKWARDS:
        items[0]["task_revision"] = max(0, int(items[0]["task_revision"]) - 1)
    return Response(200, encode(body))


def config_fault(
    kind: ConfigFault,
    resource: ConfigResource,
    normal: Response,
    delay_ms: int = 0,
    stale: Response | None = None,
) -> Response:
    """The response a config-GET fault serves instead of ``normal`` (``stale``: the old
    record a lagging replica would serve, for ``stale_replica``)."""
    if kind is ConfigFault.STALE_REPLICA:
        return stale if stale is not None else normal
    if kind is ConfigFault.NOT_FOUND:
        return Response(
            404,
            encode(
                error_body(CONFIG_VERSION, "resource_not_found", "Injected: resource not found.")
            ),
        )
    if kind is ConfigFault.UNAVAILABLE:
        code = (
            "tenant_quota_unavailable"
            if resource is ConfigResource.QUOTA
            else ("service_unavailable")
        )
        return Response(503, encode(error_body(CONFIG_VERSION, code, "Injected: unavailable.")))
    if kind is ConfigFault.MALFORMED_JSON:
        return Response(200, MALFORMED)
    if kind is ConfigFault.SLOW or normal.status != 200:
        return replace(normal, delay_ms=delay_ms) if kind is ConfigFault.SLOW else normal
    body = json.loads(normal.body)
    if kind is ConfigFault.SCHEMA_INVALID:
        body["etag"] = "injected-not-in-contract"
    elif resource is ConfigResource.SIP:
        body["dispatcher_id"] = str(uuid.uuid4())
    else:
        body["tenant_key"] = f"{body['tenant_key']}-conflict"
    return Response(200, encode(body))
