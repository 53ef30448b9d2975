"""The pure search filter predicate (docs/orbit/search.md) that stores without SQL use:
each filter field as the SQL WHERE reads it, one row per case."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.search import TaskFilter
from agentcall.orbit.domain.search_match import matches
from agentcall.orbit.domain.states import TaskState

pytestmark = pytest.mark.unit

Q = "a" * 32
T0 = datetime(2026, 9, 17, 1, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Row:
    queue_id: str = Q
    state: TaskState = TaskState.FAILED
    handler: str = "billing.charge"
    handler_version: str = "v2"
    business_key: str | None = "order-17"
    error_code: str | None = "TIMEOUT"
    created_at: datetime = T0
    completed_at: datetime | None = T0 + timedelta(minutes=1)


CASES = [
    ("queue only", TaskFilter(Q), Row(), True),
    ("other queue", TaskFilter("b" * 32), Row(), False),
    ("state equal", TaskFilter(Q, state=TaskState.FAILED), Row(), True),
    ("state differs", TaskFilter(Q, state=TaskState.WAITING), Row(), False),
    ("handler differs", TaskFilter(Q, handler="other"), Row(), False),
    ("version differs", TaskFilter(Q, handler_version="v1"), Row(), False),
    ("key equal", TaskFilter(Q, business_key="order-17"), Row(), True),
    ("key absent", TaskFilter(Q, business_key="order-17"), Row(business_key=None), False),
    ("error differs", TaskFilter(Q, error_code="OTHER"), Row(), False),
    ("prefix matches", TaskFilter(Q, business_key_prefix="order-"), Row(), True),
    ("prefix is the key", TaskFilter(Q, business_key_prefix="order-17"), Row(), True),
    ("prefix misses", TaskFilter(Q, business_key_prefix="ordes"), Row(), False),
    ("prefix on no key", TaskFilter(Q, business_key_prefix="o"), Row(business_key=None), False),
    ("created from, inclusive", TaskFilter(Q, created_from=T0), Row(), True),
    ("created before, exclusive", TaskFilter(Q, created_before=T0), Row(), False),
    ("created in range", TaskFilter(Q, created_before=T0 + timedelta(seconds=1)), Row(), True),
    ("completed from", TaskFilter(Q, completed_from=T0 + timedelta(minutes=1)), Row(), True),
    ("not completed", TaskFilter(Q, completed_from=T0), Row(completed_at=None), False),
    (
        "completed before",
        TaskFilter(Q, completed_before=T0 + timedelta(minutes=1)),
        Row(),
        False,
    ),
    (
        "completed before also bounds creation",
        TaskFilter(Q, completed_before=T0),
        Row(completed_at=T0 - timedelta(seconds=1)),
        False,
    ),
]


@pytest.mark.parametrize(
    ("where", "row", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_task_matches_a_filter_as_the_sql_where_reads_it(
    where: TaskFilter, row: Row, expected: bool
) -> None:
    assert matches(where, row) is expected


def test_every_field_set_at_once_matches_only_when_all_hold() -> None:
    where = TaskFilter(
        Q,
        state=TaskState.FAILED,
        handler="billing.charge",
        handler_version="v2",
        business_key_prefix="order-",
        error_code="TIMEOUT",
        created_from=T0,
        completed_before=T0 + timedelta(hours=1),
    )
    assert matches(where, Row())
    assert not matches(where, replace(Row(), error_code=None))
