"""The one table from exceptions to wire errors (O-ERR-1), looked up along the class
hierarchy (most specific class first)."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.orbit.domain import errors as e


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
ERROR_CODES = frozenset(wire.code for wire in ERROR_TABLE.values())


def wire_error(exc: BaseException) -> WireError:
    """Unknown failures are 503: the caller must treat the outcome as unknown."""
    for cls in type(exc).__mro__:
        wire = ERROR_TABLE.get(cls)
        if wire is not None:
            return wire
    return UNAVAILABLE
