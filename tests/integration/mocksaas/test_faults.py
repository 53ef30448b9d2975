"""Each injected fault is observable by a raw HTTP/AMQP client (D-DISC-4, D-DISC-9,
D-CFG-4, D-MQ-5); a fault never changes the stored state."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from aio_pika.abc import AbstractRobustConnection

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from tests.integration.mocksaas.amqp_helpers import drain
from tests.integration.mocksaas.harness import Dispatcher

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
CONTRACTS = Contracts(find_contracts_dir())


def arm(d: Dispatcher, scope: str, **body: Any) -> None:
    d.admin("POST", f"/faults/{scope}", body, expect=201)


@pytest.fixture
def two_tasks(dispatcher: Dispatcher) -> Dispatcher:
    dispatcher.put_task("fa-1")
    dispatcher.put_task("fa-2")
    return dispatcher


@pytest.mark.parametrize("after", ["0", "2"], ids=["page", "empty-page"])
def test_d_disc_4_duplicate_task(two_tasks: Dispatcher, after: str) -> None:
    arm(two_tasks, "discovery", kind="duplicate_task")
    ids = [t["task_id"] for t in two_tasks.page(after).json()["tasks"]]
    assert len(ids) > len(set(ids))
    normal = [t["task_id"] for t in two_tasks.page(after).json()["tasks"]]
    assert normal == ([] if after == "2" else ["fa-1", "fa-2"])


@pytest.mark.parametrize("after", ["0", "2"], ids=["page", "empty-page"])
def test_d_disc_4_non_advancing_cursor(two_tasks: Dispatcher, after: str) -> None:
    arm(two_tasks, "discovery", kind="non_advancing_cursor")
    body = two_tasks.page(after).json()
    assert body["tasks"] and body["next_cursor"] == after


def test_d_disc_4_identity_conflict_and_revision_backwards(two_tasks: Dispatcher) -> None:
    arm(two_tasks, "discovery", kind="identity_conflict")
    arm(two_tasks, "discovery", kind="revision_backwards")
    normal = two_tasks.page("0").json()  # faults are consumed in order, one per response
    assert normal["tasks"][0]["tenant_key"].endswith("-conflict")
    backwards = two_tasks.page("0").json()
    assert backwards["tasks"][0]["task_revision"] == 0
    assert two_tasks.page("0").json()["tasks"][0] == {
        "task_id": "fa-1",
        "tenant_id": "tenant-a",
        "tenant_key": "tenant-a",
        "status": "running",
        "task_revision": 1,
    }


def test_d_disc_4_schema_invalid_and_malformed(two_tasks: Dispatcher) -> None:
    arm(two_tasks, "discovery", kind="schema_invalid")
    arm(two_tasks, "discovery", kind="malformed_json")
    r = two_tasks.page("0")
    assert r.status_code == 200 and not CONTRACTS.is_valid("task-discovery.page", r.json())
    r = two_tasks.page("0")
    assert r.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        r.json()
    assert CONTRACTS.is_valid("task-discovery.page", two_tasks.page("0").json())


def test_d_disc_9_unavailable_n_times_then_normal(two_tasks: Dispatcher) -> None:
    arm(two_tasks, "discovery", kind="unavailable", count=3)
    assert two_tasks.admin("GET", "/faults")["faults"][0]["remaining"] == 3
    codes = [two_tasks.page("0").status_code for _ in range(4)]
    assert codes == [503, 503, 503, 200]
    assert two_tasks.admin("GET", "/faults")["faults"] == []


def test_slow_discovery_and_clear(two_tasks: Dispatcher) -> None:
    arm(two_tasks, "discovery", kind="slow", delay_ms=400)
    started = time.monotonic()
    r = two_tasks.page("0")
    assert r.status_code == 200 and time.monotonic() - started >= 0.4
    arm(two_tasks, "discovery", kind="unavailable", count=5)
    assert two_tasks.admin("DELETE", "/faults")["cleared"] == 1
    assert two_tasks.page("0").status_code == 200


def test_auth_is_checked_before_faults(two_tasks: Dispatcher) -> None:
    arm(two_tasks, "discovery", kind="unavailable")
    r = two_tasks.get("/tasks", headers={}, params={"after": "0"})
    assert r.status_code == 401
    assert two_tasks.page("0").status_code == 503


@pytest.mark.parametrize(
    ("resource", "path", "kind", "status", "code"),
    [
        ("task", "/task/fa-1", "not_found", 404, "resource_not_found"),
        ("task", "/task/fa-1", "unavailable", 503, "service_unavailable"),
        ("sip", "/sip", "not_found", 404, "resource_not_found"),
        ("sip", "/sip", "unavailable", 503, "service_unavailable"),
        ("quota", "/tenant/tenant-a/quota", "not_found", 404, "resource_not_found"),
        ("quota", "/tenant/tenant-a/quota", "unavailable", 503, "tenant_quota_unavailable"),
    ],
)
def test_d_cfg_4_config_faults(
    two_tasks: Dispatcher, resource: str, path: str, kind: str, status: int, code: str
) -> None:
    two_tasks.admin("PUT", "/sip", {})
    two_tasks.admin("PUT", "/tenants/tenant-a/quota", {"max_concurrent_calls": 2})
    arm(two_tasks, "config", resource=resource, kind=kind)
    r = two_tasks.get(path)
    assert (r.status_code, r.json()["error"]["code"]) == (status, code)
    assert CONTRACTS.is_valid("config-read.error", r.json())
    assert two_tasks.get(path).status_code == 200


def test_d_cfg_4_config_fault_targets_one_task(two_tasks: Dispatcher) -> None:
    arm(two_tasks, "config", resource="task", target="fa-2", kind="not_found", count=2)
    assert two_tasks.get("/task/fa-1").status_code == 200
    assert [two_tasks.get("/task/fa-2").status_code for _ in range(3)] == [404, 404, 200]


def test_config_body_faults(two_tasks: Dispatcher) -> None:
    two_tasks.admin("PUT", "/sip", {})
    arm(two_tasks, "config", resource="sip", kind="identity_conflict")
    arm(two_tasks, "config", resource="task", kind="schema_invalid")
    arm(two_tasks, "config", resource="task", kind="malformed_json")
    assert two_tasks.get("/sip").json()["dispatcher_id"] != two_tasks.id
    assert not CONTRACTS.is_valid("config-read.task_config", two_tasks.get("/task/fa-1").json())
    with pytest.raises(json.JSONDecodeError):
        two_tasks.get("/task/fa-1").json()


def test_admin_rejects_unknown_fault_kinds(dispatcher: Dispatcher) -> None:
    dispatcher.admin("POST", "/faults/discovery", {"kind": "gone"}, expect=400)
    dispatcher.admin(
        "POST", "/faults/config", {"resource": "disk", "kind": "not_found"}, expect=400
    )
    dispatcher.admin("POST", "/faults/discovery", {"kind": "slow", "count": 0}, expect=400)


@pytest.mark.parametrize("target", ["task", "control"])
async def test_d_mq_5_raw_invalid_body(
    two_tasks: Dispatcher, amqp: AbstractRobustConnection, target: str
) -> None:
    body = {"target": target, "body": '{"schema_version": "nope"'}
    if target == "task":
        body["task_id"] = "fa-1"
        queue = f"agent-call.d.{two_tasks.id}.task.fa-1.v3"
    else:
        queue = two_tasks.topology["control_queue"]
    out = two_tasks.admin("POST", "/faults/raw", body)
    assert out["state"] == "confirmed"
    [msg] = await drain(amqp, queue)
    assert msg.body == b'{"schema_version": "nope"'


def test_raw_body_only_to_an_existing_task_queue(dispatcher: Dispatcher) -> None:
    dispatcher.admin(
        "POST", "/faults/raw", {"target": "task", "task_id": "nope", "body": "x"}, expect=404
    )
    dispatcher.admin("POST", "/faults/raw", {"target": "task", "body": "x"}, expect=400)
