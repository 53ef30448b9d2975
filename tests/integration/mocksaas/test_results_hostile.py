"""No body on the result queue can stop the Mock SaaS's result consumer (D-MQ-2, D-MQ-5
from the SaaS side): whatever the D (or anyone) publishes is stored, flagged invalid with
the reason, ACKed, and the results after it are consumed as usual; every stored result
can be answered by the admin API as JSON.
"""

from __future__ import annotations

import json
import sqlite3
from importlib import resources
from typing import Any

import pytest
from aio_pika.abc import AbstractRobustConnection
from hypothesis import given

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from agentcall.mocksaas.domain.results import check_result, facts_of
from agentcall.mocksaas.store import results
from tests.integration.mocksaas.amqp_helpers import publish_result
from tests.integration.mocksaas.harness import Dispatcher
from tests.support.fuzzing import FUZZ, FUZZ_EXAMPLES
from tests.support.hostile import hostile_bodies, mutated
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
D = "c046b893-8628-4589-ae50-619d049248a6"
EXAMPLE = sorted(
    (find_contracts_dir() / "examples" / "valid" / "call-result.call_result").glob("*.json")
)[0]
CALL_RESULT: dict[str, Any] = {**json.loads(EXAMPLE.read_text()), "dispatcher_id": D}
POISON = [
    b"[" * 5000 + b"]" * 5000,
    b'{"event_id": "x", "a": NaN}',
    b"[" + b"7" * 5000 + b"]",
    b'{"event_id": "\\ud800"}',
    b"[1e999]",
    b"\xff\xfe",
]


async def test_poison_results_are_stored_invalid_and_consumption_goes_on(
    server: Any, dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    d = dispatcher
    good = {**CALL_RESULT, "dispatcher_id": d.id, "event_id": "ev-after-poison"}
    for body in [*POISON, good]:
        await publish_result(amqp, d.id, body)
    wait_for(
        lambda: d.admin("GET", "/results/summary")["deliveries"] == len(POISON) + 1,
        what="every result stored",
    )
    listed = d.admin("GET", "/results", params={"limit": 100})["results"]  # answered as JSON
    assert [r["valid"] for r in listed] == [False] * len(POISON) + [True]
    assert listed[0]["errors"] == ["$: body is nested too deeply"]
    assert listed[-1]["event_id"] == "ev-after-poison"
    assert all(r["body"] is None for r in listed[:-1])


def _stored_and_answered(conn: sqlite3.Connection, contracts: Contracts, raw: bytes) -> None:
    """What the consumer does with a body (check, index, insert), then the admin answer."""
    conn.execute("DELETE FROM results")
    body, errors = check_result(contracts, D, raw)
    record = results.ReceivedResult(
        D, "2026-09-21T00:00:00Z", False, facts_of(body), tuple(errors), raw
    )
    results.insert(conn, record)
    [listed] = results.query(conn, D, {}, 10)
    json.dumps(listed, ensure_ascii=False, allow_nan=False).encode("utf-8")  # as JSONResponse
    assert listed["valid"] == (not errors)
    results.summary(conn, D)


@pytest.fixture(scope="module")
def store() -> Any:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.executescript(
        resources.files("agentcall.mocksaas.store").joinpath("schema.sql").read_text()
    )
    yield conn, Contracts(find_contracts_dir())
    conn.close()


@pytest.mark.fuzz
@pytest.mark.timeout(max(120, FUZZ_EXAMPLES // 5))
@FUZZ
@given(raw=hostile_bodies() | mutated(CALL_RESULT))
def test_fuzz_result_consumer_stores_and_answers_every_body(store: Any, raw: bytes) -> None:
    conn, contracts = store
    _stored_and_answered(conn, contracts, raw)
