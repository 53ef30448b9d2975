"""Typed readers for JSON objects that name the offending field on failure.

Every boundary of the cell (call plans, agent configs, simulation scripts,
upload requests) reads its input through a :class:`Reader`, so an error always
says which field is wrong and why, and never echoes the whole payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcall.cell.domain.errors import CellError, InvalidRequestError

JsonObject = Mapping[str, Any]


class Reader:
    """Reads fields of one JSON object; ``path`` prefixes field names in errors."""

    def __init__(
        self,
        obj: object,
        path: str = "",
        error: type[CellError] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> None:
        self.error: type[CellError] = error or InvalidRequestError
        self.path = path
        if not isinstance(obj, Mapping):
            raise self._fail(path or "body", "must be a JSON object")
        self.obj: JsonObject = obj
        if allowed is not None:
            unknown = sorted(set(obj) - allowed)
            if unknown:
                raise self._fail(self.name(unknown[0]), "is not a known field")

    def name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _fail(self, field: str, why: str) -> CellError:
        return self.error(f"{field} {why}", field=field)

    def fail(self, key: str, why: str) -> CellError:
        """An error for field ``key`` of this object (raise it)."""
        return self._fail(self.name(key), why)

    def has(self, key: str) -> bool:
        return key in self.obj and self.obj[key] is not None

    def child(self, key: str, allowed: frozenset[str] | None = None) -> Reader:
        if key not in self.obj:
            raise self.fail(key, "is required")
        return Reader(self.obj[key], self.name(key), self.error, allowed)

    def opt_child(self, key: str, allowed: frozenset[str] | None = None) -> Reader | None:
        return self.child(key, allowed) if self.has(key) else None

    def string(self, key: str, *, max_len: int = 256, allow_empty: bool = False) -> str:
        value = self.obj.get(key)
        if value is None:
            raise self.fail(key, "is required")
        if not isinstance(value, str):
            raise self.fail(key, "must be a string")
        if not value and not allow_empty:
            raise self.fail(key, "must not be empty")
        if len(value) > max_len:
            raise self.fail(key, f"must be at most {max_len} characters")
        return value

    def opt_string(self, key: str, *, max_len: int = 256, allow_empty: bool = True) -> str | None:
        if not self.has(key):
            return None
        return self.string(key, max_len=max_len, allow_empty=allow_empty)

    def integer(self, key: str, *, minimum: int = 0, maximum: int = 2**53) -> int:
        value = self.obj.get(key)
        if value is None:
            raise self.fail(key, "is required")
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, "must be an integer")
        if not minimum <= value <= maximum:
            raise self.fail(key, f"must be between {minimum} and {maximum}")
        return value

    def opt_integer(self, key: str, *, minimum: int = 0, maximum: int = 2**53) -> int | None:
        return self.integer(key, minimum=minimum, maximum=maximum) if self.has(key) else None

    def number(self, key: str) -> float:
        value = self.obj.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "must be a number")
        return float(value)

    def opt_number(self, key: str) -> float | None:
        return self.number(key) if self.has(key) else None

    def boolean(self, key: str) -> bool:
        value = self.obj.get(key)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def opt_boolean(self, key: str) -> bool | None:
        return self.boolean(key) if self.has(key) else None

    def opt_list(self, key: str) -> list[Any] | None:
        if not self.has(key):
            return None
        value = self.obj[key]
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        return value

    def string_map(self, key: str, *, max_items: int = 32) -> dict[str, str]:
        """An optional object of string values (absent -> empty)."""
        if not self.has(key):
            return {}
        value = self.obj[key]
        if not isinstance(value, Mapping) or len(value) > max_items:
            raise self.fail(key, f"must be an object of at most {max_items} string values")
        for k, v in value.items():
            if not isinstance(v, str) or len(v) > 4096 or len(k) > 256:
                raise self.fail(f"{key}.{k}", "must be a string of at most 4096 characters")
        return dict(value)
