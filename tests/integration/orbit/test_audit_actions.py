"""Every audited action over the real server on SQLite and MariaDB (docs/orbit/audit.md): the
API's submit, batch, cancel, retry and resolve, the command line's cancel (origin cli), the
console's cancel (origin console), the admin CLI's init, queue create, token create and revoke
(the OS user); each record names the token and its name, the action and target, the origin,
the remote address and the request id the answer carried; `GET /v1/audit` needs audit:read,
filters and pages (SDK and `orbit audit list`); a queue's settings change records its new
revision; no token secret is ever stored in the log, not even one pasted into a reason."""

from __future__ import annotations

import getpass
import json
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.sdk.client import AsyncClient
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import audit_log
from tests.integration.orbit.task_control_harness import key, post, run_leased
from tests.integration.orbit.test_console_http import _page_csrf, _sign_in
from tests.integration.orbit.wire import dumps, ok
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import RawWorker, get_task, submit

pytestmark = pytest.mark.integration


async def entries(http: httpx.AsyncClient, tenant: Tenant, **params: str) -> list[dict[str, Any]]:
    response = await http.get("/v1/audit", params=params, headers=tenant.headers())
    items: list[dict[str, Any]] = ok(response)["items"]
    return items


async def one(http: httpx.AsyncClient, tenant: Tenant, action: str, target: str) -> dict[str, Any]:
    (found,) = await entries(http, tenant, action=action, target=target)
    return found


