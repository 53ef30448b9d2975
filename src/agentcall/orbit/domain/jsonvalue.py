"""Exact JSON values and a compact encoder that writes numbers back as they were read.

A JSON number is kept as its source text (`JsonNumber`), never converted to float, so that
`9007199254740993` or `1.10` come back byte-for-byte. `RawJson` splices text that is already
valid compact JSON (a stored payload or receipt) into an encoded document without re-parsing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias

from agentcall.orbit.domain.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class JsonNumber:
    """A JSON number as its exact source text (already validated against the JSON grammar)."""

    text: str

    def to_decimal(self) -> Decimal:
        return Decimal(self.text)


@dataclass(frozen=True, slots=True)
class RawJson:
    """Text that is already valid compact JSON; encoded verbatim."""

    text: str


JsonValue: TypeAlias = (
    "None | bool | str | int | JsonNumber | RawJson | Decimal"
    " | Sequence[JsonValue] | Mapping[str, JsonValue]"
)

_encode_str = json.encoder.encode_basestring


def dumps(value: JsonValue) -> str:
    """Compact JSON (no spaces), keys in insertion order, non-ASCII kept as UTF-8 text."""
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def _write(value: JsonValue, out: list[str]) -> None:
    # exact-type fast paths first (the ABC checks below cost more than the writing itself)
    if type(value) is str:
        out.append(_encode_str(value))
    elif type(value) is dict:
        _write_object(value, out)
    elif type(value) is JsonNumber or type(value) is RawJson:
        out.append(value.text)
    elif type(value) is int:
        out.append(str(value))
    elif value is None or value is True or value is False:
        out.append("null" if value is None else ("true" if value else "false"))
    elif type(value) is list:
        _write_array(value, out)
    else:
        _write_any(value, out)


def _write_any(value: JsonValue, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif isinstance(value, Mapping):
        _write_object(value, out)
    elif isinstance(value, (JsonNumber, RawJson)):
        out.append(value.text)
    elif value is None or isinstance(value, bool):
        out.append("null" if value is None else ("true" if value else "false"))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, Decimal):
        out.append(_decimal_text(value))
    elif isinstance(value, Sequence):
        _write_array(value, out)
    else:
        raise TypeError(f"not a JSON value: {type(value).__name__} (use Decimal, never float)")


def _write_object(value: Mapping[str, JsonValue], out: list[str]) -> None:
    out.append("{")
    first = True
    for key, item in value.items():
        if not first:
            out.append(",")
        first = False
        out.append(_encode_str(key))
        out.append(":")
        _write(item, out)
    out.append("}")


def _write_array(value: Sequence[JsonValue], out: list[str]) -> None:
    out.append("[")
    for index, item in enumerate(value):
        if index:
            out.append(",")
        _write(item, out)
    out.append("]")


def _decimal_text(value: Decimal) -> str:
    if not value.is_finite():
        raise InvalidArgument("numbers must be finite (no NaN or Infinity)")
    return str(value)
