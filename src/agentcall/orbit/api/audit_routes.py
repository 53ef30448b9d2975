"""`GET /v1/audit` (docs/orbit/audit.md) and the request's audit source: where a request came
from, bound by the route wrapper (`app.endpoints`) for the time it runs. The origin is `cli`
when the client says so with `X-Orbit-Origin: cli` (the `orbit` command line does), `api`
otherwise; the console binds its own (`console.actions`). The remote address is the peer's,
or, from a peer in `ORBIT_TRUSTED_PROXIES`, the last `X-Forwarded-For` value
(`console.edge.ConsoleEdge`)."""

from __future__ import annotations

import re
from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response

from agentcall.orbit.api.http import envelope, query
from agentcall.orbit.api.routes import Context, parse_limit
from agentcall.orbit.domain.audit import AuditEntry, AuditQuery, Origin, Source
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.times import format_time, parse_time
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.usecases.audit import list_audit

ORIGIN_HEADER = "x-orbit-origin"
_ORIGIN_RAW = ORIGIN_HEADER.encode()
PARAMS = frozenset({"action", "actor", "target", "since", "until", "limit", "cursor"})
_WORD = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def request_source(request: Request, request_id: str) -> Source:
    """Read from the raw header list (ASGI names are lowercase): every request pays this,
    and most have no origin header, so no `Headers` object is built for it."""
    origin = Origin.API
    for name, value in request.scope["headers"]:
        if name == _ORIGIN_RAW:
            if value.strip().lower() == b"cli":
                origin = Origin.CLI
            break
    client = request.scope.get("client")
    return Source(origin, client[0] if client else None, request_id)


async def list_entries(request: Request, ctx: Context) -> Response:
    """The caller's namespace's entries, newest first (permission `audit:read`)."""
    principal = await ctx.principal(request, Permission.AUDIT_READ)
    params = query(request, PARAMS)
    limit = parse_limit(params.pop("limit", None))
    cursor = params.pop("cursor", None)
    where = AuditQuery(
        principal.namespace_id,
        _word(params.get("action"), "action"),
        _word(params.get("actor"), "actor"),
        _word(params.get("target"), "target"),
        _time(params.get("since"), "since"),
        _time(params.get("until"), "until"),
    )
    page = await list_audit(ctx.ops.store, principal, where, cursor, limit)
    data: dict[str, JsonValue] = {"items": [entry_view(entry) for entry in page.items]}
    if page.next_cursor is not None:
        data["next_cursor"] = page.next_cursor
    return envelope(ctx.request_id, 200, data=data)


def entry_view(entry: AuditEntry) -> dict[str, JsonValue]:
    return {
        "id": entry.id,
        "at": None if entry.at is None else format_time(entry.at),
        "actor": {"token_id": entry.actor_token_id or None, "name": entry.actor_name},
        "action": entry.action,
        "target": {"kind": entry.target_kind, "id": entry.target_id},
        "origin": None if entry.origin is None else entry.origin.value,
        "remote_addr": entry.remote_addr,
        "request_id": entry.request_id,
        "detail": dict(entry.detail),
    }


def _word(text: str | None, name: str) -> str | None:
    if text is None:
        return None
    if not _WORD.fullmatch(text):
        raise InvalidArgument("must be 1-64 letters, digits or _ . : -", name)
    return text


def _time(text: str | None, name: str) -> datetime | None:
    return None if text is None else parse_time(text, name)
