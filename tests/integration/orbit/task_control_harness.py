"""Shared pieces of the task control suites (cancel, retry/resolve, batch, SDK and CLI): operator
writes over HTTP and a RawWorker helper that runs a leased task up to RUNNING."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import RawWorker, ref


def key() -> str:
    return os.urandom(8).hex()


async def post(
    http: httpx.AsyncClient,
    tenant: Tenant,
    path: str,
    body: Any,
    idem: str | None = None,
    token: str | None = None,
) -> httpx.Response:
    return await http.post(
        path, content=json.dumps(body), headers=tenant.headers(token, key=idem or key())
    )


async def cancel(
    http: httpx.AsyncClient, tenant: Tenant, task_id: str, revision: str, idem: str | None = None
) -> httpx.Response:
    body = {"expected_revision": revision, "reason": "the operator changed their mind"}
    return await post(http, tenant, f"/v1/tasks/{task_id}:cancel", body, idem)


async def run_leased(raw: RawWorker) -> tuple[dict[str, str], dict[str, Any]]:
    """Take the next lease and start it: (attempt ref, started ack)."""
    lease = await raw.next("lease")
    attempt = ref(lease)
    started = await raw.request({"type": "started", **attempt})
    assert started["ok"], started
    return attempt, started
