"""The audit log's values (docs/orbit/audit.md): one `AuditEntry` per state-changing action,
who (token id and name, or the OS user of the admin CLI), what (`action`, its target), where
from (`Source`: the API, the CLI through the API, the console or the admin CLI; the remote
address as the trusted-proxy rules resolve it; the request id) and when (the database clock
at the write).

The HTTP edge binds the request's `Source` (`bind_source`) for the time the request runs, so
a use case builds its entry with `audit_entry` without passing the source down. Secrets never
reach an entry: `scrub_detail` drops keys that name one and masks any string value that looks
like an Orbit token or a lease token."""

from __future__ import annotations

import base64
import binascii
import contextvars
import enum
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.ids import is_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.times import format_time, parse_time
from agentcall.orbit.domain.tokens import Principal

MAX_ACTION_CHARS = 64
MAX_DETAIL_CHARS = 4000  # the detail's JSON text, cut with a marker beyond
# a key naming a secret (`token`, `lease_token`, `client_secret`; not `token_id`)
_SECRET_KEYS = re.compile(
    r"(secret|password|passwd|authorization|cookie|credential|api_?key|(^|_)token$)", re.I
)
_SECRET_VALUE = re.compile(r"(orb_|olt_|Bearer\s)", re.I)
MASK = "[redacted]"


class Origin(enum.StrEnum):
    API = "api"  # an HTTP client of /v1 (the SDK unless it says otherwise)
    CLI = "cli"  # the `orbit` command line: through the API, or the admin CLI on the DB
    CONSOLE = "console"  # a form of the web console (/ui)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a request came from: its origin, the client address (after the trusted-proxy
    rules), the request id it answers with."""

    origin: Origin
    remote_addr: str | None = None
    request_id: str | None = None


_SOURCE: contextvars.ContextVar[Source | None] = contextvars.ContextVar(
    "orbit_audit_source", default=None
)


def bind_source(source: Source) -> contextvars.Token[Source | None]:
    """The source of the running request, for `audit_entry`; `reset_source` with the token
    when the request ends."""
    return _SOURCE.set(source)


def reset_source(token: contextvars.Token[Source | None]) -> None:
    _SOURCE.reset(token)


def current_source() -> Source | None:
    return _SOURCE.get()


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audited action. `actor_token_id` is "" for the admin CLI, whose `actor_name` is
    the OS user (`os:<user>`). `at`: None until stored (the store writes its clock)."""

    actor_token_id: str
    actor_name: str | None
    action: str
    target_kind: str
    target_id: str | None
    namespace_id: str
    origin: Origin | None
    remote_addr: str | None
    request_id: str | None
    detail: Mapping[str, JsonValue] = field(default_factory=dict)
    at: datetime | None = None
    id: str | None = None  # set by the store


def audit_entry(
    principal: Principal,
    action: str,
    target_kind: str,
    target_id: str | None,
    detail: Mapping[str, JsonValue] | None = None,
    *,
    request_id: str | None = None,
    source: Source | None = None,
) -> AuditEntry:
    """The entry of `principal`'s `action` on a target, from the bound request `Source`
    (origin `api` when none is bound) unless `source` is given; `detail` scrubbed."""
    src = source or current_source() or Source(Origin.API)
    return AuditEntry(
        principal.token_id,
        principal.token_name,
        check_action(action),
        target_kind,
        target_id,
        principal.namespace_id,
        src.origin,
        src.remote_addr,
        request_id or src.request_id,
        scrub_detail(detail or {}),
    )


def check_action(action: str) -> str:
    if action in _CHECKED:  # the product's actions are a few dozen names, checked once
        return action
    if not action or len(action) > MAX_ACTION_CHARS or not _ACTION.fullmatch(action):
        raise ValueError(f"an audit action is a short dotted name, not {action!r}")
    if len(_CHECKED) < 1024:
        _CHECKED.add(action)
    return action


_ACTION = re.compile(r"[a-z_.:-]+")
_CHECKED: set[str] = set()


def scrub_detail(detail: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """`detail` without secrets: keys naming one are masked, and so are strings that look
    like a token, at any depth."""
    if not detail:  # most entries (a submit's) have none
        return {}
    return {
        key: MASK if _SECRET_KEYS.search(key) else _scrub(value) for key, value in detail.items()
    }


def _scrub(value: JsonValue) -> JsonValue:
    if isinstance(value, str):
        return MASK if _SECRET_VALUE.search(value) else value
    if isinstance(value, Mapping):
        return scrub_detail(value)
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


# ---------------------------------------------------------------------- reading
@dataclass(frozen=True, slots=True)
class AuditQuery:
    """The filters of `GET /v1/audit`, each optional; the namespace is the caller's."""

    namespace_id: str
    action: str | None = None
    actor: str | None = None  # a token id
    target: str | None = None  # a target id (task, token, queue, schedule, bulk operation)
    since: datetime | None = None  # at or after
    until: datetime | None = None  # before

    def digest(self) -> str:
        parts = [self.action, self.actor, self.target]
        times = [format_time(t) if t else "" for t in (self.since, self.until)]
        text = "\x1f".join([p or "" for p in parts] + times)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class AuditPosition:
    """The keyset position of a page: newest first by (at, id), bound to the query."""

    at: datetime
    entry_id: str


def encode_audit_cursor(position: AuditPosition, query: AuditQuery) -> str:
    body = f"a1|{format_time(position.at)}|{position.entry_id}|{query.digest()}"
    check = hashlib.sha256(body.encode()).hexdigest()[:12]
    return base64.urlsafe_b64encode(f"{body}|{check}".encode()).decode().rstrip("=")


def decode_audit_cursor(cursor: str, query: AuditQuery) -> AuditPosition:
    """Any defect, or a cursor issued for other filters, is a 400 naming `cursor`."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        body, check = text.rsplit("|", 1)
        version, at, entry_id, digest = body.split("|")
        if version != "a1" or check != hashlib.sha256(body.encode()).hexdigest()[:12]:
            raise ValueError(text)
        if not is_id(entry_id):
            raise ValueError(text)
        position = AuditPosition(parse_time(at, "cursor"), entry_id)
    except (ValueError, binascii.Error, UnicodeDecodeError, InvalidArgument):
        raise InvalidArgument("is not a cursor returned by this API", "cursor") from None
    if digest != query.digest():
        raise InvalidArgument("was issued for different audit filters", "cursor")
    return position
