"""The task search filter (docs/orbit/search.md) and the cursor that binds it
(O-LST-1): parsing, refusals, the digest, and the business key prefix's upper bound."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcall.orbit.domain.cursor import Position, decode_cursor, encode_cursor
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.search import TaskFilter, filter_json, parse_filter, prefix_end
from agentcall.orbit.domain.states import TaskState

pytestmark = pytest.mark.unit

Q, T = "a" * 32, "c" * 32
NOW = datetime(2026, 9, 17, 1, 2, 3, 456789, tzinfo=UTC)


def test_every_field_parses() -> None:
    where = parse_filter(
        {
            "queue_id": Q,
            "state": "FAILED",
            "handler": "billing.charge",
            "handler_version": "v2",
            "business_key_prefix": "order-",
            "error_code": "CARD_DECLINED",
            "created_from": "2026-09-17T00:00:00Z",
            "created_before": "2026-09-18T00:00:00Z",
            "completed_from": "2026-09-17T00:00:00Z",
            "completed_before": "2026-09-18T00:00:00Z",
        }
    )
    assert where.state is TaskState.FAILED
    assert where.handler_version == "v2" and where.business_key_prefix == "order-"
    assert where.created_before == datetime(2026, 9, 18, tzinfo=UTC)
    assert where.narrowed
    assert parse_filter(filter_json(where)) == where  # the JSON form reads back the same


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "queue_id"),
        ({"queue_id": "nope"}, "queue_id"),
        ({"queue_id": Q, "state": "DONE"}, "state"),
        ({"queue_id": Q, "handler": "-bad"}, "handler"),
        ({"queue_id": Q, "handler": "h" * 129}, "handler"),
        ({"queue_id": Q, "handler_version": "v1"}, "handler_version"),
        ({"queue_id": Q, "business_key": "a", "business_key_prefix": "a"}, "business_key"),
        ({"queue_id": Q, "business_key_prefix": "a\nb"}, "business_key_prefix"),
        ({"queue_id": Q, "business_key": ""}, "business_key"),
        ({"queue_id": Q, "error_code": "E" * 33}, "error_code"),
        ({"queue_id": Q, "created_from": "yesterday"}, "created_from"),
        (
            {
                "queue_id": Q,
                "completed_from": "2026-09-18T00:00:00Z",
                "completed_before": "2026-09-18T00:00:00Z",
            },
            "completed_before",
        ),
        ({"queue_id": Q, "Handler": "x"}, "Handler"),
        ({"queue_id": Q, "sort": "asc"}, "sort"),
    ],
)
def test_bad_filters_are_refused_naming_the_field(params: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_filter(params)
    assert caught.value.field == field


def test_a_queue_alone_is_not_narrowed() -> None:
    assert not TaskFilter(Q).narrowed
    assert TaskFilter(Q, TaskState.FAILED).narrowed


def test_o_lst_1_plain_list_cursors_keep_their_form() -> None:
    """No search field beyond queue and state: the digest is empty and the cursor is the
    plain list's (c1), so cursors issued before search existed still decode."""
    assert TaskFilter(Q, TaskState.WAITING).digest() == ""
    cursor = encode_cursor(Position(Q, TaskState.WAITING, NOW, T))
    assert decode_cursor(cursor, Q, TaskState.WAITING, "") == Position(Q, TaskState.WAITING, NOW, T)


def test_o_lst_1_cursor_binds_the_search_filter() -> None:
    one = TaskFilter(Q, handler="a").digest()
    other = TaskFilter(Q, handler="b").digest()
    assert one and other and one != other
    cursor = encode_cursor(Position(Q, None, NOW, T, one))
    assert decode_cursor(cursor, Q, None, one).filters == one
    for wrong in (other, ""):
        with pytest.raises(InvalidArgument, match="different search filter"):
            decode_cursor(cursor, Q, None, wrong)
    plain = encode_cursor(Position(Q, None, NOW, T))
    with pytest.raises(InvalidArgument):
        decode_cursor(plain, Q, None, one)


@given(st.text(min_size=1, max_size=8), st.text(max_size=8))
def test_prefix_end_bounds_exactly_the_strings_with_the_prefix(prefix: str, tail: str) -> None:
    end = prefix_end(prefix)
    candidate = prefix + tail
    assert candidate >= prefix
    assert end is None or candidate < end
    if end is not None and not candidate.startswith(prefix) and candidate >= prefix:
        assert candidate >= end


@given(st.text(min_size=1, max_size=6), st.text(min_size=1, max_size=6))
def test_prefix_end_excludes_what_does_not_start_with_the_prefix(prefix: str, other: str) -> None:
    end = prefix_end(prefix)
    if other.startswith(prefix):
        return
    inside = other >= prefix and (end is None or other < end)
    assert not inside


def test_prefix_end_of_the_last_code_point() -> None:
    assert prefix_end("a\U0010ffff") == "b"
    assert prefix_end("\U0010ffff") is None
    assert prefix_end("a\ud7ff") == "a\ue000"
