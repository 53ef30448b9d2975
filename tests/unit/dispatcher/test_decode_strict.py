"""The decoder refuses every body that is not strict JSON as a contract error, and nothing
else escapes it (D-MQ-5: such a body is recorded redacted and dead-lettered; D-ID-3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcall.dispatcher import contracts
from agentcall.dispatcher.contracts import MAX_BODY_BYTES, ContractError, Kind

D = "c046b893-8628-4589-ae50-619d049248a6"
VALID: dict[str, Any] = {
    "schema_version": "command-next.v0.1-proposal",
    "dispatcher_id": D,
    "tenant_id": "tenant-a",
    "tenant_key": "tenant-a",
    "trace_id": "trace-1",
    "issued_at": "2026-09-21T00:00:00Z",
    "command_id": "cmd-1",
    "command_type": "call.execute",
    "not_after": "2026-09-21T00:15:00Z",
    "payload": {"task_id": "task-a", "callee": "15000000001"},
}
RAW = json.dumps(VALID).encode()

# (name, body, keyword of the ContractError)
REFUSED = [
    (
        "D-MQ-5 5,000 nested [ (the 10 KB body that stopped the D)",
        b"[" * 5000 + b"]" * 5000,
        "json",
    ),
    ("D-MQ-5 100,000 nested objects, never closed", b'{"a":' * 100_000, "json"),
    ("D-MQ-5 deep but parseable: refused by the schema", b"[" * 900 + b"]" * 900, "type"),
    ("D-MQ-5 invalid UTF-8", b'{"a": "\xff"}', "json"),
    ("D-MQ-5 UTF-16 with a BOM", RAW.decode().encode("utf-16"), "json"),
    ("D-MQ-5 UTF-8 with a BOM", b"\xef\xbb\xbf" + RAW, "json"),
    ("D-MQ-5 NaN", RAW[:-1] + b', "n": NaN}', "json"),
    ("D-MQ-5 -Infinity", b"[-Infinity]", "json"),
    ("D-MQ-5 a number beyond a double", b"[1e999]", "json"),
    ("D-MQ-5 an integer of 5,000 digits", b"[" + b"9" * 5000 + b"]", "json"),
    ("D-MQ-5 duplicate key", RAW[:-1] + b', "command_id": "cmd-2"}', "json"),
    (
        "D-MQ-5 a lone surrogate (cannot be stored as UTF-8)",
        RAW.replace(b"trace-1", b"\\ud800"),
        "json",
    ),
    ("D-ID-3 above 8 MiB", b" " * (MAX_BODY_BYTES + 1), "maxBytes"),
]


@pytest.mark.parametrize(("name", "body", "keyword"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_as_a_contract_error(name: str, body: bytes, keyword: str) -> None:
    with pytest.raises(ContractError) as refused:
        contracts.decode(Kind.CALL_EXECUTE, body)
    assert refused.value.keyword == keyword


def test_a_surrogate_pair_is_not_a_lone_surrogate() -> None:
    body = contracts.decode(Kind.CALL_EXECUTE, RAW.replace(b"trace-1", b"\\ud83d\\ude00"))
    assert isinstance(body, dict) and body["trace_id"] == "\U0001f600"


def test_every_kind_refuses_the_nested_body_d_mq_5() -> None:
    for kind in contracts.kinds():
        with pytest.raises(ContractError):
            contracts.decode(kind, b"[" * 5000 + b"]" * 5000)
