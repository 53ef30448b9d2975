"""O-SUB-1 / O-SUB-2 / O-SUB-4 under group commit: the pure decisions of one group of submits
(`agentcall.orbit.store.group_plan`), item by item, in arrival order."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from agentcall.orbit.domain.errors import IdempotencyConflict, InvalidArgument
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import OPERATION, parse_submit, submit_digest
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.group_plan import (
    Accept,
    Decision,
    PendingSubmit,
    Refuse,
    Replay,
    plan_group,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 9, 17, 12, tzinfo=UTC)
NS, QUEUE = "a" * 32, "1" * 32
PRINCIPAL = Principal("t" * 32, NS, frozenset(Permission), frozenset({QUEUE}))


def pending(key: str, n: int = 1, available_at: str | None = None) -> PendingSubmit:
    extra = f',"available_at":"{available_at}"' if available_at else ""
    text = (
        f'{{"queue_id":"{QUEUE}","handler":"h","handler_version":"v1",'
        f'"payload_version":"v1","payload":{{"n":{n}}}{extra}}}'
    )
    request = parse_submit(read_json_text(text))
    return PendingSubmit(
        PRINCIPAL, request, Scope(NS, OPERATION, "", key), submit_digest(request), "r" * 32
    )


def ids() -> itertools.count[int]:
    return itertools.count(1)


def plan(
    items: list[PendingSubmit], stored: dict[Scope, StoredReceipt] | None = None
) -> list[Decision]:
    counter = ids()
    return plan_group(items, stored or {}, NOW, lambda: f"{next(counter):032x}")


PAST = "2026-09-17T11:00:00Z"  # one hour before NOW: refused for a new task (O-SUB-3)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([pending("a"), pending("b"), pending("c")], [Accept, Accept, Accept]),
        ([pending("a"), pending("a")], [Accept, Replay]),  # same key twice: one task
        ([pending("a", 1), pending("a", 2)], [Accept, IdempotencyConflict]),
        (
            [pending("a"), pending("b", available_at=PAST), pending("c")],
            [Accept, InvalidArgument, Accept],
        ),  # one invalid item never fails its neighbours
        ([pending("a", available_at=PAST), pending("a")], [InvalidArgument, Accept]),
    ],
)
def test_o_sub_1_group_decisions_item_by_item(
    items: list[PendingSubmit], expected: list[type]
) -> None:
    decisions = plan(items)
    kinds = [type(d.error) if isinstance(d, Refuse) else type(d) for d in decisions]
    assert kinds == expected


def test_o_sub_1_same_key_in_one_group_replays_the_first_receipt() -> None:
    first, again = plan([pending("k"), pending("k")])
    assert isinstance(first, Accept) and isinstance(again, Replay)
    assert again.stored == first.receipt and first.receipt.status == 201
    assert first.task.id == f"{1:032x}" and first.task.created_at == NOW


def test_o_sub_1_stored_key_replays_without_the_clock_check() -> None:
    """A replay is not checked against the group's time again (its available_at is past)."""
    old = pending("k", available_at=PAST)
    stored = {old.scope: StoredReceipt(old.digest, 201, '{"id":"x"}')}
    decisions = plan([old, pending("k", 2), pending("new")], stored)
    assert isinstance(decisions[0], Replay) and decisions[0].stored.receipt_text == '{"id":"x"}'
    assert isinstance(decisions[1], Refuse)
    assert isinstance(decisions[1].error, IdempotencyConflict)
    assert isinstance(decisions[2], Accept) and decisions[2].task.id == f"{1:032x}"


def test_o_sub_2_each_accepted_task_gets_its_own_id_and_digest() -> None:
    decisions = plan([pending("a", 1), pending("b", 2)])
    accepted = [d for d in decisions if isinstance(d, Accept)]
    assert [d.task.id for d in accepted] == [f"{1:032x}", f"{2:032x}"]
    assert accepted[0].receipt.digest != accepted[1].receipt.digest
