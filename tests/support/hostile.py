"""Hypothesis strategies of hostile message bodies, for every consumer of a queue.

``hostile_bodies()`` draws raw bytes a peer (or an attacker, or a broken sender) could
publish: arbitrary JSON (deep, wide, huge numbers, odd Unicode with lone surrogates),
nesting far past the interpreter's recursion limit, numbers JSON parsers trip on
(NaN, Infinity, 1e999, integers of thousands of digits), duplicate keys, other
encodings (UTF-16/32, Latin-1, a BOM) and arbitrary bytes. ``mutated(valid)`` keeps a
valid body but replaces one field, at any depth, by one of those values, so that the
strategies also reach the code behind the schema check.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# Lone surrogates ("Cs") included: json.dumps writes them as \udXXX escapes.
ODD_TEXT = st.text(st.characters(codec=None, categories=None), max_size=20) | st.sampled_from(
    ["", "\x00", "\ud800", "\udfff", "\u202e", "\ufeff", "𝕏" * 30, "e\u0301", "\uffff"]
)
HUGE_INTS = st.integers(min_value=-(10**30), max_value=10**30) | st.sampled_from(
    [2**63, 2**64, -(2**63) - 1, 10**4000]
)
SCALARS = (
    st.none()
    | st.booleans()
    | HUGE_INTS
    | st.floats(allow_nan=False, allow_infinity=False)
    | ODD_TEXT
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(ODD_TEXT, children, max_size=4)
    ),
    max_leaves=16,
)


def _deep(depth: int, opener: str, closed: bool) -> bytes:
    closer = {"[": "]", '{"a":': "}"}[opener]
    inner = "0" if opener != "[" else ""
    return (opener * depth + inner + (closer * depth if closed else "")).encode()


DEEP = st.builds(
    _deep,
    st.integers(min_value=500, max_value=100_000),
    st.sampled_from(["[", '{"a":']),
    st.booleans(),
)
NUMBERS = st.sampled_from(
    [b"NaN", b"[Infinity]", b"-Infinity", b'{"n": 1e999}', b"[-1e400]", b"1" * 5000]
) | st.integers(min_value=4301, max_value=20_000).map(lambda n: b"[" + b"9" * n + b"]")


def _twice(key: str, a: Any, b: Any) -> bytes:
    """An object holding ``key`` twice."""
    return f"{json.dumps({key: a})[:-1]}, {json.dumps({key: b})[1:]}".encode()


DUPLICATES = st.builds(_twice, ODD_TEXT, JSON_VALUES, JSON_VALUES)


def _encoded(value: Any, codec: str) -> bytes:
    text = json.dumps(value, ensure_ascii=False)
    return text.encode(codec, "surrogatepass" if codec.startswith("utf") else "replace")


ENCODINGS = st.builds(
    _encoded, JSON_VALUES, st.sampled_from(["utf-16", "utf-32", "utf-16-be", "latin-1"])
) | JSON_VALUES.map(lambda v: b"\xef\xbb\xbf" + json.dumps(v).encode())


def hostile_bodies() -> st.SearchStrategy[bytes]:
    """Raw bodies no valid command can be: every one must be refused, none may crash."""
    return st.one_of(
        JSON_VALUES.map(lambda v: json.dumps(v).encode()),
        DEEP,
        NUMBERS,
        DUPLICATES,
        ENCODINGS,
        st.binary(max_size=2048),
    )


def _replace(body: Any, path: list[int], value: Any) -> Any:
    """``body`` with the member chosen by ``path`` (indexes, one per level) replaced."""
    if not path or not isinstance(body, dict) or not body:
        return value
    keys = sorted(body)
    key = keys[path[0] % len(keys)]
    return {**body, key: _replace(body[key], path[1:], value)}


EXTREME_TIMES = st.sampled_from(
    [
        "0001-01-01T00:00:00+23:59",
        "9999-12-31T23:59:59-23:59",
        "2026-12-31T23:59:60Z",
        "2026-02-30T00:00:00Z",
        "2026-01-01T00:00:00.999999999Z",
    ]
)


def mutated(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """``valid`` with one member, at any depth, replaced by a hostile value (or kept)."""
    return st.builds(
        lambda path, value: json.dumps(_replace(valid, path, value)).encode(),
        st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=3),
        JSON_VALUES | EXTREME_TIMES | st.just(valid.get("command_id")),
    )
