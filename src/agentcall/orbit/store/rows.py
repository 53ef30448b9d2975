"""Rows of the store's named queries: named tuples, one class per list of column names."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any


@cache
def record(names: tuple[str, ...]) -> Any:
    """Fields named after the columns (an invalid name, e.g. `UTC_TIMESTAMP(6)`, becomes
    `_<index>`)."""
    return namedtuple("Row", names, rename=True)  # noqa: PYI024 - fields come from the query
