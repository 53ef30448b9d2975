"""O-SUB-2: the orbit-json-v1 digest. Equivalent inputs give the same digest; any change of
meaning gives a different one (hypothesis properties plus a table)."""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentcall.orbit.domain.canonical import ALGORITHM, canonical_text, digest
from agentcall.orbit.domain.jsonvalue import JsonNumber, JsonValue, dumps
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit, submit_digest, submit_document

pytestmark = pytest.mark.unit

decimals = st.decimals(
    allow_nan=False, allow_infinity=False, min_value=Decimal("-1e20"), max_value=Decimal("1e20")
)


def spellings(value: Decimal) -> st.SearchStrategy[str]:
    """Different JSON texts of the same number: 15e-1 / 1.5 / 1.500E+0 / 150.0e-2 ..."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    prefix = "-" if sign else ""
    coefficient = "".join(map(str, digits)) or "0"

    def spell(extra_zeros: int, point: int, upper: bool) -> str:
        body = coefficient + "0" * extra_zeros
        shift = min(point, len(body) - 1)
        if shift:
            body = body[:-shift] + "." + body[-shift:]
        text = f"{prefix}{body}e{exponent - extra_zeros + shift}"
        return text.upper() if upper else text

    return st.builds(spell, st.integers(0, 3), st.integers(0, 4), st.booleans())


leaf = st.one_of(st.none(), st.booleans(), st.text(max_size=6), decimals)
documents = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=15,
)


def as_json(value: Any, data: st.DataObject) -> JsonValue:
    """Turn decimals into JsonNumber with a randomly chosen spelling; shuffle object keys."""
    if isinstance(value, Decimal):
        return JsonNumber(data.draw(spellings(value)))
    if isinstance(value, list):
        return [as_json(item, data) for item in value]
    if isinstance(value, dict):
        keys = data.draw(st.permutations(list(value)))
        return {key: as_json(value[key], data) for key in keys}
    return value  # type: ignore[no-any-return]


@settings(max_examples=60, deadline=None)  # no timing flakes on busy CI
@given(documents, st.data())
def test_property_equivalent_inputs_same_digest(document: Any, data: st.DataObject) -> None:
    """O-SUB-2: key order and number spelling do not change the digest."""
    first, second = as_json(document, data), as_json(document, data)
    assert digest("op", first) == digest("op", second)


@settings(max_examples=60, deadline=None)  # no timing flakes on busy CI
@given(documents, documents)
def test_property_different_meaning_different_digest(left: Any, right: Any) -> None:
    """O-SUB-2: documents that differ in meaning never share a digest."""
    assume(_meaning(left) != _meaning(right))
    assert digest("op", left) != digest("op", right)


def _meaning(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return ("lit", value)
    if isinstance(value, Decimal):
        with localcontext() as exact:  # normalize() rounds to the context's precision
            exact.prec = len(value.as_tuple().digits) + 2
            return ("num", value.normalize() if value else Decimal(0))
    if isinstance(value, list):
        return ("arr", tuple(_meaning(v) for v in value))
    if isinstance(value, dict):
        return ("obj", frozenset((k, _meaning(v)) for k, v in value.items()))
    return ("str", value)


@settings(max_examples=60, deadline=None)  # no timing flakes on busy CI
@given(documents, st.data())
def test_property_single_leaf_change_changes_digest(document: Any, data: st.DataObject) -> None:
    """Changing one number by one unit in its last place changes the digest."""
    changed = _bump_first_number(document)
    assume(changed is not None)
    assert digest("op", document) != digest("op", changed)


def _bump_first_number(value: Any) -> Any:
    if isinstance(value, Decimal) and not isinstance(value, bool):
        with localcontext() as exact:  # the default 28 digits would round the bump away
            exact.prec = len(value.as_tuple().digits) + 2
            return value + Decimal(1).scaleb(value.as_tuple().exponent)  # type: ignore[arg-type]
    if isinstance(value, list):
        for index, item in enumerate(value):
            bumped = _bump_first_number(item)
            if bumped is not None:
                return value[:index] + [bumped] + value[index + 1 :]
    if isinstance(value, dict):
        for key, item in value.items():
            bumped = _bump_first_number(item)
            if bumped is not None:
                return {**value, key: bumped}
    return None


QUEUE = "1" * 32
BASE = (
    '{"queue_id":"' + QUEUE + '","handler":"h","handler_version":"v1","payload_version":"v1",'
    '"payload":{"a":1,"b":[1,2]}'
)


def submit(extra: str = "", payload: str | None = None) -> str:
    text = BASE if payload is None else BASE.replace('{"a":1,"b":[1,2]}', payload)
    return submit_digest(parse_submit(read_json_text(text + extra + "}"))).hex


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (("", None), (',"task_timeout_ms":86400000', None)),
        (("", None), (',"task_timeout_ms":0', None)),
        (("", None), (',"recovery_safety":"RECONCILE_ONLY"', None)),
        (("", None), (',"retry":{}', None)),
        (("", None), (',"retry":{"max_attempts":1,"attempt_timeout_ms":30000}', None)),
        (("", None), (',"available_at":null,"start_deadline_at":null', None)),
        (("", None), ("", '{"b":[1.0,2e0],"a":10e-1}')),
        (
            (',"available_at":"2026-09-17T08:00:00+08:00"', None),
            (',"available_at":"2026-09-17T00:00:00.000Z"', None),
        ),
        (
            (',"retry":{"max_attempts":3}', None),
            (',"retry":{"max_attempts":3,"initial_delay_ms":1000,"max_delay_ms":30000}', None),
        ),
    ],
)
def test_o_sub_2_submit_equivalences(left: tuple[str, str | None], right: tuple[str, str | None]):
    """O-SUB-2 / O-NOTE-4: defaults applied, times normalised, keys sorted, 1 == 1.0."""
    assert submit(*left) == submit(*right)


@pytest.mark.parametrize(
    "change",
    [
        (',"business_key":"k"', None),
        (',"task_timeout_ms":86400001', None),
        (',"recovery_safety":"IDEMPOTENT"', None),
        (',"retry":{"max_attempts":2}', None),
        (',"available_at":"2026-09-17T00:00:00Z"', None),
        (',"start_deadline_at":"2026-09-17T00:00:00Z"', None),
        ("", '{"a":1,"b":[2,1]}'),
        ("", '{"a":1.01,"b":[1,2]}'),
        ("", '{"a":"1","b":[1,2]}'),
        ("", '{"A":1,"b":[1,2]}'),
        ("", '{"a":1,"b":[1,2],"c":null}'),
    ],
)
def test_o_sub_2_submit_changes_of_meaning(change: tuple[str, str | None]) -> None:
    assert submit(*change) != submit()


def test_canonical_form_is_documented_shape() -> None:
    text = canonical_text({"b": JsonNumber("1.50"), "a": [True, None, "é"]})
    assert text == '{"a":[true,null,"é"],"b":15e-1}'
    assert digest("x", {}).algorithm == ALGORITHM == "orbit-json-v1"


@pytest.mark.parametrize(
    ("value", "canonical", "compact"),
    [
        (True, "true", "true"),
        (False, "false", "false"),
        (None, "null", "null"),
        (0, "0", "0"),
        (-5, "-5", "-5"),
        (100, "1e2", "100"),
        ([1, True, None, [False]], "[1,true,null,[false]]", "[1,true,null,[false]]"),
        ({"b": 10, "a": [2, 30]}, '{"a":[2,3e1],"b":1e1}', '{"b":10,"a":[2,30]}'),
        ((1, 2), "[1,2]", "[1,2]"),  # a tuple takes the generic path
    ],
)
def test_exact_type_fast_paths(value: JsonValue, canonical: str, compact: str) -> None:
    """Python ints, bools (never written as numbers), None and lists in both writers."""
    assert canonical_text(value) == canonical
    assert dumps(value) == compact


@pytest.mark.parametrize(
    "extra",
    [
        "",
        ',"business_key":"b\\"\\u00e9\\\\\\ud83d\\ude00"',
        ',"available_at":"2026-09-17T08:00:00.5+08:00"',
        ',"start_deadline_at":"2026-09-18T00:00:00Z","available_at":null',
        ',"task_timeout_ms":1000,"retry":{"max_attempts":100,"initial_delay_ms":10,'
        '"max_delay_ms":9223372036854,"attempt_timeout_ms":1000}',
        ',"recovery_safety":"IDEMPOTENT","business_key":"k","available_at":"2026-09-17T00:00:00Z",'
        '"start_deadline_at":"2026-09-17T00:00:01Z","retry":{"max_attempts":2}',
    ],
)
@pytest.mark.parametrize(
    "payload",
    [None, '{"z":1,"\\u00e9":[1.50,-0,1E2],"A":{"y":null,"x":true}}', '"text"', "[]", "100"],
)
def test_submit_digest_is_the_digest_of_the_document(extra: str, payload: str | None) -> None:
    """The submit digest written straight in key order equals the generic canonical digest
    of `submit_document`, with and without every optional field."""
    text = BASE if payload is None else BASE.replace('{"a":1,"b":[1,2]}', payload)
    request = parse_submit(read_json_text(text + extra + "}"))
    assert submit_digest(request) == digest("tasks.submit", submit_document(request))


def test_the_bump_changes_numbers_longer_than_the_default_precision() -> None:
    """Hypothesis found a 32-digit number that a 28-digit bump left equal in meaning."""
    long = Decimal("0.000032438046063319637170373537550")
    assert _meaning(_bump_first_number(long)) != _meaning(long)
    assert digest("op", long) != digest("op", _bump_first_number(long))
