"""Hostile input reaches no unhandled exception: every request body of every endpoint, and
every worker message, with any JSON value in any field (objects and arrays where strings are
expected, deep nesting, huge numbers, odd Unicode), is either accepted or refused with
InvalidArgument (400) — never a TypeError or another exception that the server would have to
answer as its own failure. `:resolve` with an object as `outcome` raised TypeError
and was answered 503 "retry with the same key"."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcall.orbit.domain.batch import parse_batch
from agentcall.orbit.domain.cancel import parse_cancel
from agentcall.orbit.domain.cursor import decode_cursor
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.review import parse_resolve, parse_retry
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import parse_submit
from agentcall.orbit.domain.worker_errors import ProtocolError
from agentcall.orbit.protocol.messages import parse_message
from tests.support.fuzzing import FUZZ

pytestmark = pytest.mark.unit
ID = "1" * 32

SUBMIT: dict[str, Any] = {
    "queue_id": ID,
    "handler": "h",
    "handler_version": "v1",
    "payload_version": "v1",
    "payload": {"n": 1},
    "business_key": "b",
    "recovery_safety": "IDEMPOTENT",
    "task_timeout_ms": 60000,
    "available_at": None,
    "start_deadline_at": None,
    "retry": {
        "max_attempts": 3,
        "attempt_timeout_ms": 1000,
        "initial_delay_ms": 10,
        "max_delay_ms": 100,
    },
}
CANCEL = {"expected_revision": "1", "reason": "r"}
RESOLVE_OK = {
    "expected_revision": "2",
    "outcome": "succeeded",
    "reason": "r",
    "result": {"a": 1},
    "evidence": [{"key": "k", "kind": "note", "data": {"x": 1}}],
}
RESOLVE_FAILED = {
    "expected_revision": "2",
    "outcome": "failed",
    "reason": "r",
    "error": {"code": "bad", "message": "m"},
}
REF = {"attempt_id": ID, "lease_token": "2" * 32}
WORKER: list[dict[str, Any]] = [
    {
        "type": "hello",
        "protocol": "orbit.worker.v1",
        "worker": {"name": "w", "instance_id": ID, "sdk": "s", "host": "h", "pid": 1},
        "queues": [ID],
        "handlers": [{"handler": "h", "handler_version": "v1"}],
        "capacity": 4,
        "attempts": [REF],
    },
    {"type": "started", "msg_id": "m", **REF},
    {"type": "heartbeat", "msg_id": "m", "attempts": [REF]},
    {
        "type": "result",
        "msg_id": "m",
        **REF,
        "outcome": "succeeded",
        "result": {"a": 1},
        "evidence": [
            {"key": "k", "kind": "artifact", "uri": "s3://b/k", "size_bytes": 3, "sha256": "a" * 64}
        ],
    },
    {
        "type": "result",
        "msg_id": "m",
        **REF,
        "outcome": "failed",
        "error": {"code": "c", "message": "m", "retryable": True},
    },
    {
        "type": "evidence",
        "msg_id": "m",
        **REF,
        "items": [{"key": "k", "kind": "reference", "uri": "u"}],
    },
    {"type": "release", "msg_id": "m", **REF, "reason": "shutdown"},
    {"type": "flow", "msg_id": "m", "capacity": 2},
]


def _worker(value: Any) -> object:
    return parse_message(json.dumps(value))


PARSERS: dict[str, tuple[Callable[[Any], object], list[dict[str, Any]]]] = {
    "submit": (parse_submit, [SUBMIT]),
    "batch": (parse_batch, [{"tasks": [SUBMIT, SUBMIT]}]),
    "cancel": (parse_cancel, [CANCEL]),
    "retry": (parse_retry, [CANCEL]),
    "resolve": (parse_resolve, [RESOLVE_OK, RESOLVE_FAILED]),
    "worker": (_worker, WORKER),
}
WRONG_TYPES: list[Any] = [{"a": "b"}, ["succeeded"], [], {}, 1, -1.5, True, None, "x" * 300]


def _read(value: Any) -> Any:
    """The value as the server's strict reader hands it to a parser (exact numbers)."""
    return read_json(json.dumps(value).encode())


