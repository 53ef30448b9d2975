"""Worker → server messages of `orbit.worker.v1` (docs/orbit/worker-protocol.md §3), read
strictly (O-API-2 rules: unknown fields, duplicates, nulls, depth) into frozen dataclasses.
Pure: every error is an InvalidArgument naming the field, which the connection answers with an
`INVALID_MESSAGE` ack or close code 4400."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.evidence import (
    EvidenceItem,
    WorkerError,
    read_error,
    read_items,
    read_result,
)
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.ids import check_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.leasing import MAX_CAPACITY, HandlerKey
from agentcall.orbit.domain.numbers import parse_uint64
from agentcall.orbit.domain.strictjson import read_json_text

PROTOCOL = "orbit.worker.v1"
MAX_MESSAGE_BYTES = 1_048_576
MAX_QUEUES = 100
MAX_HANDLERS = 500
MAX_REFS = 1_000
_MSG_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_PRINTABLE = re.compile(r"[\x21-\x7e][\x20-\x7e]*\Z")


@dataclass(frozen=True, slots=True)
class AttemptRef:
    attempt_id: str
    lease_token: str


@dataclass(frozen=True, slots=True)
class WorkerIdentity:
    name: str
    instance_id: str
    sdk: str | None
    host: str | None
    pid: int | None


@dataclass(frozen=True, slots=True)
class Hello:
    worker: WorkerIdentity
    queues: tuple[str, ...]
    handlers: frozenset[HandlerKey]
    capacity: int
    attempts: tuple[AttemptRef, ...]


@dataclass(frozen=True, slots=True)
class Started:
    msg_id: str
    ref: AttemptRef


@dataclass(frozen=True, slots=True)
class Heartbeat:
    msg_id: str
    refs: tuple[AttemptRef, ...]


class ResultOutcome(enum.StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NEEDS_REVIEW = "needs_review"
    # cooperative stop after a `cancel_requested` (docs/orbit/task-control.md §3)
    CANCELLED = "cancelled"


_OUTCOMES = frozenset(o.value for o in ResultOutcome)


@dataclass(frozen=True, slots=True)
class Result:
    msg_id: str
    ref: AttemptRef
    outcome: ResultOutcome
    result_text: str | None
    error: WorkerError | None
    evidence: tuple[EvidenceItem, ...]


@dataclass(frozen=True, slots=True)
class Evidence:
    msg_id: str
    ref: AttemptRef
    items: tuple[EvidenceItem, ...]


class ReleaseReason(enum.StrEnum):
    SHUTDOWN = "shutdown"
    UNSUPPORTED = "unsupported"


_REASONS = frozenset(r.value for r in ReleaseReason)


@dataclass(frozen=True, slots=True)
class Release:
    msg_id: str
    ref: AttemptRef
    reason: ReleaseReason


@dataclass(frozen=True, slots=True)
class Flow:
    msg_id: str
    capacity: int


ClientMessage = Hello | Started | Heartbeat | Result | Evidence | Release | Flow


def parse_message(text: str) -> ClientMessage:
    """Read one text frame. Raises InvalidArgument naming the offending field."""
    if len(text) > MAX_MESSAGE_BYTES or len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
        raise InvalidArgument(f"message larger than {MAX_MESSAGE_BYTES} bytes")
    return parse_value(read_json_text(text))


def parse_value(value: JsonValue) -> ClientMessage:
    """One message already read from a frame (a batch frame holds several)."""
    if not isinstance(value, dict):
        raise InvalidArgument("must be a JSON object", "message")
    kind = value.get("type")
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    if reader is None:
        raise InvalidArgument(f"unknown message type (one of {', '.join(_READERS)})", "type")
    return reader(value)


_HELLO_FIELDS = frozenset(
    {"type", "protocol", "worker", "queues", "handlers", "capacity", "attempts"}
)
_IDENTITY_FIELDS = frozenset({"name", "instance_id", "sdk", "host", "pid"})


def _hello(value: JsonValue) -> Hello:
    fields = ObjectReader(value, _HELLO_FIELDS)
    if fields.raw("protocol", required=True) != PROTOCOL:
        raise InvalidArgument(f"unsupported protocol (this server speaks {PROTOCOL})", "protocol")
    queues = _list(fields, "queues", MAX_QUEUES, required=True)
    queue_ids = tuple(check_id(q, f"queues[{i}]") for i, q in enumerate(queues))
    _distinct(queue_ids, "queues")
    handlers = tuple(_handler(h, i) for i, h in enumerate(_list(fields, "handlers", MAX_HANDLERS)))
    _distinct(handlers, "handlers")
    return Hello(
        worker=_identity(fields.raw("worker", required=True)),
        queues=queue_ids,
        handlers=frozenset(handlers),
        capacity=_capacity(fields),
        attempts=_refs(fields, "attempts", required=False),
    )


def _identity(value: JsonValue) -> WorkerIdentity:
    fields = ObjectReader(value, _IDENTITY_FIELDS, "worker.")
    name = fields.string("name", required=True, max_chars=128)
    assert name is not None
    if not _PRINTABLE.match(name):
        raise InvalidArgument("must be printable ASCII", "worker.name")
    pid = fields.raw("pid")
    return WorkerIdentity(
        name=name,
        instance_id=check_id(fields.raw("instance_id", required=True), "worker.instance_id"),
        sdk=fields.string("sdk", required=False, max_chars=128),
        host=fields.string("host", required=False, max_chars=128),
        pid=None if pid is None else _positive(pid, "worker.pid"),
    )


def _handler(value: JsonValue, index: int) -> HandlerKey:
    fields = ObjectReader(value, frozenset({"handler", "handler_version"}), f"handlers[{index}].")
    return HandlerKey(fields.name_string("handler", 128), fields.name_string("handler_version", 64))


def _capacity(fields: ObjectReader) -> int:
    capacity = parse_uint64(fields.raw("capacity", required=True), "capacity")
    if capacity > MAX_CAPACITY:
        raise InvalidArgument(f"must be 0-{MAX_CAPACITY}", "capacity")
    return capacity


def _positive(value: JsonValue, field: str) -> int:
    number = parse_uint64(value, field)
    if number == 0:
        raise InvalidArgument("must be positive", field)
    return number


def _list(fields: ObjectReader, key: str, limit: int, *, required: bool = True) -> list[JsonValue]:
    value = fields.raw(key, required=required)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidArgument("must be an array", key)
    if not (1 if required else 0) <= len(value) <= limit:
        raise InvalidArgument(f"must hold {1 if required else 0}-{limit} items", key)
    return value


def _distinct(values: tuple[object, ...], field: str) -> None:
    if len(set(values)) != len(values):
        raise InvalidArgument("items must be distinct", field)


def _ref_of(value: JsonValue, prefix: str) -> AttemptRef:
    fields = ObjectReader(value, frozenset({"attempt_id", "lease_token"}), prefix)
    return _ref(fields)


def _ref(fields: ObjectReader) -> AttemptRef:
    return AttemptRef(
        check_id(fields.raw("attempt_id", required=True), fields.name("attempt_id")),
        check_id(fields.raw("lease_token", required=True), fields.name("lease_token")),
    )


def _refs(fields: ObjectReader, key: str, *, required: bool) -> tuple[AttemptRef, ...]:
    items = _list(fields, key, MAX_REFS, required=required)
    refs = tuple(_ref_of(item, f"{key}[{i}].") for i, item in enumerate(items))
    _distinct(tuple(r.attempt_id for r in refs), key)
    return refs


def _msg_id(fields: ObjectReader) -> str:
    value = fields.raw("msg_id", required=True)
    if not isinstance(value, str) or not _MSG_ID.match(value):
        raise InvalidArgument("must be 1-64 characters of [A-Za-z0-9_-]", "msg_id")
    return value


_ATTEMPT_FIELDS = frozenset({"type", "msg_id", "attempt_id", "lease_token"})


def _started(value: JsonValue) -> Started:
    fields = ObjectReader(value, _ATTEMPT_FIELDS)
    return Started(_msg_id(fields), _ref(fields))


def _heartbeat(value: JsonValue) -> Heartbeat:
    fields = ObjectReader(value, frozenset({"type", "msg_id", "attempts"}))
    return Heartbeat(_msg_id(fields), _refs(fields, "attempts", required=True))


def _result(value: JsonValue) -> Result:
    fields = ObjectReader(value, _ATTEMPT_FIELDS | {"outcome", "result", "error", "evidence"})
    outcome = ResultOutcome(
        fields.choice("outcome", _OUTCOMES, "must be succeeded, failed, needs_review or cancelled")
    )
    succeeded = outcome is ResultOutcome.SUCCEEDED
    erred = outcome in (ResultOutcome.FAILED, ResultOutcome.NEEDS_REVIEW)
    _only_if(fields, "result", succeeded)
    _only_if(fields, "error", erred)
    error = read_error(fields.raw("error"), outcome.value == "failed") if erred else None
    msg_id, ref = _msg_id(fields), _ref(fields)
    return Result(
        msg_id=msg_id,
        ref=ref,
        outcome=outcome,
        result_text=read_result(fields.raw("result")) if succeeded else None,
        error=error,
        evidence=read_items(fields.raw("evidence"), "evidence", required=False),
    )


def _only_if(fields: ObjectReader, key: str, wanted: bool) -> None:
    """`result` goes with succeeded only; `error` with failed and needs_review only; a
    `cancelled` outcome carries neither."""
    if fields.present(key) != wanted:
        rule = "required" if wanted else "not allowed"
        raise InvalidArgument(f"{rule} with outcome {fields.value['outcome']}", key)


def _evidence(value: JsonValue) -> Evidence:
    fields = ObjectReader(value, _ATTEMPT_FIELDS | {"items"})
    msg_id, ref = _msg_id(fields), _ref(fields)
    return Evidence(msg_id, ref, read_items(fields.raw("items"), "items", required=True))


def _release(value: JsonValue) -> Release:
    fields = ObjectReader(value, _ATTEMPT_FIELDS | {"reason"})
    reason = fields.choice("reason", _REASONS, "must be shutdown or unsupported")
    return Release(_msg_id(fields), _ref(fields), ReleaseReason(reason))


def _flow(value: JsonValue) -> Flow:
    fields = ObjectReader(value, frozenset({"type", "msg_id", "capacity"}))
    return Flow(_msg_id(fields), _capacity(fields))


_READERS: dict[str, Callable[[JsonValue], ClientMessage]] = {
    "hello": _hello,
    "started": _started,
    "heartbeat": _heartbeat,
    "result": _result,
    "evidence": _evidence,
    "release": _release,
    "flow": _flow,
}
