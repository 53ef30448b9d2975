"""JSON on the wire for the SDK: payloads decode with exact numbers (int, Decimal), results
encode without losing them (Decimal kept as written; a float is written by its shortest repr)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from agentcall.orbit.domain.jsonvalue import JsonValue, dumps


def decode(text: str | bytes) -> Any:
    return json.loads(text, parse_float=Decimal)


def encode(value: Any) -> str:
    """Compact JSON; raises TypeError/ValueError for values JSON cannot represent."""
    return dumps(to_json_value(value))


def to_json_value(value: Any) -> JsonValue:
    """Plain Python data as exact JSON values (floats by their shortest repr)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and Infinity are not JSON numbers")
        return Decimal(repr(value))
    if isinstance(value, Mapping):
        return {_key(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [to_json_value(v) for v in value]
    if value is None or isinstance(value, (bool, int, str, Decimal)):
        return value
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
    return key
