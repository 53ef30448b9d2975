"""Credentials, permissions and scopes over HTTP: O-API-1."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.integration.orbit.wire import dumps, error, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


async def submitted(
    http: httpx.AsyncClient, tenant: Tenant, queue_id: str | None = None, token: str | None = None
) -> str:
    body = tenant.body(queue_id=queue_id or tenant.queue_id)
    response = await http.post(
        "/v1/tasks", content=dumps(body), headers=tenant.headers(token, f"seed-{queue_id}")
    )
    return str(ok(response, 201)["task"]["id"])


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer orb_not-a-real-token", "Basic dXNlcjpwYXNz", "orb_x"],
)
async def test_o_api_1_missing_or_unknown_token_is_401(
    http: httpx.AsyncClient, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = await http.get(f"/v1/tasks?queue_id={'0' * 32}", headers=headers)
    error(response, 401, "UNAUTHENTICATED")
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_o_api_1_expired_and_revoked_tokens_are_401(
    http: httpx.AsyncClient, tenant: Tenant, db: Database
) -> None:
    """O-API-1: a token is refused from its expiry instant on (even while its record is
    cached), and within the token cache's lifetime (1 s) once revoked."""
    task_id = await submitted(http, tenant)
    soon = datetime.now(UTC) + timedelta(seconds=3)  # generous: CI machines can be busy
    _, expiring = await tenant.token_for([Permission.READ], expires_at=soon)
    revoked_id, revoked = await tenant.token_for([Permission.READ])
    ok(await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers(expiring)))
    ok(await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers(revoked)))
    await Admin(db).revoke_token(revoked_id)
    revoked_at = time.monotonic()
    # The bound holds for the moment a request is sent: the server reads the record at or
    # after that moment, and a record loaded before the revocation is cached < 1 s. The
    # answer itself may arrive later on a busy machine, so its arrival is not measured.
    while True:
        sent = time.monotonic()
        response = await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers(revoked))
        if response.status_code != 200:
            break
        assert sent - revoked_at < 1.0, "a revoked token still works 1 s after its revocation"
        await asyncio.sleep(0.05)
    error(response, 401, "UNAUTHENTICATED")
    while (soon - datetime.now(UTC)).total_seconds() > 0.4:  # its record stays cached
        ok(await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers(expiring)))
        await asyncio.sleep(0.2)
    await asyncio.sleep(max(0.0, (soon - datetime.now(UTC)).total_seconds()) + 0.05)
    error(
        await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers(expiring)),
        401,
        "UNAUTHENTICATED",
    )


async def test_o_api_1_missing_permission_is_403(http: httpx.AsyncClient, tenant: Tenant) -> None:
    task_id = await submitted(http, tenant)
    _, reader = await tenant.token_for([Permission.READ])
    _, submitter = await tenant.token_for([Permission.SUBMIT])
    cancel = dumps({"expected_revision": "1", "reason": "r"})
    error(
        await http.post(
            "/v1/tasks", content=dumps(tenant.body()), headers=tenant.headers(reader, "k")
        ),
        403,
        "PERMISSION_DENIED",
    )
    error(
        await http.post(
            f"/v1/tasks/{task_id}:cancel", content=cancel, headers=tenant.headers(reader, "k")
        ),
        403,
        "PERMISSION_DENIED",
    )
    error(
        await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers(submitter)),
        403,
        "PERMISSION_DENIED",
    )
    error(
        await http.get(f"/v1/tasks?queue_id={tenant.queue_id}", headers=tenant.headers(submitter)),
        403,
        "PERMISSION_DENIED",
    )


async def test_o_api_1_queue_scope(http: httpx.AsyncClient, tenant: Tenant) -> None:
    """O-API-1: outside the token's queues: submit and list are 403, single reads 404."""
    other_queue = await tenant.queue()
    _, wide = await tenant.token_for([Permission.SUBMIT], [tenant.queue_id, other_queue])
    hidden = await submitted(http, tenant, other_queue, wide)
    _, scoped = await tenant.token_for(list(Permission), [tenant.queue_id])
    body = dumps(tenant.body(queue_id=other_queue))
    error(
        await http.post("/v1/tasks", content=body, headers=tenant.headers(scoped, "s")),
        403,
        "PERMISSION_DENIED",
    )
    error(
        await http.get(f"/v1/tasks?queue_id={other_queue}", headers=tenant.headers(scoped)),
        403,
        "PERMISSION_DENIED",
    )
    error(await http.get(f"/v1/tasks/{hidden}", headers=tenant.headers(scoped)), 404, "NOT_FOUND")
    cancel = dumps({"expected_revision": "1", "reason": "r"})
    error(
        await http.post(
            f"/v1/tasks/{hidden}:cancel", content=cancel, headers=tenant.headers(scoped, "c")
        ),
        404,
        "NOT_FOUND",
    )
    error(
        await http.post(
            "/v1/tasks",
            content=dumps(tenant.body(queue_id="f" * 32)),
            headers=tenant.headers(key="nq"),
        ),
        403,
        "PERMISSION_DENIED",
    )


async def test_o_api_1_other_namespace_is_404(
    http: httpx.AsyncClient, tenant: Tenant, db: Database, server_url: str
) -> None:
    """O-API-1: the credential fixes the namespace; another namespace's task does not exist."""
    task_id = await submitted(http, tenant)
    stranger = await Tenant.create(db, server_url)
    error(await http.get(f"/v1/tasks/{task_id}", headers=stranger.headers()), 404, "NOT_FOUND")
    cancel = dumps({"expected_revision": "1", "reason": "r"})
    error(
        await http.post(
            f"/v1/tasks/{task_id}:cancel", content=cancel, headers=stranger.headers(key="x")
        ),
        404,
        "NOT_FOUND",
    )
    error(
        await http.get(f"/v1/tasks?queue_id={tenant.queue_id}", headers=stranger.headers()),
        403,
        "PERMISSION_DENIED",
    )
    # a body cannot pick the namespace
    body = dumps({**tenant.body(), "namespace_id": stranger.namespace_id})
    error(
        await http.post("/v1/tasks", content=body, headers=tenant.headers(key="ns")),
        400,
        "INVALID_ARGUMENT",
    )
