"""Credentials (O-API-1): random bearer secrets stored as SHA-256 hashes, permissions,
per-queue scopes, expiry and revocation. See docs/orbit/authentication.md."""

from __future__ import annotations

import enum
import hashlib
import math
import secrets
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)

TOKEN_PREFIX = "orb_"


class Permission(enum.StrEnum):
    SUBMIT = "tasks:submit"
    READ = "tasks:read"
    CANCEL = "tasks:cancel"
    WORK = "tasks:work"
    REVIEW = "tasks:review"
    QUEUE_ADMIN = "queues:admin"  # change a queue's settings (flow control)
    SCHEDULES_READ = "schedules:read"  # read schedules and their firings
    SCHEDULES_WRITE = "schedules:write"  # create, change, pause, trigger, delete schedules
    AUDIT_READ = "audit:read"


ALL_PERMISSIONS = frozenset(Permission)


def parse_permission(text: str) -> Permission:
    try:
        return Permission(text)
    except ValueError:
        names = ", ".join(p.value for p in Permission)
        raise InvalidArgument(f"unknown permission {text!r}; use one of {names}") from None


def generate_secret() -> str:
    """`orb_` + 32 random bytes, URL-safe base64: shown once, never stored."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


MIN_SECRET_CHARS = 32
MIN_SECRET_BITS = 128


def secret_weakness(secret: str) -> str | None:
    """Why a configured token cannot be one Orbit issued (too short, or too few different
    characters for its length: estimated entropy under MIN_SECRET_BITS), or None. Orbit's
    own tokens (`generate_secret`) carry about 200 bits by this estimate."""
    body = secret.removeprefix(TOKEN_PREFIX)
    if len(body) < MIN_SECRET_CHARS:
        return f"it has {len(body)} characters after {TOKEN_PREFIX}, at least {MIN_SECRET_CHARS}"
    counts = Counter(body).values()
    bits = -sum(n * math.log2(n / len(body)) for n in counts)
    if bits < MIN_SECRET_BITS:
        return f"its characters repeat too much ({int(bits)} bits, at least {MIN_SECRET_BITS})"
    return None


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class TokenRecord:
    token_id: str
    namespace_id: str
    permissions: frozenset[Permission]
    queue_ids: frozenset[str]
    expires_at: datetime | None
    revoked_at: datetime | None
    name: str | None = None  # the operator's label for the token (the audit log's actor)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the namespace is fixed by the token, never by the body."""

    token_id: str
    namespace_id: str
    permissions: frozenset[Permission]
    queue_ids: frozenset[str]
    expires_at: datetime | None = None  # a worker session ends at this instant
    token_name: str | None = None  # the audit log's actor name

    def require(self, permission: Permission) -> None:
        if permission not in self.permissions:
            raise PermissionDenied(f"the token lacks the {permission.value} permission")

    def require_queue(self, queue_id: str) -> None:
        if queue_id not in self.queue_ids:
            raise PermissionDenied("the token has no access to this queue")

    def require_visible(self, namespace_id: str, queue_id: str) -> None:
        """Single-resource reads outside the namespace or queue scope look like absence."""
        if namespace_id != self.namespace_id or queue_id not in self.queue_ids:
            raise NotFound("task not found")


def bearer_secret(header: str | None) -> str:
    if header is None:
        raise Unauthenticated("missing Authorization: Bearer <token> header")
    scheme, _, secret = header.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        raise Unauthenticated("the Authorization header must be 'Bearer <token>'")
    return secret


def authenticate(record: TokenRecord | None, now: datetime) -> Principal:
    """The same message for unknown, expired and revoked tokens: no oracle for guessers."""
    if record is None or record.revoked_at is not None:
        raise Unauthenticated("the token is unknown, expired or revoked")
    if record.expires_at is not None and record.expires_at <= now:
        raise Unauthenticated("the token is unknown, expired or revoked")
    return Principal(
        record.token_id,
        record.namespace_id,
        record.permissions,
        record.queue_ids,
        record.expires_at,
        record.name,
    )


def session_valid(
    found: bool, revoked_at: datetime | None, expires_at: datetime | None, now: datetime
) -> bool:
    """Whether a worker session on a token may go on: the token still exists, is not revoked
    and has not expired at `now` (the same rule as `authenticate`, re-applied while a
    connection stays open)."""
    if not found or revoked_at is not None:
        return False
    return expires_at is None or now < expires_at
