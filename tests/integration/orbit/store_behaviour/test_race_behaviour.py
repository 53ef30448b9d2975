"""Requests that race on every store: concurrent submits with one key make one task and
replay its receipt (O-SUB-1); concurrent cancels at one revision have exactly one winner
(O-CAN-1); two connections asking at once never lease a task twice."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.errors import StateConflict
from tests.integration.orbit.store_behaviour.backends import (
    Backend,
    new_key,
    submit_body,
    submitted,
    worker_peer,
)

pytestmark = pytest.mark.integration


async def test_concurrent_submits_with_one_key_make_one_task(backend: Backend) -> None:
    principal = await backend.tenant()
    key = new_key()
    receipts = await asyncio.gather(
        *(backend.submit(principal, submit_body(principal), key) for _ in range(4))
    )
    assert sorted(r.status for r in receipts) == [200, 200, 200, 201]
    assert len({r.task_text for r in receipts}) == 1
    assert len((await backend.page(principal, None, None, 10)).items) == 1


async def test_concurrent_cancels_have_exactly_one_winner(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    outcomes = await asyncio.gather(
        *(
            backend.cancel(principal, task_id, CancelRequest(1, f"reason {n}"), new_key())
            for n in range(3)
        ),
        return_exceptions=True,
    )
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1 and all(isinstance(o, StateConflict) for o in lost), outcomes
    assert json.loads(won[0].task_text)["revision"] == "2"
    assert [event.kind for event in await backend.events(task_id)] == ["ACCEPTED", "CANCELLED"]


async def test_connections_asking_at_once_never_share_a_task(backend: Backend) -> None:
    principal = await backend.tenant()
    ids = [await submitted(backend, principal, payload=n) for n in range(6)]
    peers = [worker_peer(principal) for _ in range(3)]
    rounds = await asyncio.gather(*(backend.lease(peer, 3) for peer in peers))
    leased = [grant.task.id for grants in rounds for grant in grants]
    assert sorted(leased) == sorted(ids)
