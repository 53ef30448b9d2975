"""A fast yes/no check for flat schemas, compiled from the schema itself (performance).

``jsonschema`` costs ~150 us per ``call.execute`` (most of it building the error
iterator); the contract of ``call.execute`` only uses a handful of keywords, so
:func:`compile_check` turns such a schema into plain closures that answer "valid?" in a
few microseconds. It is used only as a shortcut to *accept*:
:func:`agentcall.dispatcher.contracts.schemas.validate` runs the full validator whenever the check
says no, so errors (path, keyword, detail) stay exactly jsonschema's. A schema using any
keyword outside the subset below is not compiled at all (``None``) and is always
validated by jsonschema.

The subset, with jsonschema's semantics (Draft 2020-12, format checker on):

* ``type`` ``"object"`` or ``"string"`` (a single name);
* ``const`` (a string);
* for strings: ``pattern`` (``re.search``), ``minLength``, ``maxLength`` (code points),
  ``format`` (the same format checker);
* for objects: ``required``, ``properties``, ``additionalProperties: false``;
* annotations (``$schema``, ``$id``, ``title``, ``description``, ``$comment``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import FormatChecker

Check = Callable[[object], bool]

_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "$comment"})
_STRING = frozenset({"pattern", "minLength", "maxLength", "format"})
_OBJECT = frozenset({"required", "properties", "additionalProperties"})
_KNOWN = _ANNOTATIONS | _STRING | _OBJECT | {"type", "const"}


class _Unsupported(Exception):
    """The schema uses something outside the subset."""


def compile_check(schema: object, formats: FormatChecker) -> Check | None:
    """A check equivalent to ``schema`` (no ``$ref`` left), or None outside the subset."""
    try:
        return _node(schema, formats)
    except _Unsupported:
        return None


def _node(schema: object, formats: FormatChecker) -> Check:
    if not isinstance(schema, Mapping) or not set(schema) <= _KNOWN:
        raise _Unsupported
    checks = [_type(schema), _const(schema), _string(schema, formats), _object(schema, formats)]
    parts = tuple(c for c in checks if c is not None)
    if len(parts) == 1:
        return parts[0]

    def check(value: object) -> bool:
        for part in parts:
            if not part(value):
                return False
        return True

    return check


def _type(schema: Mapping[str, Any]) -> Check | None:
    name = schema.get("type")
    if name is None:
        return None
    if name == "string":
        return lambda value: isinstance(value, str)
    if name == "object":
        return lambda value: isinstance(value, dict)
    raise _Unsupported


def _const(schema: Mapping[str, Any]) -> Check | None:
    if "const" not in schema:
        return None
    expected = schema["const"]
    if not isinstance(expected, str):
        raise _Unsupported
    return lambda value: isinstance(value, str) and value == expected


def _string(schema: Mapping[str, Any], formats: FormatChecker) -> Check | None:
    if not set(schema) & _STRING:
        return None
    pattern = schema.get("pattern")
    search = re.compile(pattern).search if isinstance(pattern, str) else None
    low, high, fmt = schema.get("minLength", 0), schema.get("maxLength"), schema.get("format")
    if pattern is not None and search is None or not isinstance(low, int):
        raise _Unsupported
    if not isinstance(high, int | None) or not isinstance(fmt, str | None):
        raise _Unsupported

    def check(value: object) -> bool:
        if not isinstance(value, str):
            return True  # string keywords do not apply to other types
        if len(value) < low or high is not None and len(value) > high:
            return False
        if search is not None and search(value) is None:
            return False
        return fmt is None or formats.conforms(value, fmt)

    return check


def _object(schema: Mapping[str, Any], formats: FormatChecker) -> Check | None:
    if not set(schema) & _OBJECT:
        return None
    required = schema.get("required", [])
    properties = schema.get("properties", {})
    closed = schema.get("additionalProperties", True)
    if not isinstance(closed, bool) or not isinstance(properties, Mapping):
        raise _Unsupported
    if not isinstance(required, list) or not all(isinstance(k, str) for k in required):
        raise _Unsupported
    children = tuple((name, _node(sub, formats)) for name, sub in properties.items())
    allowed = frozenset(name for name, _ in children)
    needed = frozenset(required)

    def check(value: object) -> bool:
        if not isinstance(value, dict):
            return True  # object keywords do not apply to other types
        if not needed.issubset(value) or closed is False and not allowed.issuperset(value):
            return False
        for name, child in children:
            if name in value and not child(value[name]):
                return False
        return True

    return check
