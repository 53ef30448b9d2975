"""Typed access to a strict JSON object: unknown and case-variant fields, explicit nulls,
strings with length and pattern rules, unsigned integers and times. Each error names its field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.numbers import parse_uint64
from agentcall.orbit.domain.times import parse_time

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")


class ObjectReader:
    """Reads the fields of one JSON object; `prefix` is prepended to field names in errors."""

    def __init__(self, value: JsonValue, allowed: frozenset[str], prefix: str = "") -> None:
        if not isinstance(value, Mapping):
            raise InvalidArgument("must be a JSON object", prefix.rstrip(".") or "body")
        self.value: Mapping[str, JsonValue] = value
        self.prefix = prefix
        for key in value:
            if key not in allowed:
                raise InvalidArgument(_unknown(key, allowed), prefix + key)

    def name(self, key: str) -> str:
        return self.prefix + key

    def present(self, key: str) -> bool:
        return key in self.value

    def raw(self, key: str, *, required: bool = False, nullable: bool = False) -> JsonValue:
        if key not in self.value:
            if required:
                raise InvalidArgument("is required", self.name(key))
            return None
        item = self.value[key]
        if item is None and not nullable:
            raise InvalidArgument("must not be null", self.name(key))
        return item

    def choice(self, key: str, choices: frozenset[str], message: str) -> str:
        """A required string that is one of `choices` (any other JSON value: `message`)."""
        item = self.raw(key, required=True)
        if not isinstance(item, str) or item not in choices:
            raise InvalidArgument(message, self.name(key))
        return item

    def string(self, key: str, *, required: bool, max_chars: int, min_chars: int = 1) -> str | None:
        item = self.raw(key, required=required)
        if item is None:
            return None
        if not isinstance(item, str):
            raise InvalidArgument("must be a string", self.name(key))
        if not min_chars <= len(item) <= max_chars:
            raise InvalidArgument(f"must be {min_chars}-{max_chars} characters", self.name(key))
        return item

    def name_string(self, key: str, max_chars: int) -> str:
        value = self.string(key, required=True, max_chars=max_chars)
        assert value is not None
        if not NAME_PATTERN.match(value):
            raise InvalidArgument(
                "must start with an ASCII letter or digit and contain only letters, digits "
                "and _ . : -",
                self.name(key),
            )
        return value

    def uint64(self, key: str) -> int:
        """0 when omitted (the caller then applies the default)."""
        item = self.raw(key)
        return 0 if item is None else parse_uint64(item, self.name(key))

    def time(self, key: str) -> datetime | None:
        item = self.raw(key, nullable=True)
        if item is None:
            return None
        if not isinstance(item, str):
            raise InvalidArgument("must be an RFC 3339 time string or null", self.name(key))
        return parse_time(item, self.name(key))


def _unknown(key: str, allowed: frozenset[str]) -> str:
    for name in allowed:
        if name.lower() == key.lower():
            return f"unknown field (field names are case-sensitive: use '{name}')"
    return "unknown field"
