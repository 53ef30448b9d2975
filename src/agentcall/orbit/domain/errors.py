"""The one exception tree of Orbit. Every class maps to exactly one wire error in
`agentcall.orbit.api.errors.ERROR_TABLE`, looked up along the class hierarchy.

    OrbitError                      base; never raised itself
    ├── InvalidArgument             400 INVALID_ARGUMENT   fix the named field, time, cursor or key
    ├── Unauthenticated             401 UNAUTHENTICATED    check the token, its expiry/revocation
    ├── PermissionDenied            403 PERMISSION_DENIED  the token lacks the action or queue scope
    ├── NotFound                    404 NOT_FOUND          no such resource visible to this token
    ├── Conflict                    409 (abstract)
    │   ├── IdempotencyConflict     409 IDEMPOTENCY_CONFLICT  the key was used with other content
    │   └── StateConflict           409 STATE_CONFLICT     state/revision forbids it; GET first
    │       └── IllegalTransition   a state machine edge that does not exist
    ├── BodyTooLarge                413 BODY_TOO_LARGE     send a smaller body or a reference
    ├── UnsupportedMediaType        415 UNSUPPORTED_MEDIA_TYPE  send application/json
    ├── Unavailable                 503 UNAVAILABLE        outcome unknown; retry with the same key
    └── SetupError                  operator errors outside requests (CLI, start-up)
        └── NotMigrated             the database schema is missing or old: run `orbit migrate`
"""

from __future__ import annotations


class OrbitError(Exception):
    """Base of all Orbit errors. `message` is safe to show to the caller (no secrets)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(OrbitError):
    """A field, time, cursor or idempotency key is malformed: fix the field named in `field`."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


class Unauthenticated(OrbitError):
    """No valid bearer token: check that it is present, not expired and not revoked."""


class PermissionDenied(OrbitError):
    """The token lacks the permission or the queue scope: use a token that grants it."""


class NotFound(OrbitError):
    """The resource does not exist in the token's namespace and queues: check the ID."""


class Conflict(OrbitError):
    """The request conflicts with stored state: read the resource before deciding."""


class IdempotencyConflict(Conflict):
    """The idempotency key was used with different content: resend the original content,
    or use a new key only for a genuinely new operation."""


class StateConflict(Conflict):
    """The task's state or revision does not allow this operation: GET the task first."""


class IllegalTransition(StateConflict):
    """A state change that the task state machine does not allow."""


class BodyTooLarge(OrbitError):
    """The request body exceeds 512 KiB: send a reference to the business object instead."""


class UnsupportedMediaType(OrbitError):
    """The body is not declared as `application/json`: set the Content-Type header."""


class Unavailable(OrbitError):
    """The service could not complete the request; the outcome may be unknown.
    Retry later with the same idempotency key and the same content."""


class SetupError(OrbitError):
    """An operator error outside requests (bad configuration or command-line value)."""


class NotMigrated(SetupError):
    """The database schema is missing or older than this program: run `orbit migrate`."""
