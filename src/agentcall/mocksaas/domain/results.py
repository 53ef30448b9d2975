"""Classification of a received result body (pure): what to index and count."""

from __future__ import annotations

import json
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
    return value if isinstance(value, str) else None


def parse_body(raw: bytes) -> tuple[Any, str | None]:
    """Parsed JSON or the reason it is not JSON."""
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "body is not UTF-8"
    except json.JSONDecodeError as exc:
        return None, f"body is not JSON: {exc.msg} at {exc.pos}"


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


class Validator(Protocol):
    def violations(self, kind: str, body: Any) -> Sequence[object]: ...


def check_result(validator: Validator, dispatcher_id: str, raw: bytes
                 ) -> tuple[object, list[str]]:
    """Parsed body and every reason it breaks the contract (empty: valid)."""
    if len(raw) > MAX_BODY_BYTES:
        return None, [f"$: body is {len(raw)} bytes, above {MAX_BODY_BYTES}"]
    body, problem = parse_body(raw)
    if problem is not None:
        return None, [f"$: {problem}"]
    kind = schema_kind(body)
    if kind is None:
        return body, ["$.event_type: not command.result or call.result"]
    errors = [str(v) for v in validator.violations(kind, body)]
    if isinstance(body, dict) and body.get("dispatcher_id") != dispatcher_id:
        errors.append("$.dispatcher_id: does not match the result queue's dispatcher")
    return body, errors
