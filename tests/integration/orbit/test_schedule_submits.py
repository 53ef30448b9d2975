"""The slots of a schedule batch go through the ordinary submit together (docs/orbit/
schedule-firing.md, "Who fires"; O-SUB-1, O-SUB-4), on both databases: `Submits.submit_all`
checks and decides each as a lone submit would, in order, and writes them in one group
transaction; a key known already replays its first task, a key twice in the batch gives one
task, a refused submit fails alone; without group commit each is its own transaction."""

from __future__ import annotations

import secrets

import pytest

from agentcall.orbit.domain.errors import IdempotencyConflict, PermissionDenied
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import SubmitRequest, parse_submit
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.usecases.operations import Operations

pytestmark = [pytest.mark.integration]


def request(queue_id: str, n: int) -> SubmitRequest:
    return parse_submit(
        read_json_text(
            f'{{"queue_id":"{queue_id}","handler":"h","handler_version":"v1",'
            f'"payload_version":"v1","payload":{{"n":{n}}}}}'
        )
    )


def task_id(answer: Receipt | BaseException) -> str:
    assert isinstance(answer, Receipt), answer
    return answer.task_text.split('"id":"', 1)[1].split('"', 1)[0]


@pytest.mark.parametrize("group_commit", [True, False])
async def test_a_batch_of_submits_is_decided_as_lone_submits_in_order(
    db: Database, group_commit: bool
) -> None:
    made = await Admin(db).init(f"slots-{secrets.token_hex(4)}", "q")
    ops = Operations(db, group_commit=group_commit)
    principal = await ops.authenticate(made.token)
    (earlier,) = await ops.submits.submit_all([(principal, request(made.queue_id, 0), "k0", "r")])
    reader = Principal(
        "reader", principal.namespace_id, frozenset({Permission.READ}), principal.queue_ids
    )
    batch = [(principal, request(made.queue_id, n), f"k{n}", f"r{n}") for n in range(5)]
    batch += [
        (principal, request(made.queue_id, 1), "k1", "again"),  # the same key and body
        (principal, request(made.queue_id, 9), "k2", "other"),  # the same key, other body
        (reader, request(made.queue_id, 7), "k7", "denied"),
    ]
    answers = await ops.submits.submit_all(batch)
    assert len(answers) == len(batch)
    first = [answer for answer in answers[:5]]
    assert all(isinstance(answer, Receipt) for answer in first)
    assert [a.status for a in first if isinstance(a, Receipt)] == [200, 201, 201, 201, 201]
    assert task_id(answers[0]) == task_id(earlier)  # a known key replays its task
    assert task_id(answers[5]) == task_id(answers[1])
    assert isinstance(answers[5], Receipt) and answers[5].deduplicated
    assert isinstance(answers[6], IdempotencyConflict)
    assert isinstance(answers[7], PermissionDenied)
    assert len({task_id(answer) for answer in answers[:6]}) == 5
    if ops.groups is not None:
        assert ops.groups.fallbacks == 0  # one group, nothing sent again alone
