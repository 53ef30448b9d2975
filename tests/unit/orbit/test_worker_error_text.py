"""The error text a worker sends for an unexpected exception (worker-protocol.md §4): the
exception's type and message first, then the end of its traceback, within the protocol's
1024-character limit, so the console can show on the attempt where the handler failed."""

from __future__ import annotations

import pytest

from agentcall.orbit.sdk.worker.outcomes import MAX_MESSAGE_CHARS, from_exception

pytestmark = pytest.mark.unit


def _convert_page(page: int) -> None:
    raise ValueError(f"the converter refused page {page}")


def _nested(detail: str) -> None:
    try:
        raise ValueError(detail * 60)
    except ValueError as exc:
        raise KeyError("page 7") from exc


def _raised(run: object, *args: object) -> BaseException:
    try:
        run(*args)  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - the exception under test
        return exc
    raise AssertionError("it did not raise")


def test_a_raised_exception_sends_its_traceback_after_its_message() -> None:
    body = from_exception(_raised(_convert_page, 3), "IDEMPOTENT")
    assert body is not None
    message = body["error"]["message"]  # type: ignore[index,call-overload]
    lines = message.splitlines()
    assert lines[0] == "ValueError: the converter refused page 3"
    assert lines[1] == "Traceback (most recent call last):"
    assert any("in _convert_page" in line for line in lines)
    assert lines[-1] == "ValueError: the converter refused page 3"
    assert body["error"]["code"] == "handler_exception"  # type: ignore[index,call-overload]


def test_a_long_traceback_keeps_its_innermost_frames_within_the_limit() -> None:
    body = from_exception(_raised(_nested, "of a long document, "), "RECONCILE_ONLY")
    assert body is not None
    message = body["error"]["message"]  # type: ignore[index,call-overload]
    assert len(message) == MAX_MESSAGE_CHARS
    head, rest = message.split("\n", 1)
    assert head.startswith("KeyError: ") and rest.startswith("…")
    assert rest.endswith(head)  # the last line of the traceback: where it failed
    assert "in _nested" in rest


def test_an_exception_never_raised_sends_its_message_only() -> None:
    body = from_exception(RuntimeError("boom"), "IDEMPOTENT")
    assert body is not None
    assert body["error"]["message"] == "RuntimeError: boom"  # type: ignore[index,call-overload]
