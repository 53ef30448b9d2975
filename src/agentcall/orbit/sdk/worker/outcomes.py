"""How a handler's return value or exception becomes a protocol `result` (worker-protocol.md
§3.6, §4). Pure: the runtime sends what these functions build."""

from __future__ import annotations

import traceback
from typing import Any

from agentcall.orbit.domain.jsonvalue import JsonValue, RawJson
from agentcall.orbit.sdk.worker.errors import Cancelled, HandlerFailed, NeedsReview
from agentcall.orbit.sdk.worker.wire import encode

MAX_RESULT_BYTES = 262_144
MAX_MESSAGE_CHARS = 1024


def succeeded(value: Any) -> dict[str, JsonValue]:
    """The result message body for a returned value, or an `invalid_result` failure."""
    try:
        text = encode(value)
    except (TypeError, ValueError) as exc:
        return invalid_result(f"result is not JSON: {exc}")
    if len(text.encode("utf-8")) > MAX_RESULT_BYTES:
        return invalid_result(f"result exceeds {MAX_RESULT_BYTES} bytes; return a reference")
    return {"outcome": "succeeded", "result": RawJson(text)}


def invalid_result(message: str) -> dict[str, JsonValue]:
    return failed("invalid_result", message, retryable=False)


def failed(code: str, message: str, *, retryable: bool) -> dict[str, JsonValue]:
    error: dict[str, JsonValue] = {"code": code, "message": _clip(message), "retryable": retryable}
    return {"outcome": "failed", "error": error}


def from_exception(exc: BaseException, recovery_safety: str) -> dict[str, JsonValue] | None:
    """None means "hand the attempt back" (the handler stopped on cancellation)."""
    if isinstance(exc, Cancelled):
        return None
    if isinstance(exc, HandlerFailed):
        return failed(exc.code, exc.message, retryable=exc.retryable)
    if isinstance(exc, NeedsReview):
        error: dict[str, JsonValue] = {"code": exc.code, "message": _clip(exc.message)}
        return {"outcome": "needs_review", "error": error}
    # An unexpected exception is retryable only when re-running is declared safe.
    return failed("handler_exception", describe(exc), retryable=recovery_safety == "IDEMPOTENT")


def describe(exc: BaseException) -> str:
    """`Type: message`, then as much of the end of its traceback (the innermost frames) as
    fits the protocol's message limit: the console shows it on the attempt."""
    head = f"{type(exc).__name__}: {exc}"
    if exc.__traceback__ is None or len(head) >= MAX_MESSAGE_CHARS - 1:
        return head
    trace = "".join(traceback.format_exception(exc)).rstrip("\n")
    room = MAX_MESSAGE_CHARS - len(head) - 1
    return f"{head}\n{trace if len(trace) <= room else '…' + trace[-(room - 1) :]}"


def _clip(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 1] + "…"
