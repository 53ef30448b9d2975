"""Exact number rules (O-SUB-2) and integer fields.

A number is acceptable when its text has at most 256 characters, its explicit exponent and its
exponent after trailing zeros are removed (coefficient x 10^exponent with an integer
coefficient) both lie in -308..308, and its magnitude fits a finite IEEE double. The check never
uses the float value for anything else; digests use `canonical_decimal`.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonNumber

MAX_NUMBER_CHARS = 256
MAX_EXPONENT = 308
UINT64_MAX = 2**64 - 1

_GRAMMAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE]([+-]?[0-9]+))?\Z")
_UINT = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_INT_LITERAL = re.compile(r"-?[0-9]+\Z")


def check_number(text: str, field: str) -> None:
    """Raise InvalidArgument unless `text` is an acceptable exact JSON number."""
    if len(text) > MAX_NUMBER_CHARS:
        raise InvalidArgument(f"number longer than {MAX_NUMBER_CHARS} characters", field)
    match = _GRAMMAR.match(text)
    if match is None:
        raise InvalidArgument("not a JSON number", field)
    explicit = int(match.group(1)) if match.group(1) else 0
    if abs(explicit) > MAX_EXPONENT or abs(_normalized_exponent(text)) > MAX_EXPONENT:
        raise InvalidArgument(f"number exponent outside -{MAX_EXPONENT}..{MAX_EXPONENT}", field)
    if not math.isfinite(float(text)):
        raise InvalidArgument("number exceeds the magnitude of a finite double", field)


def _normalized_exponent(text: str) -> int:
    sign, digits, exponent = Decimal(text).as_tuple()
    assert isinstance(exponent, int)
    if not any(digits):
        return 0
    trailing = len(digits) - len("".join(map(str, digits)).rstrip("0"))
    return exponent + trailing


def canonical_decimal(value: JsonNumber | int | Decimal) -> str:
    """The exact normalised decimal of orbit-json-v1: `[-]digits[eN]`, no trailing zeros,
    so 1, 1.0, 10e-1 and 0.1e1 all give "1"; 100 gives "1e2"; 1.5 gives "15e-1"; -0 gives "0"."""
    if type(value) is int:  # the common cases, without Decimal
        text = str(value)
    elif type(value) is JsonNumber and _INT_LITERAL.match(value.text):
        text = value.text
    else:
        number = value.to_decimal() if isinstance(value, JsonNumber) else Decimal(value)
        sign, digits, exponent = number.as_tuple()
        assert isinstance(exponent, int)
        return _normalised(bool(sign), "".join(map(str, digits)), exponent)
    negative = text.startswith("-")
    return _normalised(negative, text[1:] if negative else text, 0)


def _normalised(negative: bool, digits: str, exponent: int) -> str:
    """`[-]digits[eN]` of a sign, a digit string and an exponent: leading and trailing zeros
    dropped (the trailing ones into the exponent); zero, of either sign, is "0"."""
    digits = digits.lstrip("0")
    if not digits:
        return "0"
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    prefix = "-" if negative else ""
    return f"{prefix}{stripped}" if exponent == 0 else f"{prefix}{stripped}e{exponent}"


def parse_uint64(value: object, field: str) -> int:
    """An unsigned 64-bit integer written as a JSON integer literal (no fraction, no exponent)."""
    if not isinstance(value, JsonNumber) or value.text.startswith("-"):
        raise InvalidArgument("must be a non-negative integer", field)
    if not _UINT.match(value.text):
        raise InvalidArgument("must be an integer literal without fraction or exponent", field)
    number = int(value.text)
    if number > UINT64_MAX:
        raise InvalidArgument("must fit an unsigned 64-bit integer", field)
    return number


def parse_decimal_uint64(text: str, field: str, *, nonzero: bool = False) -> int:
    """A uint64 written as a decimal string without sign or leading zeros (revisions)."""
    if not _UINT.match(text) or int(text) > UINT64_MAX:
        raise InvalidArgument("must be a decimal string of an unsigned 64-bit integer", field)
    number = int(text)
    if nonzero and number == 0:
        raise InvalidArgument("must not be zero", field)
    return number
