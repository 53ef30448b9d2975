"""The four GETs over real HTTP: authentication, ownership, errors (D-ID-2, D-CFG-1..4)."""

from __future__ import annotations

import uuid

import pytest

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from tests.integration.mocksaas.harness import Dispatcher, Server

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
CONTRACTS = Contracts(find_contracts_dir())
PATHS = ["/sip", "/task/t-x", "/tenant/tenant-a/quota", "/tasks?after=0"]


def _error(r: object, status: int, code: str, kind: str) -> None:
    import httpx

    assert isinstance(r, httpx.Response)
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"]["code"] == code
    assert CONTRACTS.violations(kind, body) == []


def _kind(path: str) -> str:
    return "task-discovery.error" if path.startswith("/tasks") else "config-read.error"


@pytest.mark.parametrize("path", PATHS)
def test_d_id_2_missing_headers_401(dispatcher: Dispatcher, path: str) -> None:
    _error(dispatcher.get(path, headers={}), 401, "unauthorized", _kind(path))
    _error(
        dispatcher.get(path, headers={"X-DISPATCHER-ID": dispatcher.id}),
        401,
        "unauthorized",
        _kind(path),
    )


@pytest.mark.parametrize("path", PATHS)
def test_d_id_2_wrong_secret_or_unknown_dispatcher_401(dispatcher: Dispatcher, path: str) -> None:
    wrong = {"X-DISPATCHER-ID": dispatcher.id, "X-DISPATCHER-SECRET-KEY": "nope"}
    _error(dispatcher.get(path, headers=wrong), 401, "unauthorized", _kind(path))
    unknown = {"X-DISPATCHER-ID": str(uuid.uuid4()), "X-DISPATCHER-SECRET-KEY": dispatcher.secret}
    _error(dispatcher.get(path, headers=unknown), 401, "unauthorized", _kind(path))


@pytest.mark.parametrize("path", PATHS)
def test_d_disc_9_disabled_dispatcher_403(dispatcher: Dispatcher, path: str) -> None:
    dispatcher.admin("PATCH", "", {"authorized": False})
    _error(dispatcher.get(path), 403, "dispatcher_not_authorized", _kind(path))
    dispatcher.admin("PATCH", "", {"authorized": True})
    assert dispatcher.get("/tasks?after=0").status_code == 200


def test_d_id_2_header_names_are_case_insensitive(dispatcher: Dispatcher) -> None:
    for id_name, key_name in [
        ("x-dispatcher-id", "x-dispatcher-secret-key"),
        ("X-DISPATCHER-id", "X-Dispatcher-Secret-Key"),
    ]:
        r = dispatcher.get(
            "/tasks",
            headers={id_name: dispatcher.id, key_name: dispatcher.secret},
            params={"after": "0"},
        )
        assert r.status_code == 200, r.text


def test_d_cfg_1_sip_missing_then_set(dispatcher: Dispatcher) -> None:
    _error(dispatcher.get("/sip"), 404, "resource_not_found", "config-read.error")
    dispatcher.admin(
        "PUT",
        "/sip",
        {
            "time_zone": "Europe/Paris",
            "max_concurrent_calls": 4,
            "allowed_targets": ["15000000001"],
        },
    )
    dispatcher.admin("PUT", "/sip", {})
    r = dispatcher.get("/sip")
    body = r.json()
    assert r.status_code == 200 and body["revision"] == 2
    assert body["dispatcher_id"] == dispatcher.id
    assert CONTRACTS.violations("config-read.sip_config", body) == []


def test_admin_sip_snapshot_is_validated(dispatcher: Dispatcher) -> None:
    good = dispatcher.admin("PUT", "/sip", {})
    bad = {**good, "artifact": {**good["artifact"], "mode": "sometimes"}}
    out = dispatcher.admin("PUT", "/sip", {"snapshot": bad}, expect=400)
    assert out["error"]["code"] == "invalid_request" and "mode" in out["error"]["message"]
    ok = dispatcher.admin("PUT", "/sip", {"snapshot": good})
    assert ok["revision"] == 2


@pytest.mark.parametrize("mode", ["full_ai", "asr_only"])
def test_d_cfg_2_task_config_served_and_valid(dispatcher: Dispatcher, mode: str) -> None:
    task = dispatcher.put_task(mode=mode, max_concurrent_calls=3, time_zone="UTC")
    r = dispatcher.get(f"/task/{task['task_id']}")
    body = r.json()
    assert r.status_code == 200
    assert CONTRACTS.violations("config-read.task_config", body) == []
    assert (body["agent"]["config"]["mode"], body["max_concurrent_calls"]) == (mode, 3)
    assert body["schedule"]["time_zone"] == "UTC"
    assert body["agent"]["authorization_expires_at"] == "2099-12-31T23:59:59Z"