def _refused_or_accepted(parse: Callable[[Any], object], body: Any, worker: bool) -> None:
    try:
        parse(body if worker else _read(body))
    except (InvalidArgument, ProtocolError):
        pass


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in `value` a field can be replaced (object keys, array items)."""
    found: list[tuple[Any, ...]] = []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    for key, child in items:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key)))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


CASES = [
    (name, index, path)
    for name, (_, bodies) in PARSERS.items()
    for index, body in enumerate(bodies)
    for path in _paths(body)
]


def test_the_valid_bodies_are_valid() -> None:
    for name, (parse, bodies) in PARSERS.items():
        for body in bodies:
            parse(body if name == "worker" else _read(body))


@pytest.mark.parametrize(
    ("name", "index", "path"), CASES, ids=[f"{n}{i}:{'.'.join(map(str, p))}" for n, i, p in CASES]
)
def test_every_field_with_every_wrong_type_is_refused(
    name: str, index: int, path: tuple[Any, ...]
) -> None:
    """Objects and arrays where a string is expected (and every other wrong type) are a 400,
    in every field of every endpoint and worker message."""
    parse, bodies = PARSERS[name]
    for wrong in WRONG_TYPES:
        _refused_or_accepted(parse, _replaced(bodies[index], path, wrong), name == "worker")


@pytest.mark.parametrize("outcome", [{"a": "b"}, ["succeeded"], ["failed"], 1, True])
def test_resolve_outcome_of_another_type_is_invalid_argument(outcome: Any) -> None:
    """The original defect: an object or array as `outcome` raised TypeError (unhashable)."""
    with pytest.raises(InvalidArgument, match="outcome"):
        parse_resolve(_read({**RESOLVE_OK, "outcome": outcome}))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.fuzz
@pytest.mark.timeout(1800)  # 10,000 cases take ~2 min here (make fuzz)
@FUZZ
@given(name=st.sampled_from(sorted(PARSERS)), choice=st.data(), value=JSON)
def test_any_value_in_any_field_is_accepted_or_refused(
    name: str, choice: st.DataObject, value: Any
) -> None:
    parse, bodies = PARSERS[name]
    body = choice.draw(st.sampled_from(bodies))
    path = choice.draw(st.sampled_from(_paths(body)))
    _refused_or_accepted(parse, _replaced(body, path, value), name == "worker")


@pytest.mark.fuzz
@pytest.mark.timeout(1800)  # 10,000 cases take ~2 min here (make fuzz)
@FUZZ
@given(name=st.sampled_from(sorted(PARSERS)), body=JSON)
def test_any_body_is_accepted_or_refused(name: str, body: Any) -> None:
    parse, _ = PARSERS[name]
    _refused_or_accepted(parse, body, name == "worker")


@pytest.mark.fuzz
@pytest.mark.timeout(1800)  # 10,000 cases take ~2 min here (make fuzz)
@FUZZ
@given(raw=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_are_read_or_refused(raw: bytes) -> None:
    """The strict reader itself: any bytes (and any depth) are JSON or InvalidArgument."""
    try:
        read_json(raw)
    except InvalidArgument:
        pass


@pytest.mark.parametrize("depth", [33, 1000, 100_000])
def test_deep_nesting_is_refused_not_a_recursion_error(depth: int) -> None:
    with pytest.raises(InvalidArgument):
        read_json(b"[" * depth + b"]" * depth)
    with pytest.raises((InvalidArgument, ProtocolError)):
        parse_message("[" * depth + "]" * depth)


@pytest.mark.fuzz
@pytest.mark.timeout(1800)  # 10,000 cases take ~2 min here (make fuzz)
@FUZZ
@given(text=st.text(max_size=200))
def test_any_cursor_is_decoded_or_refused(text: str) -> None:
    try:
        decode_cursor(text, ID, None)
    except InvalidArgument:
        pass
