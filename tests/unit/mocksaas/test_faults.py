"""Fault injection rewrites responses in the ways D-DISC-4 / D-CFG-4 must reject."""

from __future__ import annotations

import json

import pytest

from agentcall.mocksaas.contracts import Contracts
from agentcall.mocksaas.domain.discovery import TaskRecord, build_page
from agentcall.mocksaas.domain.faults import (
    ConfigFault,
    ConfigResource,
    DiscoveryFault,
    Fault,
    FaultScope,
    Response,
    config_fault,
    discovery_fault,
    encode,
)
from agentcall.mocksaas.domain.quota import Quota, quota_body
from agentcall.mocksaas.domain.sip import SipOptions, build_sip_snapshot
from tests.unit.mocksaas.conftest import NOW, D

A = TaskRecord(5, "task-a", "ten", "ten", "running", 2)
B = TaskRecord(7, "task-b", "ten", "ten", "paused", 1)
FULL = build_page(D, 4, [A, B])
EMPTY = build_page(D, 7, [])


@pytest.mark.parametrize("page", [FULL, EMPTY], ids=["full", "empty"])
def test_d_disc_4_duplicate_task_in_page(page: dict[str, object]) -> None:
    r = discovery_fault(DiscoveryFault.DUPLICATE_TASK, page, B, 4 if page is FULL else 7)
    ids = [t["task_id"] for t in json.loads(r.body)["tasks"]]
    assert r.status == 200 and len(ids) != len(set(ids))


@pytest.mark.parametrize(("page", "after"), [(FULL, 4), (EMPTY, 7)], ids=["full", "empty"])
def test_d_disc_4_non_advancing_cursor(page: dict[str, object], after: int) -> None:
    body = json.loads(discovery_fault(DiscoveryFault.NON_ADVANCING_CURSOR, page, B, after).body)
    assert body["tasks"] and body["next_cursor"] == str(after)


def test_d_disc_4_identity_conflict_changes_tenant_key() -> None:
    body = json.loads(discovery_fault(DiscoveryFault.IDENTITY_CONFLICT, FULL, B, 4).body)
    assert body["tasks"][0]["tenant_key"] == "ten-conflict"


def test_d_disc_4_revision_backwards() -> None:
    body = json.loads(discovery_fault(DiscoveryFault.REVISION_BACKWARDS, FULL, B, 4).body)
    assert body["tasks"][0]["task_revision"] == 1


def test_d_disc_4_schema_invalid_fails_the_schema(contracts: Contracts) -> None:
    r = discovery_fault(DiscoveryFault.SCHEMA_INVALID, FULL, B, 4)
    assert r.status == 200 and not contracts.is_valid("task-discovery.page", json.loads(r.body))


def test_malformed_json_is_not_json() -> None:
    r = discovery_fault(DiscoveryFault.MALFORMED_JSON, FULL, B, 4)
    with pytest.raises(ValueError):
        json.loads(r.body)


def test_d_disc_9_unavailable_is_a_valid_503(contracts: Contracts) -> None:
    r = discovery_fault(DiscoveryFault.UNAVAILABLE, FULL, B, 4)
    body = json.loads(r.body)
    assert r.status == 503 and body["error"]["code"] == "service_unavailable"
    assert contracts.is_valid("task-discovery.error", body)


def test_slow_serves_the_real_page_after_a_delay() -> None:
    r = discovery_fault(DiscoveryFault.SLOW, FULL, B, 4, delay_ms=250)
    assert (r.status, r.delay_ms, json.loads(r.body)) == (200, 250, FULL)


SIP = Response(200, encode(build_sip_snapshot(D, 1, SipOptions(), NOW)))
QUOTA = Response(200, encode(quota_body(D, Quota("t", "tk", 1, 2), NOW)))


@pytest.mark.parametrize(
    ("kind", "resource", "status", "code"),
    [
        (ConfigFault.NOT_FOUND, ConfigResource.TASK, 404, "resource_not_found"),
        (ConfigFault.UNAVAILABLE, ConfigResource.SIP, 503, "service_unavailable"),
        (ConfigFault.UNAVAILABLE, ConfigResource.QUOTA, 503, "tenant_quota_unavailable"),
    ],
)
def test_d_cfg_4_config_error_faults(
    contracts: Contracts, kind: ConfigFault, resource: ConfigResource, status: int, code: str
) -> None:
    r = config_fault(kind, resource, SIP)
    body = json.loads(r.body)
    assert (r.status, body["error"]["code"]) == (status, code)
    assert contracts.is_valid("config-read.error", body)


def test_d_cfg_1_sip_identity_conflict_changes_dispatcher(contracts: Contracts) -> None:
    body = json.loads(config_fault(ConfigFault.IDENTITY_CONFLICT, ConfigResource.SIP, SIP).body)
    assert body["dispatcher_id"] != D
    assert contracts.is_valid("config-read.sip_config", body)


def test_d_cfg_3_quota_identity_conflict_changes_tenant_key() -> None:
    body = json.loads(config_fault(ConfigFault.IDENTITY_CONFLICT, ConfigResource.QUOTA, QUOTA).body)
    assert body["tenant_key"] == "tk-conflict"


def test_config_schema_invalid(contracts: Contracts) -> None:
    r = config_fault(ConfigFault.SCHEMA_INVALID, ConfigResource.QUOTA, QUOTA)
    assert not contracts.is_valid("config-read.tenant_quota", json.loads(r.body))


def test_body_faults_pass_errors_through() -> None:
    err = Response(404, b"{}")
    assert config_fault(ConfigFault.SCHEMA_INVALID, ConfigResource.TASK, err) == err


@pytest.mark.parametrize(
    ("fault", "resource", "target", "ok"),
    [
        (Fault(1, FaultScope.DISCOVERY, "slow", 1), None, None, True),
        (Fault(1, FaultScope.DISCOVERY, "slow", 1), ConfigResource.SIP, None, False),
        (
            Fault(1, FaultScope.CONFIG, "not_found", 1, ConfigResource.TASK),
            ConfigResource.TASK,
            "t1",
            True,
        ),
        (
            Fault(1, FaultScope.CONFIG, "not_found", 1, ConfigResource.TASK, "t2"),
            ConfigResource.TASK,
            "t1",
            False,
        ),
        (
            Fault(1, FaultScope.CONFIG, "not_found", 1, ConfigResource.TASK, "t1"),
            ConfigResource.TASK,
            "t1",
            True,
        ),
        (
            Fault(1, FaultScope.CONFIG, "not_found", 1, ConfigResource.SIP),
            ConfigResource.TASK,
            "t1",
            False,
        ),
    ],
)
def test_fault_matching(
    fault: Fault, resource: ConfigResource | None, target: str | None, ok: bool
) -> None:
    assert fault.matches(resource, target) is ok


def test_d_note_1_stale_replica_serves_the_old_record_of_a_task() -> None:
    normal, old = Response(200, b'{"task_revision": 3}'), Response(200, b'{"task_revision": 1}')
    served = config_fault(ConfigFault.STALE_REPLICA, ConfigResource.TASK, normal, stale=old)
    assert served is old
    assert config_fault(ConfigFault.STALE_REPLICA, ConfigResource.TASK, normal) is normal
