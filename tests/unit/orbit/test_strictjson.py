"""O-API-2 / O-NOTE-3: the strict reader, table-driven plus hypothesis properties."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonNumber, JsonValue, dumps
from agentcall.orbit.domain.strictjson import read_json, read_json_text, read_json_text_walked

pytestmark = pytest.mark.unit


def nested(depth: int) -> bytes:
    """An object body whose innermost container sits at `depth` (top level = 1)."""
    return (b'{"a":' * (depth - 1)) + b"{}" + (b"}" * (depth - 1))


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b'{"a":1,"a":2}', "duplicate key 'a'"),
        (b'{"p":{"x":1,"x":1}}', "duplicate key 'x'"),
        (b'{"a":"\xff"}', "not valid UTF-8"),
        (b'{"a":"\xed\xa0\x80"}', "not valid UTF-8"),  # a surrogate encoded in UTF-8 bytes
        (b'{"a":"\\ud800"}', "lone Unicode surrogate"),
        (b'{"a":"\\uDC00x"}', "lone Unicode surrogate"),
        (b'{"\\ud800":1}', "lone Unicode surrogate"),
        (b'{"a":[NaN]}', "NaN"),
        (b'{"a":-Infinity}', "Infinity"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b'{"a":1,}', "not valid JSON"),
        (b"{'a':1}", "not valid JSON"),
        (b'{"a":01}', "not valid JSON"),
        (b'{"a":"\x01"}', "not valid JSON"),
        (b"", "not valid JSON"),
        (nested(33), "nesting deeper than 32"),
        (b"[" * 5000 + b"]" * 5000, "nesting deeper than 32"),
        (b'{"n":1e400}', "exponent"),
        (b'{"n":1000e306}', "exponent"),
        (b'{"n":1e-309}', "exponent"),
        (b'{"n":0.001e-307}', "exponent"),
        (b'{"n":1' + b"0" * 256 + b"}", "longer than 256"),
        (b'{"n":1.8e308}', "finite double"),
    ],
)
def test_o_api_2_rejects(raw: bytes, fragment: str) -> None:
    """O-API-2: each malformed body is refused with a message naming the problem."""
    with pytest.raises(InvalidArgument) as caught:
        read_json(raw)
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    "raw",
    [
        nested(32),
        b'{"a":"\\ud83d\\ude00"}',
        b'{"n":9007199254740993}',
        b'{"n":1.10}',
        b'{"n":1e308}',
        b'{"n":-1.7976931348623157e308}',
        b'{"n":1e-308}',
        b'{"n":0e0}',
        b' {"a" : [ 1 , 2 ] } ',
        b'{"s":"\\u0000 NUL is fine in business data"}',
    ],
)
def test_o_api_2_accepts(raw: bytes) -> None:
    """O-API-2 / O-NOTE-3: the limits are inclusive; depth 32 passes."""
    assert read_json(raw) is not None


def test_error_names_the_path() -> None:
    with pytest.raises(InvalidArgument) as caught:
        read_json(b'{"payload":{"items":[1,{"x":1e999}]}}')
    assert caught.value.message.startswith("payload.items[1].x:")


def test_o_sub_2_numbers_kept_as_text() -> None:
    """O-SUB-2: numbers come back byte-for-byte, never through float."""
    value = read_json(b'{"a":9007199254740993,"b":1.10,"c":-0.0,"d":2E+5}')
    assert value == {
        "a": JsonNumber("9007199254740993"),
        "b": JsonNumber("1.10"),
        "c": JsonNumber("-0.0"),
        "d": JsonNumber("2E+5"),
    }
    assert dumps(value) == '{"a":9007199254740993,"b":1.10,"c":-0.0,"d":2E+5}'


# ---- properties -------------------------------------------------------------------------

numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=6).map(str),
).filter(lambda text: "E" not in text or abs(int(text.split("E")[1])) < 300)
scalars = st.one_of(st.none(), st.booleans(), st.text(max_size=20), numbers.map(JsonNumber))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def spaced(value: object) -> str:
    """The same document with JSON whitespace everywhere it is allowed."""
    if isinstance(value, dict):
        items = (f" {json.dumps(k)} :\n {spaced(v)} " for k, v in value.items())
        return "{\t" + ",".join(items) + "\r}"
    if isinstance(value, list):
        return "[ " + " , ".join(spaced(v) for v in value) + " ]"
    return dumps(value)  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None)  # no timing flakes on busy CI
@given(values)
def test_property_roundtrip(value: object) -> None:
    """Any valid document, whatever its whitespace, reads back to the same exact values and
    re-encodes to the same compact text."""
    compact = dumps(value)  # type: ignore[arg-type]
    assert read_json(compact.encode()) == value
    assert dumps(read_json(compact.encode())) == compact
    assert read_json(spaced(value).encode()) == value


@settings(max_examples=80, deadline=None)  # no timing flakes on busy CI
@given(st.text(min_size=1, max_size=10), values)
def test_property_duplicate_keys_rejected(key: str, value: object) -> None:
    item = dumps(value)  # type: ignore[arg-type]
    encoded_key = json.dumps(key)
    raw = f"{{{encoded_key}:{item},{encoded_key}:{item}}}".encode()
    with pytest.raises(InvalidArgument, match="duplicate key"):
        read_json(raw)


@settings(max_examples=80, deadline=None)  # no timing flakes on busy CI
@given(st.integers(min_value=0xD800, max_value=0xDFFF), st.text(max_size=5))
def test_property_lone_surrogate_escapes_rejected(code: int, tail: str) -> None:
    raw = json.dumps({"s": f"\\u{code:04x}"}).replace("\\\\", "\\")
    raw = raw[:-2] + json.dumps(tail)[1:-1] + raw[-2:]
    if tail[:1] and 0xDC00 <= ord(tail[0]) <= 0xDFFF:
        return
    with pytest.raises(InvalidArgument, match="surrogate"):
        read_json(raw.encode())


@settings(max_examples=80, deadline=None)  # no timing flakes on busy CI
@given(st.integers(min_value=1, max_value=60))
def test_property_depth_limit(depth: int) -> None:
    raw = nested(depth)
    if depth <= 32:
        assert read_json(raw) is not None
    else:
        with pytest.raises(InvalidArgument, match="nesting"):
            read_json(raw)


@settings(max_examples=80, deadline=None)  # no timing flakes on busy CI
@given(st.binary(min_size=1, max_size=40))
def test_property_arbitrary_bytes_never_crash(raw: bytes) -> None:
    """Any byte string is either accepted or refused with InvalidArgument."""
    try:
        read_json(raw)
    except InvalidArgument:
        pass


# ---- the one-pass reader against the reference walk --------------------------------------


def outcome(read: Callable[[str], JsonValue], text: str) -> tuple[str, object]:
    """What a reader makes of `text`: the exact values, or the error message."""
    try:
        return ("value", read(text))
    except InvalidArgument as exc:
        return ("error", exc.message)


def same_as_walk(text: str) -> None:
    assert outcome(read_json_text, text) == outcome(read_json_text_walked, text)


@pytest.mark.parametrize(
    "text",
    [
        '{"n":1' + "0" * 255 + "}",  # 256 characters: accepted
        '{"n":-1' + "0" * 255 + "}",  # 257 characters with the sign: refused
        '{"n":1' + "0" * 256 + "}",
        '{"s":"' + "1" * 300 + '","n":1}',  # a digit run inside a string: still fine
        '{"n":1e400,"n":1}',  # a bad number before a duplicate key: the key is reported
        '{"n":1e400,}',  # ... and before a syntax error
        '{"n":[1.5,2e-400,{"m":1e999}]}',  # the first bad number in document order
        '{"a":"\\ud800","n":1e999}',  # a surrogate before a bad number
        '{"n":1e999,"a":"\\ud800"}',
        '{"\\udc00":{"n":1.0}}',
        '"\\ud83d\\ude00"',
        "[" * 32 + "]" * 32,
        "[" * 33 + "]" * 33,
        "[" * 16 + '"{{{{{{{{{{{{{{{{{{{{"' + "]" * 16,  # brackets in strings count, harmlessly
        '{"a":' * 31 + "[1e309]" + "}" * 31,  # deep and a bad number
        '{"a":' * 33 + "1e309" + "}" * 33,
        "1.7976931348623157e308",
        "-0.0e-0",
        "0.001e-306",
        "1000e306",
        "NaN",
        "[1,Infinity]",
        "",
        "\ufeff{}",
        " 1 ",
        "[1] x",
    ],
)
def test_one_pass_reader_matches_the_walk(text: str) -> None:
    same_as_walk(text)


fragments = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        '"k"',
        '"j"',
        '"\\ud800"',
        '"\\udfff"',
        '"\\ud83d\\ude00"',
        "1",
        "-0",
        "1.5",
        "1e308",
        "1e309",
        "1e-309",
        "1000e306",
        "0.001e-306",
        "2E+5",
        "1.8e308",
        "1" * 256,
        "-" + "1" * 256,
        "true",
        "null",
        "NaN",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)  # no timing flakes on busy CI
@given(st.lists(fragments, max_size=40))
def test_property_one_pass_reader_matches_the_walk(parts: list[str]) -> None:
    """Token soup, mostly invalid: both readers accept the same values or give the same
    message (and so the same path)."""
    same_as_walk("".join(parts))


@settings(max_examples=80, deadline=None)  # no timing flakes on busy CI
@given(values)
def test_property_one_pass_reader_matches_the_walk_on_documents(value: JsonValue) -> None:
    same_as_walk(dumps(value))
    same_as_walk("[" * 31 + dumps(value) + "]" * 31)
