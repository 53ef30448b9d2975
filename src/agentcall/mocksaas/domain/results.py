"""Classification of a received result body (pure): what to index and count."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ResultFacts:
    """Index fields of a stored result; every field may be None for garbage."""

    event_id: str | None = None
    event_type: str | None = None
    command_type: str | None = None
    command_id: str | None = None
    task_id: str | None = None
    action: str | None = None
    status: str | None = None
    reason_code: str | None = None
    outcome: str | None = None
    task_state: str | None = None

    @property
    def is_stop_applied(self) -> bool:
        """The D's ``stopped/applied`` receipt that allows queue retirement (§3.4)."""
        return (
            self.event_type == "command.result"
            and self.command_type == "task.control"
            and self.action == "stop"
            and self.status == "applied"
            and self.task_state == "stopped"
        )


def _text(value: Any) -> str | None:
    """A string index field; None for anything else, and for a string that cannot be
    stored as UTF-8 (a lone surrogate) or is too long to be an index value."""
    if not isinstance(value, str) or len(value) > 1024:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # maybe a lone surrogate


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    body = dict(pairs)
    if len(body) != len(pairs):
        raise ValueError("duplicate key")
    return body


def _no_constant(name: str) -> object:
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("number beyond a double")
    return value


def parse_body(raw: bytes) -> tuple[Any, str | None]:
    """Parsed strict JSON or the reason it is not; never raises, whatever ``raw`` holds.

    Strict: UTF-8, no duplicate keys, no NaN/Infinity nor numbers beyond a double, integers
    of at most 4,300 digits, no lone UTF-16 surrogate, nesting the interpreter can follow:
    what it returns can always be stored and answered as JSON.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "body is not UTF-8"
    try:
        body = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
        if _SURROGATE_ESCAPE.search(text):
            json.dumps(body, ensure_ascii=False).encode("utf-8")  # a lone one cannot encode
    except json.JSONDecodeError as exc:
        return None, f"body is not JSON: {exc.msg} at {exc.pos}"
    except RecursionError:
        return None, "body is nested too deeply"
    except UnicodeEncodeError:
        return None, "body is not strict JSON: a lone UTF-16 surrogate"
    except ValueError as exc:
        return None, f"body is not strict JSON: {str(exc)[:100]}"
    return body, None


def facts_of(body: Any) -> ResultFacts:
    if not isinstance(body, dict):
        return ResultFacts()
    payload = body.get("payload")
    p: dict[str, Any] = payload if isinstance(payload, dict) else {}
    return ResultFacts(
        event_id=_text(body.get("event_id")),
        event_type=_text(body.get("event_type")),
        command_type=_text(p.get("command_type")),
        command_id=_text(p.get("command_id")) or _text(p.get("source_command_id")),
        task_id=_text(p.get("task_id")),
        action=_text(p.get("action")),
        status=_text(p.get("status")),
        reason_code=_text(p.get("reason_code")),
        outcome=_text(p.get("outcome")),
        task_state=_text(p.get("task_state")),
    )


def schema_kind(body: Any) -> str | None:
    """Which contract kind a received body claims to be (None: unknown)."""
    if not isinstance(body, dict):
        return None
    event_type = body.get("event_type")
    if event_type == "call.result":
        return "call-result.call_result"
    if event_type == "command.result":
        payload = body.get("payload")
        if isinstance(payload, dict) and payload.get("command_type") == "task.control":
            return "command-next.control_result"
        return "command-next.execute_result"
    return None


MAX_BODY_BYTES = 8_388_608  # D-ID-3
MAX_ERRORS = 20  # violations kept per result, each cut to 300 characters


class Validator(Protocol):
    def violations(self, kind: str, body: Any) -> Sequence[object]: ...


def check_result(validator: Validator, dispatcher_id: str, raw: bytes) -> tuple[object, list[str]]:
    """Parsed body and every reason it breaks the contract (empty: valid)."""
    if len(raw) > MAX_BODY_BYTES:
        return None, [f"$: body is {len(raw)} bytes, above {MAX_BODY_BYTES}"]
    body, problem = parse_body(raw)
    if problem is not None:
        return None, [f"$: {problem}"]
    kind = schema_kind(body)
    if kind is None:
        return body, ["$.event_type: not command.result or call.result"]
    try:
        errors = [str(v)[:300] for v in validator.violations(kind, body)][:MAX_ERRORS]
    except RecursionError:
        return body, ["$: nested too deeply to validate"]
    if isinstance(body, dict) and body.get("dispatcher_id") != dispatcher_id:
        errors.append("$.dispatcher_id: does not match the result queue's dispatcher")
    return body, errors
