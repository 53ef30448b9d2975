"""`client.wait` and its async twin: long-polls `GET /v1/tasks/{id}?wait_ms=` until the task
settles or the caller's timeout is spent, each poll with an HTTP read timeout longer than its
wait; `list_queues` and `list_workers` read their typed views (httpx.MockTransport)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import agentcall.orbit.sdk.client as sdk
from tests.unit.orbit.test_client import TASK

pytestmark = pytest.mark.unit


def _polls(states: list[str], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        state = states[min(len(seen), len(states)) - 1]
        body = {"request_id": "4" * 32, "data": {**TASK, "state": state}}
        return httpx.Response(200, content=json.dumps(body).encode())

    return httpx.MockTransport(handler)


def test_wait_long_polls_until_the_task_settles() -> None:
    seen: list[httpx.Request] = []
    transport = _polls(["RUNNING", "RUNNING", "NEEDS_REVIEW"], seen)
    with sdk.Client("http://orbit", "t", transport=transport) as client:
        task = client.wait("2" * 32, timeout=300)
    assert task.state == "NEEDS_REVIEW" and len(seen) == 3
    assert all(r.url.path == f"/v1/tasks/{'2' * 32}" for r in seen)
    assert [r.url.params["wait_ms"] for r in seen] == ["60000", "60000", "60000"]
    read_timeout = seen[0].extensions["timeout"]["read"]
    assert read_timeout is not None and read_timeout > 60  # longer than the server's wait


def test_wait_returns_the_last_read_when_the_timeout_is_spent() -> None:
    seen: list[httpx.Request] = []
    with sdk.Client("http://orbit", "t", transport=_polls(["WAITING"], seen)) as client:
        task = client.wait("2" * 32, timeout=0.25)
    assert task.state == "WAITING"
    assert 200 <= int(seen[0].url.params["wait_ms"]) <= 250  # what is left of the 0.25 s
    assert seen[-1].url.params["wait_ms"] == "0"


async def test_async_wait_is_the_same() -> None:
    seen: list[httpx.Request] = []
    transport = _polls(["LEASED", "SUCCEEDED"], seen)
    async with sdk.AsyncClient("http://orbit", "t", transport=transport) as client:
        task = await client.wait("2" * 32, timeout=5)
    assert task.state == "SUCCEEDED" and len(seen) == 2
    assert 4900 <= int(seen[0].url.params["wait_ms"]) <= 5000


def test_queues_and_workers_are_typed() -> None:
    queue: dict[str, Any] = {
        "id": "1" * 32,
        "name": "main",
        "counts": {"WAITING": 3},
        "oldest_waiting_at": "2026-09-17T00:00:00Z",
        "oldest_waiting_age_ms": 1500,
    }
    worker: dict[str, Any] = {
        "connection_id": "c" * 32,
        "server": "vm:1",
        "name": "w",
        "instance_id": "i" * 32,
        "queues": ["1" * 32],
        "handlers": [{"handler": "h", "handler_version": "v1"}],
        "slots": 4,
        "in_flight": 1,
        "connected_at": "2026-09-17T00:00:00Z",
        "last_heartbeat_at": "2026-09-17T00:00:01Z",
        "host": "vm",
        "pid": 7,
    }

    def handler(request: httpx.Request) -> httpx.Response:
        item = queue if request.url.path == "/v1/queues" else worker
        body = {"request_id": "4" * 32, "data": {"items": [item]}}
        return httpx.Response(200, content=json.dumps(body).encode())

    with sdk.Client("http://orbit", "t", transport=httpx.MockTransport(handler)) as client:
        (found,) = client.list_queues()
        (connected,) = client.list_workers()
    assert (found.name, found.counts, found.oldest_waiting_age_ms) == ("main", {"WAITING": 3}, 1500)
    assert connected.handlers == (("h", "v1"),) and connected.in_flight == 1
    assert connected.pid == 7 and connected.sdk is None