def test_d_cfg_2_update_bumps_revision(dispatcher: Dispatcher) -> None:
    task = dispatcher.put_task()
    tid = task["task_id"]
    updated = dispatcher.put_task(
        tid, max_concurrent_calls=1, authorization_expires_at="2020-01-01T00:00:00Z"
    )
    assert updated["task_revision"] == 2 and updated["last_event_id"] == 2
    body = dispatcher.get(f"/task/{tid}").json()
    assert body["task_revision"] == 2 and body["max_concurrent_calls"] == 1
    assert body["agent"]["authorization_expires_at"] == "2020-01-01T00:00:00Z"


def test_d_cfg_4_foreign_and_unknown_task_404(server: Server, dispatcher: Dispatcher) -> None:
    other = server.new_dispatcher()
    try:
        foreign = other.put_task()["task_id"]
        _error(dispatcher.get(f"/task/{foreign}"), 404, "resource_not_found", "config-read.error")
        _error(
            dispatcher.get("/task/never-created"), 404, "resource_not_found", "config-read.error"
        )
        assert other.get(f"/task/{foreign}").status_code == 200
    finally:
        other.delete()


def test_admin_rejects_bad_task_input(dispatcher: Dispatcher) -> None:
    cases = [
        ({"tenant_id": "t"}, "tenant_key"),
        ({"tenant_key": "t"}, "tenant_id"),
        ({"tenant_id": "t", "tenant_key": "t", "mode": "half_ai"}, "mode"),
        ({"tenant_id": "t", "tenant_key": "t", "colour": 1}, "colour"),
        ({"tenant_id": "t", "tenant_key": "t", "ring_timeout_ms": 0}, "ring_timeout_ms"),
    ]
    for body, field in cases:
        out = dispatcher.admin("PUT", "/tasks/t-bad", body, expect=400)
        assert field in out["error"]["message"], out
    out = dispatcher.admin(
        "PUT", "/tasks/bad.id", {"tenant_id": "t", "tenant_key": "t"}, expect=400
    )
    assert "task_id" in out["error"]["message"]


def test_d_cfg_3_quota_states(dispatcher: Dispatcher) -> None:
    _error(dispatcher.get("/tenant/tenant-a/quota"), 404, "resource_not_found", "config-read.error")
    dispatcher.put_task(tenant_id="tenant-a", tenant_key="key-a")
    _error(
        dispatcher.get("/tenant/tenant-a/quota"),
        503,
        "tenant_quota_unavailable",
        "config-read.error",
    )
    for n in (3, 0):
        dispatcher.admin("PUT", "/tenants/tenant-a/quota", {"max_concurrent_calls": n})
        body = dispatcher.get("/tenant/tenant-a/quota").json()
        assert CONTRACTS.violations("config-read.tenant_quota", body) == []
        assert (body["max_concurrent_calls"], body["tenant_key"]) == (n, "key-a")
    assert body["quota_revision"] == 2
    dispatcher.admin("PUT", "/tenants/tenant-a/quota", {"unavailable": True})
    _error(
        dispatcher.get("/tenant/tenant-a/quota"),
        503,
        "tenant_quota_unavailable",
        "config-read.error",
    )
    dispatcher.admin(
        "PUT",
        "/tenants/tenant-a/quota",
        {"max_concurrent_calls": 2, "valid_until": "2020-01-01T00:00:00Z"},
    )
    _error(
        dispatcher.get("/tenant/tenant-a/quota"),
        503,
        "tenant_quota_unavailable",
        "config-read.error",
    )


@pytest.mark.parametrize(
    "dispatcher_id",
    [str(uuid.uuid4()).upper(), str(uuid.uuid1()), "not-a-uuid", "{" + str(uuid.uuid4()) + "}"],
)
def test_d_id_1_dispatcher_id_is_lowercase_uuid_v4(server: Server, dispatcher_id: str) -> None:
    out = server.admin("POST", "/dispatchers", {"dispatcher_id": dispatcher_id}, expect=400)
    assert "dispatcher_id" in out["error"]["message"]


def test_d_id_1_explicit_ids_and_duplicates(server: Server) -> None:
    wanted = str(uuid.uuid4())
    d = server.new_dispatcher(dispatcher_id=wanted, secret="s3cret")
    try:
        assert (d.id, d.secret) == (wanted, "s3cret")
        server.admin("POST", "/dispatchers", {"dispatcher_id": wanted}, expect=409)
        other = server.new_dispatcher()
        try:
            task_id = d.put_task()["task_id"]  # task ids are global: another D cannot reuse
            out = other.admin(
                "PUT", f"/tasks/{task_id}", {"tenant_id": "t", "tenant_key": "t"}, expect=409
            )
            assert out["error"]["code"] == "conflict"
        finally:
            other.delete()
    finally:
        d.delete()
