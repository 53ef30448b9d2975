"""The one table from exceptions to wire errors (O-ERR-1), looked up along the class
hierarchy (most specific class first). A failure of the database (a driver error, a refused
or lost connection) is 503 UNAVAILABLE: the outcome is unknown, retry with the same key.
Anything else that escapes a handler is a defect of the server, never of the request or of
a dependency: 500 INTERNAL (logged with its traceback and counted), so that a client does
not retry a request that can never succeed."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.orbit.domain import errors as e
from agentcall.orbit.usecases.failures import is_database_failure


@dataclass(frozen=True, slots=True)
class WireError:
    status: int
    code: str


ERROR_TABLE: dict[type[e.OrbitError], WireError] = {
    e.InvalidArgument: WireError(400, "INVALID_ARGUMENT"),
    e.Unauthenticated: WireError(401, "UNAUTHENTICATED"),
    e.PermissionDenied: WireError(403, "PERMISSION_DENIED"),
    e.NotFound: WireError(404, "NOT_FOUND"),
    e.IdempotencyConflict: WireError(409, "IDEMPOTENCY_CONFLICT"),
    e.StateConflict: WireError(409, "STATE_CONFLICT"),
    e.BodyTooLarge: WireError(413, "BODY_TOO_LARGE"),
    e.UnsupportedMediaType: WireError(415, "UNSUPPORTED_MEDIA_TYPE"),
    e.Unavailable: WireError(503, "UNAVAILABLE"),
}
UNAVAILABLE = ERROR_TABLE[e.Unavailable]
INTERNAL = WireError(500, "INTERNAL")
ERROR_CODES = frozenset(wire.code for wire in ERROR_TABLE.values()) | {INTERNAL.code}


def wire_error(exc: BaseException) -> WireError:
    """The table's entry; a database failure that was not translated yet is 503; any other
    exception is 500 INTERNAL."""
    for cls in type(exc).__mro__:
        wire = ERROR_TABLE.get(cls)
        if wire is not None:
            return wire
    return UNAVAILABLE if is_database_failure(exc) else INTERNAL