async def test_api_task_writes_record_who_what_where_and_the_request(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    token_id, named = await tenant.token_for(list(Permission))
    async with tenant.db.write() as conn:  # a name as `orbit token create --name` sets it
        await conn.execute(
            sa.text("UPDATE tokens SET name = 'ops-alice' WHERE id = :id"), {"id": token_id}
        )
    headers = {**tenant.headers(named, key=key()), "X-Forwarded-For": "203.0.113.9"}
    submitted = await http.post("/v1/tasks", content=dumps(tenant.body()), headers=headers)
    task_id = ok(submitted, 201)["task"]["id"]
    body = dumps({"expected_revision": "1", "reason": "<b>stop</b>\x1b[31m"})
    headers = tenant.headers(named, key=key())
    cancelled = await http.post(f"/v1/tasks/{task_id}:cancel", content=body, headers=headers)
    ok(cancelled)
    entry = await one(http, tenant, "tasks.cancel", task_id)
    assert entry["actor"] == {"token_id": token_id, "name": "ops-alice"}
    assert entry["target"] == {"kind": "task", "id": task_id}
    assert (entry["origin"], entry["remote_addr"]) == ("api", "127.0.0.1")  # no trusted proxy
    assert entry["request_id"] == cancelled.headers["x-request-id"]
    assert entry["detail"]["reason"] == "<b>stop</b>\x1b[31m"
    made = await one(http, tenant, "tasks.submit", task_id)
    assert made["request_id"] == submitted.headers["x-request-id"] and made["origin"] == "api"
    batch = [tenant.body(), tenant.body()]
    answer = await http.post(
        "/v1/tasks:batch", content=dumps({"tasks": batch}), headers=tenant.headers(key=key())
    )
    for item in ok(answer, 201)["items"]:
        recorded = await one(http, tenant, "tasks.batch", item["task_id"])
        assert recorded["request_id"] == answer.headers["x-request-id"]


async def test_retry_and_resolve_are_recorded(http: httpx.AsyncClient, tenant: Tenant) -> None:
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        failed_id = await submit(http, tenant)
        attempt, _ = await run_leased(raw)
        error = {"code": "bad_input", "message": "no", "retryable": False}
        await raw.request({"type": "result", **attempt, "outcome": "failed", "error": error})
        retried = await post(
            http,
            tenant,
            f"/v1/tasks/{failed_id}:retry",
            {"expected_revision": await revision(http, tenant, failed_id), "reason": "fixed"},
        )
        ok(retried)
        await run_leased(raw)  # the retried task's attempt, left running
        review_id = await submit(http, tenant)
        attempt, _ = await run_leased(raw)
        needs = {"code": "ambiguous", "message": "no answer"}
        await raw.request({"type": "result", **attempt, "outcome": "needs_review", "error": needs})
        resolution = {
            "expected_revision": await revision(http, tenant, review_id),
            "outcome": "succeeded",
            "result": 1,
            "reason": "checked",
        }
        resolved = await post(http, tenant, f"/v1/tasks/{review_id}:resolve", resolution)
        ok(resolved)
    finally:
        await raw.close()
    retry = await one(http, tenant, "tasks.retry", failed_id)
    assert (
        retry["request_id"] == retried.headers["x-request-id"]
        and retry["detail"]["reason"] == "fixed"
    )
    resolve = await one(http, tenant, "tasks.resolve", review_id)
    assert resolve["request_id"] == resolved.headers["x-request-id"]


async def revision(http: httpx.AsyncClient, tenant: Tenant, task_id: str) -> str:
    return str((await get_task(http, tenant, task_id))["revision"])


def cli(tenant: Tenant, *args: str) -> Any:
    env = {"ORBIT_URL": tenant.base_url, "ORBIT_TOKEN": tenant.token}
    result = CliRunner().invoke(main, [*args, "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.splitlines()[-1])


async def test_the_cli_cancel_is_recorded_with_origin_cli_and_listed_by_orbit_audit(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    task_id = await submit(http, tenant)
    cli(tenant, "tasks", "cancel", task_id, "--expected-revision", "1", "--reason", "cli stop")
    listed = cli(tenant, "audit", "list", "--action", "tasks.cancel", "--target", task_id)
    assert [(e["action"], e["origin"], e["target"]["id"]) for e in listed] == [
        ("tasks.cancel", "cli", task_id)
    ]


async def test_a_console_cancel_is_recorded_with_origin_console(
    http: httpx.AsyncClient, server_url: str, tenant: Tenant
) -> None:
    task_id = await submit(http, tenant)
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as browser:
        await _sign_in(browser, tenant.token)
        page = (await browser.get(f"/ui/tasks/{task_id}")).text
        form = {"revision": "1", "reason": "console stop", "key": key(), "csrf": _page_csrf(page)}
        done = await browser.post(f"/ui/tasks/{task_id}/cancel", data=form)
        assert done.status_code == 303
    entry = await one(http, tenant, "tasks.cancel", task_id)
    assert (entry["origin"], entry["remote_addr"]) == ("console", "127.0.0.1")
    assert entry["detail"]["reason"] == "console stop" and entry["request_id"]


async def test_admin_token_changes_record_the_os_user_and_never_the_secret(
    http: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    admin = Admin(db)
    issued = await admin.create_token(
        tenant.namespace_id, [Permission.READ], [tenant.queue_id], None, "ci-bot"
    )
    await admin.revoke_token(issued.token_id)
    queue_id = await admin.create_queue(tenant.namespace_id, "audited")
    made = await one(http, tenant, "queues.create", queue_id)
    assert made["detail"] == {"name": "audited"} and made["origin"] == "cli"
    init = await one(http, tenant, "namespaces.init", tenant.namespace_id)
    assert init["detail"]["queue"] == "main" and init["detail"]["token_id"]
    created = await one(http, tenant, "tokens.create", issued.token_id)
    revoked = await one(http, tenant, "tokens.revoke", issued.token_id)
    for entry in (created, revoked):
        assert entry["actor"] == {"token_id": None, "name": f"os:{getpass.getuser()}"}
        assert entry["origin"] == "cli" and entry["target"] == {
            "kind": "token",
            "id": issued.token_id,
        }
    assert (
        created["detail"]["permissions"] == ["tasks:read"] and created["detail"]["name"] == "ci-bot"
    )
    async with db.read() as conn:
        rows = (
            await conn.execute(
                sa.select(audit_log).where(audit_log.c.namespace_id == tenant.namespace_id)
            )
        ).all()
    stored = json.dumps([list(map(str, row)) for row in rows])
    assert issued.token not in stored and tenant.token not in stored
    assert issued.token.removeprefix("orb_") not in stored


async def test_reading_needs_audit_read_filters_and_pages(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    _, reader = await tenant.token_for([Permission.READ])
    refused = await http.get("/v1/audit", headers=tenant.headers(reader))
    assert refused.status_code == 403 and "audit:read" in refused.text
    task_ids = [await submit(http, tenant) for _ in range(5)]
    async with AsyncClient(tenant.base_url, tenant.token) as client:
        first = await client.audit.list(action="tasks.submit", limit=2)
        assert len(first.items) == 2 and first.next_cursor is not None
        walked = [e.target_id async for e in client.audit.iter(action="tasks.submit")]
    assert walked == list(reversed(task_ids))
    bad = await http.get(
        "/v1/audit", params={"cursor": first.next_cursor}, headers=tenant.headers()
    )
    assert bad.status_code == 400 and "different audit filters" in bad.text
    since = first.items[1].at.isoformat().replace("+00:00", "Z")
    recent = await entries(http, tenant, action="tasks.submit", since=since)
    assert [e["target"]["id"] for e in recent] == list(reversed(task_ids))[:2]


async def test_a_queue_settings_change_is_recorded_with_its_new_revision(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = {"expected_revision": "1", "flow": {"max_running_per_key": 2}}
    headers = {**tenant.headers(), "Content-Type": "application/json"}
    changed = await http.patch(f"/v1/queues/{tenant.queue_id}", json=body, headers=headers)
    ok(changed)
    entry = await one(http, tenant, "queues.update", tenant.queue_id)
    assert entry["target"] == {"kind": "queue", "id": tenant.queue_id}
    assert entry["request_id"] == changed.headers["x-request-id"] and entry["origin"] == "api"
    assert entry["detail"] == {
        "revision": 2,
        "flow": {"fairness": False, "max_running_per_key": 2},
    }
    stale = await http.patch(f"/v1/queues/{tenant.queue_id}", json=body, headers=headers)
    assert stale.status_code == 409  # a refused change records nothing
    assert len(await entries(http, tenant, action="queues.update")) == 1


async def test_a_secret_pasted_into_a_request_never_reaches_the_log(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    task_id = await submit(http, tenant)
    reason = f"was told to use {tenant.token} here"
    body = {"expected_revision": "1", "reason": reason}
    ok(await post(http, tenant, f"/v1/tasks/{task_id}:cancel", body))
    entry = await one(http, tenant, "tasks.cancel", task_id)
    assert entry["detail"]["reason"] == "[redacted]"
    async with tenant.db.read() as conn:
        rows = (
            await conn.execute(
                sa.select(audit_log).where(audit_log.c.namespace_id == tenant.namespace_id)
            )
        ).all()
    stored = json.dumps([list(map(str, row)) for row in rows])
    assert tenant.token not in stored and tenant.token.removeprefix("orb_") not in stored
