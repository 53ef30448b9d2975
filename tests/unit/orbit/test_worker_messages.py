"""Worker protocol v1 messages are read strictly (O-API-2 rules applied to the WebSocket)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.evidence import EvidenceKind
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.worker_errors import InvalidResult
from agentcall.orbit.protocol.messages import (
    AttemptRef,
    Evidence,
    Flow,
    Heartbeat,
    Hello,
    Release,
    ReleaseReason,
    Result,
    ResultOutcome,
    Started,
    parse_message,
)

pytestmark = pytest.mark.unit

ID1, ID2, ID3 = "a" * 32, "b" * 32, "c" * 32
REF = {"attempt_id": ID1, "lease_token": ID2}


def hello(**changes: Any) -> dict[str, Any]:
    message = {
        "type": "hello",
        "protocol": "orbit.worker.v1",
        "worker": {"name": "w-1", "instance_id": ID3, "sdk": "orbit-python/0.1", "pid": 7},
        "queues": [ID1],
        "handlers": [{"handler": "file.convert", "handler_version": "v1"}],
        "capacity": 4,
    }
    message.update(changes)
    return message


def text(message: dict[str, Any]) -> str:
    return json.dumps(message)


def test_hello_parses() -> None:
    parsed = parse_message(text(hello(attempts=[REF])))
    assert isinstance(parsed, Hello)
    assert parsed.queues == (ID1,)
    assert parsed.handlers == frozenset({HandlerKey("file.convert", "v1")})
    assert parsed.capacity == 4
    assert parsed.worker.pid == 7 and parsed.worker.host is None
    assert parsed.attempts == (AttemptRef(ID1, ID2),)


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"type": "hello"}, "unknown"),  # placeholder replaced below
        (hello(protocol="orbit.worker.v2"), "protocol: unsupported protocol"),
        (hello(queues=[]), "queues: must hold 1-100"),
        (hello(queues=[ID1, ID1]), "queues: items must be distinct"),
        (hello(queues=["Q"]), "queues[0]"),
        (hello(capacity=1001), "capacity: must be 0-1000"),
        (hello(capacity=-1), "capacity"),
        (hello(capacity=1.5), "capacity"),
        (hello(handlers=[{"handler": "-x", "handler_version": "v1"}]), "handlers[0].handler"),
        (hello(handlers=[{"handler": "x", "Handler_version": "v1"}]), "case-sensitive"),
        (hello(worker={"name": "w", "instance_id": "nothex"}), "worker.instance_id"),
        (hello(worker={"name": "w", "instance_id": ID1, "pid": 0}), "worker.pid"),
        (hello(worker={"name": "w\n", "instance_id": ID1}), "worker.name"),
        (hello(extra=1), "extra: unknown field"),
        (hello(attempts=[REF, REF]), "attempts: items must be distinct"),
        (hello(attempts=None), "attempts: must not be null"),
    ],
)
def test_hello_rejections(message: dict[str, Any], fragment: str) -> None:
    if message == {"type": "hello"}:
        message, fragment = {"type": "nope"}, "type: unknown message type"
    with pytest.raises(InvalidArgument, match=None) as info:
        parse_message(text(message))
    assert fragment in info.value.message


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ('{"type":"flow","msg_id":"m","capacity":1,"capacity":2}', "duplicate key"),
        ('["hello"]', "must be a JSON object"),
        ('{"type":"flow","msg_id":"m","capacity":1}x', "not valid JSON"),
        ('{"type":"flow","msg_id":"m m","capacity":1}', "msg_id"),
        ('{"type":"started","msg_id":"m","attempt_id":"' + ID1 + '"}', "lease_token: is required"),
        (
            '{"type":"evidence","msg_id":"m","attempt_id":"x","lease_token":"y","items":[]}',
            "attempt_id",
        ),
        ("x" * 1_048_577, "larger than"),
    ],
)
def test_frame_rejections(raw: str, fragment: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_message(raw)
    assert fragment in info.value.message


def test_state_messages_parse() -> None:
    assert parse_message(text({"type": "started", "msg_id": "m1", **REF})) == Started(
        "m1", AttemptRef(ID1, ID2)
    )
    beat = parse_message(text({"type": "heartbeat", "msg_id": "m2", "attempts": [REF]}))
    assert beat == Heartbeat("m2", (AttemptRef(ID1, ID2),))
    release = parse_message(text({"type": "release", "msg_id": "m3", "reason": "shutdown", **REF}))
    assert release == Release("m3", AttemptRef(ID1, ID2), ReleaseReason.SHUTDOWN)
    assert parse_message(text({"type": "flow", "msg_id": "m4", "capacity": 0})) == Flow("m4", 0)


def test_result_succeeded_keeps_exact_numbers() -> None:
    raw = (
        f'{{"type":"result","msg_id":"m","attempt_id":"{ID1}","lease_token":"{ID2}",'
        '"outcome":"succeeded","result":{"n":9007199254740993,"d":1.10}}'
    )
    parsed = parse_message(raw)
    assert isinstance(parsed, Result)
    assert parsed.outcome is ResultOutcome.SUCCEEDED
    assert parsed.result_text == '{"n":9007199254740993,"d":1.10}'
    assert parsed.error is None


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ({"outcome": "succeeded"}, "result: required with outcome succeeded"),
        ({"outcome": "succeeded", "result": None}, "must not be null"),
        ({"outcome": "succeeded", "result": 1, "error": {"code": "x", "message": "m"}}, "error"),
        ({"outcome": "failed", "error": {"code": "x", "message": "m"}}, "error.retryable"),
        (
            {"outcome": "failed", "error": {"code": "x y", "message": "m", "retryable": True}},
            "error.code",
        ),
        (
            {"outcome": "failed", "error": {"code": "x", "message": "m" * 1025, "retryable": True}},
            "error.message",
        ),
        (
            {
                "outcome": "failed",
                "result": 1,
                "error": {"code": "x", "message": "m", "retryable": True},
            },
            "result",
        ),
        (
            {"outcome": "needs_review", "error": {"code": "x", "message": "m", "retryable": True}},
            "error.retryable: unknown field",
        ),
        ({"outcome": "cancelled", "error": {"code": "x", "message": "m"}}, "outcome"),
        (
            {"outcome": "failed", "error": {"code": "x", "message": "m", "retryable": "yes"}},
            "error.retryable",
        ),
    ],
)
def test_result_rejections(extra: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_message(text({"type": "result", "msg_id": "m", **REF, **extra}))
    assert fragment in info.value.message


def test_result_numbers_follow_o_sub_2() -> None:
    raw = f'{{"type":"result","msg_id":"m",{json.dumps(REF)[1:-1]},"outcome":"succeeded",'
    with pytest.raises(InvalidArgument, match="exponent"):
        parse_message(raw + '"result":1e400}')


def test_result_too_large_is_invalid_result() -> None:
    big = "x" * 262_144
    with pytest.raises(InvalidResult):
        parse_message(
            text({"type": "result", "msg_id": "m", **REF, "outcome": "succeeded", "result": big})
        )


def test_failed_result_with_inline_evidence() -> None:
    parsed = parse_message(
        text(
            {
                "type": "result",
                "msg_id": "m",
                **REF,
                "outcome": "failed",
                "error": {"code": "upstream_5xx", "message": "503", "retryable": True},
                "evidence": [{"key": "k1", "kind": "reference", "uri": "https://bank/tx/1"}],
            }
        )
    )
    assert isinstance(parsed, Result)
    assert parsed.error is not None and parsed.error.retryable is True
    assert parsed.evidence[0].kind is EvidenceKind.REFERENCE


def test_evidence_items_and_digest() -> None:
    item = {
        "key": "out",
        "kind": "artifact",
        "uri": "s3://b/o",
        "size_bytes": 12,
        "sha256": "0" * 64,
        "data": {"rows": 9007199254740993},
    }
    parsed = parse_message(text({"type": "evidence", "msg_id": "m", **REF, "items": [item]}))
    again = parse_message(text({"type": "evidence", "msg_id": "n", **REF, "items": [item]}))
    changed = parse_message(
        text({"type": "evidence", "msg_id": "m", **REF, "items": [{**item, "size_bytes": 13}]})
    )
    assert isinstance(parsed, Evidence) and isinstance(again, Evidence)
    assert isinstance(changed, Evidence)
    assert parsed.items[0].data_text == '{"rows":9007199254740993}'
    assert parsed.items[0].digest == again.items[0].digest != changed.items[0].digest


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ({"key": "k", "kind": "artifact"}, "needs at least one of uri and data"),
        ({"key": "k", "kind": "blob", "uri": "u"}, "items[0].kind"),
        ({"key": "k k", "kind": "note", "uri": "u"}, "items[0].key"),
        ({"key": "k", "kind": "note", "uri": "u", "sha256": "ABC"}, "items[0].sha256"),
        ({"key": "k", "kind": "note", "data": "x" * 16_400}, "items[0].data"),
        ({"key": "k", "kind": "note", "uri": "u" * 2049}, "items[0].uri"),
    ],
)
def test_evidence_rejections(item: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_message(text({"type": "evidence", "msg_id": "m", **REF, "items": [item]}))
    assert fragment in info.value.message


def test_evidence_keys_distinct_and_bounded() -> None:
    item = {"key": "k", "kind": "note", "uri": "u"}
    with pytest.raises(InvalidArgument, match="distinct"):
        parse_message(text({"type": "evidence", "msg_id": "m", **REF, "items": [item, item]}))
    many = [{"key": f"k{i}", "kind": "note", "uri": "u"} for i in range(101)]
    with pytest.raises(InvalidArgument, match="1-100"):
        parse_message(text({"type": "evidence", "msg_id": "m", **REF, "items": many}))
