"""The versioned content digest `orbit-json-v1` (O-SUB-2).

Canonical form: object keys sorted by Unicode code point, no whitespace, strings encoded as
compact JSON (non-ASCII kept, minimal escapes), numbers as exact normalised decimals (see
`numbers.canonical_decimal`: 1 == 1.0 == 10e-1), arrays in order, defaults applied and times
normalised to UTC before encoding. The digest is SHA-256 over
`{"algorithm":"orbit-json-v1","operation":OP,"request":CANONICAL}`. Not RFC 8785.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from agentcall.orbit.domain.jsonvalue import JsonNumber, JsonValue
from agentcall.orbit.domain.numbers import canonical_decimal

ALGORITHM = "orbit-json-v1"
_encode_str = json.encoder.encode_basestring


@dataclass(frozen=True, slots=True)
class Digest:
    algorithm: str
    hex: str


def canonical_text(value: JsonValue) -> str:
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def digest(operation: str, request: JsonValue) -> Digest:
    document = {"algorithm": ALGORITHM, "operation": operation, "request": request}
    text = canonical_text(document)
    return Digest(ALGORITHM, hashlib.sha256(text.encode("utf-8")).hexdigest())


def digest_canonical(operation: str, request_text: str) -> Digest:
    """`digest(operation, request)` for a request already written as `canonical_text`."""
    text = (
        f'{{"algorithm":{_encode_str(ALGORITHM)},"operation":{_encode_str(operation)},'
        f'"request":{request_text}}}'
    )
    return Digest(ALGORITHM, hashlib.sha256(text.encode("utf-8")).hexdigest())


def _write(value: JsonValue, out: list[str]) -> None:
    # exact-type fast paths first (the ABC checks below cost more than the writing itself)
    if type(value) is str:
        out.append(_encode_str(value))
    elif type(value) is dict:
        out.append("{")
        for index, key in enumerate(sorted(value)):
            out.append("," if index else "")
            out.append(_encode_str(key) + ":")
            _write(value[key], out)
        out.append("}")
    elif type(value) is JsonNumber or type(value) is int:  # a bool's type is bool, not int
        out.append(canonical_decimal(value))
    else:
        _write_any(value, out)


def _write_any(value: JsonValue, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif isinstance(value, Mapping):
        out.append("{")
        for index, key in enumerate(sorted(value)):
            out.append("," if index else "")
            out.append(_encode_str(key) + ":")
            _write(value[key], out)
        out.append("}")
    elif value is None or isinstance(value, bool):
        out.append("null" if value is None else ("true" if value else "false"))
    elif isinstance(value, (JsonNumber, int, Decimal)):
        out.append(canonical_decimal(value))
    elif isinstance(value, Sequence):
        out.append("[")
        for index, item in enumerate(value):
            out.append("," if index else "")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"no canonical form for {type(value).__name__}")
