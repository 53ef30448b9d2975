"""A received result body is parsed strictly and never raises: what is not strict JSON is
stored with the reason (D-MQ-2), and what is parsed can always be answered as JSON."""

from __future__ import annotations

import pytest

from agentcall.mocksaas.domain.results import facts_of, parse_body

NOT_STRICT = [
    ("5,000 nested [", b"[" * 5000 + b"]" * 5000, "body is nested too deeply"),
    ("invalid UTF-8", b"\xff", "body is not UTF-8"),
    ("truncated", b'{"a": ', "body is not JSON"),
    ("NaN", b'{"a": NaN}', "non-finite number NaN"),
    ("beyond a double", b"[1e999]", "number beyond a double"),
    ("5,000 digits", b"[" + b"7" * 5000 + b"]", "4300"),
    ("duplicate key", b'{"a": 1, "a": 2}', "duplicate key"),
    ("lone surrogate", b'{"event_id": "\\udc00"}', "lone UTF-16 surrogate"),
]


@pytest.mark.parametrize(("name", "raw", "reason"), NOT_STRICT, ids=[c[0] for c in NOT_STRICT])
def test_not_strict_json_is_a_reason_not_an_exception(name: str, raw: bytes, reason: str) -> None:
    body, problem = parse_body(raw)
    assert body is None and problem is not None and reason in problem


def test_index_fields_keep_only_storable_text() -> None:
    facts = facts_of({"event_id": "x" * 2000, "event_type": "\ud800", "payload": {"status": 1}})
    assert (facts.event_id, facts.event_type, facts.status) == (None, None, None)
