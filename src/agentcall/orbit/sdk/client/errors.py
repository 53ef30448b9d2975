"""SDK exceptions: one class per API error code, plus transport failures.

OrbitClientError
├── APIError                      the server answered with an error body
│   ├── InvalidArgumentError      400 fix the field named in the message
│   ├── UnauthenticatedError      401 check the token, its expiry and revocation
│   ├── PermissionDeniedError     403 the token lacks the permission or queue scope
│   ├── NotFoundError             404 no such task for this token
│   ├── IdempotencyConflictError  409 the key was used with different content
│   ├── StateConflictError        409 GET the task and decide again
│   ├── BodyTooLargeError         413 pass a reference instead of the data
│   ├── UnsupportedMediaTypeError 415 (an SDK bug: report it)
│   └── UnavailableError          503 outcome unknown: retry later with the same key
└── TransportError                no answer: outcome unknown, retry with the same key
"""

from __future__ import annotations

from typing import Any


class OrbitClientError(Exception):
    """Base of every SDK error."""


class APIError(OrbitClientError):
    """`items`: for a refused batch, every invalid item as {"index", "field"?, "message"}."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        request_id: str | None,
        items: tuple[dict[str, Any], ...] = (),
    ) -> None:
        super().__init__(f"{status} {code}: {message} (request_id={request_id})")
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.items = items


class InvalidArgumentError(APIError):
    """Fix the field, time, cursor or key named in the message."""


class UnauthenticatedError(APIError):
    """Check the token: present, not expired, not revoked."""


class PermissionDeniedError(APIError):
    """The token lacks the action or the queue scope."""


class NotFoundError(APIError):
    """No such task in the token's namespace and queues."""


class IdempotencyConflictError(APIError):
    """The key was already used with other content: do not blindly switch keys."""


class StateConflictError(APIError):
    """The task's state or revision forbids the operation: GET it first."""


class BodyTooLargeError(APIError):
    """The request exceeds 512 KiB: pass a reference to the business object."""


class UnsupportedMediaTypeError(APIError):
    """The SDK always sends application/json; seeing this is a bug."""


class UnavailableError(APIError):
    """The outcome is unknown: retry later with the same key and content."""


class TransportError(OrbitClientError):
    """No response (network, timeout): the outcome is unknown; retry with the same key."""


ERRORS_BY_CODE: dict[str, type[APIError]] = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "UNAUTHENTICATED": UnauthenticatedError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "NOT_FOUND": NotFoundError,
    "IDEMPOTENCY_CONFLICT": IdempotencyConflictError,
    "STATE_CONFLICT": StateConflictError,
    "BODY_TOO_LARGE": BodyTooLargeError,
    "UNSUPPORTED_MEDIA_TYPE": UnsupportedMediaTypeError,
    "UNAVAILABLE": UnavailableError,
}
