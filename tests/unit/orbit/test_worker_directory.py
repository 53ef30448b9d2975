"""The namespace's workers across server processes (agentcall.orbit.domain.worker_directory): what a
registration round writes, and what a token sees of each worker."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.worker_directory import Changes, WorkerRecord, changes, listing

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NS, OTHER_NS = "n" * 32, "m" * 32
Q1, Q2, Q3 = "1" * 32, "2" * 32, "3" * 32


def rec(
    cid: str,
    *,
    ns: str = NS,
    queues: tuple[str, ...] = (Q1,),
    name: str = "w",
    in_flight: int = 0,
    server: str = "h:1",
) -> WorkerRecord:
    return WorkerRecord(
        cid * 32,
        ns,
        server,
        name,
        "i" * 32,
        "python/1",
        "host",
        7,
        queues,
        (HandlerKey("h", "v1"),),
        4,
        in_flight,
        NOW,
        NOW,
    )


A, B, C = rec("a"), rec("b"), rec("c")


@pytest.mark.parametrize(
    ("recorded", "current", "wanted"),
    [
        (None, [], Changes((), (), reset=True)),  # first round: clear whatever was left
        (None, [A, B], Changes((A, B), (), reset=True)),
        ({}, [], Changes((), ())),  # nothing to do: no statement
        ({A.connection_id: A}, [A], Changes((), ())),
        ({}, [A], Changes((A,), (A.connection_id,))),  # a new row is deleted first
        ({A.connection_id: A, B.connection_id: B}, [A], Changes((), (B.connection_id,))),
        (
            {A.connection_id: A},
            [replace(A, in_flight=2)],
            Changes((replace(A, in_flight=2),), (A.connection_id,)),
        ),  # changed: rewritten
        (
            {A.connection_id: A, B.connection_id: B},
            [replace(B, in_flight=1), C],
            Changes(
                (replace(B, in_flight=1), C), (A.connection_id, B.connection_id, C.connection_id)
            ),
        ),
    ],
)
def test_a_round_writes_only_what_changed_and_never_inserts_twice(
    recorded: dict[str, WorkerRecord] | None, current: list[WorkerRecord], wanted: Changes
) -> None:
    found = changes(recorded, current)
    assert found == wanted
    assert bool(found) == bool(wanted.write or wanted.delete or wanted.reset)
    assert {r.connection_id for r in found.write} <= set(found.delete) or found.reset


def test_a_token_sees_its_namespace_s_workers_on_its_queues_only() -> None:
    here = rec("a", queues=(Q2, Q1), name="beta", in_flight=1)
    there = rec("b", queues=(Q3,), name="alpha", server="other:2")  # no queue of the token
    both = rec("c", queues=(Q1,), name="alpha", server="other:2")
    foreign = rec("d", ns=OTHER_NS)
    stale_copy = replace(here, in_flight=0, server="other:2")  # the same connection, recorded
    views = listing([here, there, both, foreign, stale_copy], NS, frozenset({Q1, Q2}))
    assert [(v["name"], v["server"], v["queues"], v["in_flight"]) for v in views] == [
        ("alpha", "other:2", [Q1], 0),
        ("beta", "h:1", [Q2, Q1], 1),  # this process's own record wins, as it is now
    ]
    assert views[1] == {
        "connection_id": "a" * 32,
        "server": "h:1",
        "name": "beta",
        "instance_id": "i" * 32,
        "sdk": "python/1",
        "host": "host",
        "pid": 7,
        "queues": [Q2, Q1],
        "handlers": [{"handler": "h", "handler_version": "v1"}],
        "slots": 4,
        "in_flight": 1,
        "connected_at": "2026-12-01T12:00:00Z",
        "last_heartbeat_at": "2026-12-01T12:00:00Z",
    }
    assert listing([here], NS, frozenset({Q3})) == []
    bare = replace(here, sdk=None, host=None, pid=None)
    assert not {"sdk", "host", "pid"} & set(listing([bare], NS, frozenset({Q1}))[0])
