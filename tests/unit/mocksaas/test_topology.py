"""MQ names and arguments come from mq-topology.json (D-MQ-1..3, D-MQ-6)."""

from __future__ import annotations

import json

import pytest

from agentcall.mocksaas.contracts import find_contracts_dir
from agentcall.mocksaas.errors import ContractFileError, InvalidRequest
from agentcall.mocksaas.topology import Topology
from tests.unit.mocksaas.conftest import D

RAW = json.loads((find_contracts_dir() / "mq-topology.json").read_text())


def test_d_mq_1_names(topology: Topology) -> None:
    assert topology.command_exchange == "agent-call.dispatchers.v3"
    assert topology.result_exchange == "agent-call.saas.v3"
    assert topology.queue_name("task", D, "t-1") == f"agent-call.d.{D}.task.t-1.v3"
    assert topology.route("task", D, "t-1") == f"d.{D}.task.t-1.in"
    assert topology.queue_name("control", D) == f"agent-call.d.{D}.control.v3"
    assert topology.route("control", D) == f"d.{D}.control.in"


def test_d_mq_2_result_route(topology: Topology) -> None:
    assert topology.queue_name("result", D) == f"agent-call.saas.d.{D}.v3"
    assert topology.route("result", D) == f"d.{D}.out"


def test_d_mq_3_declarations_copy_the_file(topology: Topology) -> None:
    decl = topology.for_dispatcher(D)
    assert [e.name for e in decl.exchanges] == [e["name"] for e in RAW["exchanges"]]
    by_role = {q["role"]: q for q in RAW["queues"]}
    for q in decl.queues:
        spec = by_role[q.role]
        assert q.arguments == spec["arguments"]
        assert (q.durable, q.exclusive, q.auto_delete) == (True, False, False)
        assert not set(q.arguments) & set(RAW["forbidden_queue_arguments"])
    assert {q.role for q in decl.queues} == {"control", "result", "dead_letter"}
    assert len(decl.bindings) == 3


def test_d_mq_1_task_declaration(topology: Topology) -> None:
    decl = topology.for_task(D, "t-1")
    assert decl.exchanges == ()
    assert [q.name for q in decl.queues] == [f"agent-call.d.{D}.task.t-1.v3"]
    assert [(b.exchange, b.routing_key) for b in decl.bindings] == [
        ("agent-call.dispatchers.v3", f"d.{D}.task.t-1.in")
    ]


def test_d_mq_3_longest_task_id_fits_the_byte_limits(topology: Topology) -> None:
    longest = "x" * 128
    topology.check_task_names(D, longest)
    assert len(topology.route("task", D, longest)) == 175
    assert len(topology.queue_name("task", D, longest)) == 186


def test_byte_limits_enforced() -> None:
    tight = json.loads(json.dumps(RAW))
    tight["limits"]["task_queue_name_max_bytes"] = 60
    with pytest.raises(InvalidRequest):
        Topology(tight).check_task_names(D, "x" * 20)


def test_d_mq_6_limit(topology: Topology) -> None:
    assert topology.max_task_queues == 256


def test_malformed_file_is_a_contract_error() -> None:
    with pytest.raises(ContractFileError):
        Topology({"exchanges": []})


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        (f"d.{D}.task.t-1.in", "t-1"),
        (f"d.{D}.task.a_b-C.in", "a_b-C"),
        (f"d.{D}.control.in", None),
        ("d.other.task.t-1.in", None),
        (f"d.{D}.task..in", None),
    ],
)
def test_task_of_route(topology: Topology, route: str, expected: str | None) -> None:
    assert topology.task_of_route(route, D) == expected
