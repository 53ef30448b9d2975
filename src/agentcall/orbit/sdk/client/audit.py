"""`client.audit`: the audit log of the token's namespace (`GET /v1/audit`, permission
`audit:read`; docs/orbit/audit.md), on `Client` (blocking) and `AsyncClient` (asyncio).

    client.audit.list(action=, actor=, target=, since=, until=, limit=, cursor=)
        -> AuditPage (newest first; `next_cursor` for the next page)
    client.audit.iter(action=..., ...)  -> every entry, page after page"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.times import format_time, parse_time
from agentcall.orbit.sdk.client._calls import Call
from agentcall.orbit.sdk.client.binding import (
    Asynchronous,
    Blocking,
    Listing,
    Operation,
    Page,
)

__all__ = ["AsyncAudit", "Audit", "AuditEntry", "AuditPage"]
MAX_LIMIT = 100


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: str
    at: datetime
    actor_token_id: str | None  # None for the admin CLI (its actor_name is the OS user)
    actor_name: str | None
    action: str
    target_kind: str
    target_id: str | None
    origin: str | None  # api, cli, console
    remote_addr: str | None
    request_id: str | None
    detail: dict[str, Any]

    @classmethod
    def from_json(cls, data: Any) -> AuditEntry:
        actor, target = data["actor"], data["target"]
        return cls(
            data["id"],
            parse_time(data["at"], "at"),
            actor.get("token_id"),
            actor.get("name"),
            data["action"],
            target["kind"],
            target.get("id"),
            data.get("origin"),
            data.get("remote_addr"),
            data.get("request_id"),
            dict(data.get("detail") or {}),
        )


@dataclass(frozen=True, slots=True)
class AuditPage:
    items: list[AuditEntry]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Any) -> AuditPage:
        return cls([AuditEntry.from_json(item) for item in data["items"]], data.get("next_cursor"))


def list_page(
    action: str | None = None,
    actor: str | None = None,
    target: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[AuditPage]:
    """One page of entries, newest first; `since` inclusive, `until` exclusive."""
    words = {"action": action, "actor": actor, "target": target, "cursor": cursor}
    params = {name: value for name, value in words.items() if value is not None}
    params |= {name: format_time(t) for name, t in (("since", since), ("until", until)) if t}
    if limit is not None:
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be 1-{MAX_LIMIT}")
        params["limit"] = str(limit)
    return Call("GET", "/v1/audit", lambda data, _: AuditPage.from_json(data), params=params)


def every(
    action: str | None = None,
    actor: str | None = None,
    target: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Callable[[str | None], Call[Page[AuditEntry]]]:
    """Every entry matching the filters, newest first, page after page."""

    def page(cursor: str | None) -> Call[Page[AuditEntry]]:
        plain = list_page(action, actor, target, since, until, MAX_LIMIT, cursor)
        return Call(plain.method, plain.path, plain.parse, params=plain.params)

    return page


class _Operations:
    list = Operation(list_page)
    iter = Listing(every)


class Audit(_Operations, Blocking):
    """`Client.audit`."""


class AsyncAudit(_Operations, Asynchronous):
    """`AsyncClient.audit`: awaitables (`iter`: an async iterator)."""
