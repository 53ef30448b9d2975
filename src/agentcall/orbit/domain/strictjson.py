"""The strict request reader (O-API-2, O-NOTE-3).

`read_json(raw)` accepts UTF-8 bytes and returns exact JSON values (objects as dicts in source
order, numbers as `JsonNumber`). It rejects, with the path of the offending element:
invalid UTF-8, a byte-order mark, NaN/Infinity, duplicate object keys, lone surrogates (also
written as `\\ud800` escapes), nesting deeper than `MAX_DEPTH` (the top-level value is depth 1)
and numbers outside the exact-number rules of `agentcall.orbit.domain.numbers`.

One pass in the common case: the decoder checks each non-integer number as it reads it, and
the tree is walked afterwards only when the text could hold a problem the decoder does not
see (more than `max_depth` brackets, a `\\uD8..` escape, a run of 256 digits); a failed number
decodes again and walks. The walk finds the first problem in document order with its path,
exactly as the walk of every body does (`read_json_text_walked`, which the tests compare with).
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonNumber, JsonValue
from agentcall.orbit.domain.numbers import MAX_NUMBER_CHARS, check_number

MAX_DEPTH = 32
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _Rejected(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Rejected(f"duplicate key {_show(key)}")
            seen.add(key)
    return result


def _constant(name: str) -> NoReturn:
    raise _Rejected(f"{name} is not valid JSON")


class _Suspect(Exception):
    """A number failed its check: the walk of `read_json_text_walked` names it."""


def _fraction(text: str) -> JsonNumber:
    if not number_ok(text):
        raise _Suspect
    return JsonNumber(text)


def number_ok(text: str) -> bool:
    try:
        check_number(text, "")
    except InvalidArgument:
        return False
    return True


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_float=JsonNumber, parse_int=JsonNumber, parse_constant=_constant
)
# integers are not hooked (a call per integer costs more than the decoding): an integer
# literal of at most 256 characters always passes check_number (both exponents are within
# 0..255, the magnitude below 1e256), and a longer one (sign included) has a run of at least
# 256 digits in the text
_CHECKING_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_float=_fraction, parse_int=JsonNumber, parse_constant=_constant
)
_LONG_DIGITS = re.compile(f"[0-9]{{{MAX_NUMBER_CHARS}}}")


def read_json(raw: bytes, *, max_depth: int = MAX_DEPTH) -> JsonValue:
    """Parse `raw` strictly; raise InvalidArgument naming what was wrong and where."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"body is not valid UTF-8 (byte {exc.start})") from None
    return read_json_text(text, max_depth=max_depth)


def read_json_text(text: str, *, max_depth: int = MAX_DEPTH) -> JsonValue:
    if text.startswith("\ufeff"):
        raise InvalidArgument("body must not start with a byte-order mark")
    try:
        value: JsonValue = _decode(_CHECKING_DECODER, text, max_depth)
    except _Suspect:  # decode again without the number checks; the walk names the number
        return read_json_text_walked(text, max_depth=max_depth)
    escapes = _SURROGATE_ESCAPE.search(text) is not None
    # no container can be deeper than the number of opening brackets in the text
    deep = text.count("{") + text.count("[") > max_depth
    if escapes or deep or _LONG_DIGITS.search(text) is not None:
        _Checker(max_depth, strings=escapes).check(value, 1)
    return value


def read_json_text_walked(text: str, *, max_depth: int = MAX_DEPTH) -> JsonValue:
    """The reference reader: decode, then walk every value (depth, numbers, surrogates)."""
    if text.startswith("\ufeff"):
        raise InvalidArgument("body must not start with a byte-order mark")
    value = _decode(_DECODER, text, max_depth)
    checker = _Checker(max_depth, strings=_SURROGATE_ESCAPE.search(text) is not None)
    checker.check(value, 1)
    return value


def _decode(decoder: json.JSONDecoder, text: str, max_depth: int) -> JsonValue:
    try:
        value: JsonValue = decoder.decode(text)
    except _Rejected as exc:
        raise InvalidArgument(exc.message) from None
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"body is not valid JSON: {exc.msg} at offset {exc.pos}") from None
    except RecursionError:
        raise InvalidArgument(f"nesting deeper than {max_depth} levels") from None
    return value


class _Checker:
    """One walk over the parsed tree: depth, numbers and (when escapes exist) surrogates."""

    def __init__(self, max_depth: int, *, strings: bool) -> None:
        self.max_depth = max_depth
        self.strings = strings
        self.path: list[str | int] = []

    def check(self, value: JsonValue, depth: int) -> None:
        if isinstance(value, dict):
            self._container(depth)
            for key, item in value.items():
                self.path.append(key)
                if self.strings:
                    self._string(key)
                self.check(item, depth + 1)
                self.path.pop()
        elif isinstance(value, list):
            self._container(depth)
            for index, item in enumerate(value):
                self.path.append(index)
                self.check(item, depth + 1)
                self.path.pop()
        elif isinstance(value, JsonNumber):
            if not number_ok(value.text):  # the path is formatted only for the message
                check_number(value.text, self._where())
        elif self.strings and isinstance(value, str):
            self._string(value)

    def _container(self, depth: int) -> None:
        if depth > self.max_depth:
            raise InvalidArgument(f"nesting deeper than {self.max_depth} levels", self._where())

    def _string(self, value: str) -> None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArgument("lone Unicode surrogate in string", self._where()) from None

    def _where(self) -> str:
        return format_path(self.path) or "body"


def format_path(path: list[str | int]) -> str:
    """`payload.items[3].name`; keys are shortened so that messages stay small."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + _show(part, quote=False)
    return out


def _show(key: str, *, quote: bool = True, limit: int = 64) -> str:
    text = key if len(key) <= limit else key[:limit] + "…"
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return repr(text) if quote else text
