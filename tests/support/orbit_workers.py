"""Real `orbit worker` processes running examples/orbit_workers.py, a protocol-level worker,
and HTTP helpers for the worker suites (the server: `tests.support.orbit_server`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.orbit.store.db import Database
from tests.support.orbit_server import Tenant, execution_server
from tests.support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
APP = "examples.orbit_workers:registry"


# The fixtures of a worker suite with its own server: the module defines `exec_db_url` (its
# database, migrated) and binds these names to them.
@pytest.fixture(scope="module")
def exec_url(exec_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Orbit execution server of this module, on `exec_db_url`."""
    log = tmp_path_factory.mktemp("orbit-workers-server") / "server.log"
    with execution_server(exec_db_url, log) as url:
        yield url


@pytest.fixture
async def tenant(exec_db_url: str, exec_url: str) -> AsyncIterator[Tenant]:
    """A fresh tenant, its token and queue, on the module's server."""
    db = Database.open(exec_db_url, pool_size=2)
    yield await Tenant.create(db, exec_url)
    await db.close()


@pytest.fixture
async def http(exec_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the module's server."""
    async with httpx.AsyncClient(base_url=exec_url, timeout=30) as client:
        yield client


class WorkerProcess:
    """`orbit worker --app examples.orbit_workers:registry` as a child process."""

    def __init__(
        self,
        url: str,
        token: str,
        queues: list[str],
        log_path: Path,
        concurrency: int = 4,
        grace: float = 30.0,
        name: str = "w",
        entry: tuple[str, ...] = ("-m", "agentcall.orbit.sdk.worker"),
    ) -> None:
        """`entry` ("-m", "agentcall.orbit", "worker") runs the same command through the CLI."""
        self.log_path = log_path
        command = [
            sys.executable,
            *entry,
            "--app",
            APP,
            "--log-format",
            "json",
            "--concurrency",
            str(concurrency),
            "--grace-period",
            str(grace),
            "--name",
            name,
        ]
        for queue in queues:
            command += ["--queue", queue]
        env = {**os.environ, "ORBIT_URL": url, "ORBIT_TOKEN": token}
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def signal(self, sig: signal.Signals) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    async def connected(self, timeout: float = 30) -> WorkerProcess:
        async def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"worker exited: {self.log()[-2000:]}")
            return '"connected"' in self.log()

        await wait_until(ready, timeout, f"worker {self.log_path.stem} to connect", step=0.1)
        return self

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


@contextlib.contextmanager
def workers(*processes: WorkerProcess) -> Iterator[tuple[WorkerProcess, ...]]:
    try:
        yield processes
    finally:
        for process in processes:
            process.close()


def task_body(tenant: Tenant, handler: str = "demo.work", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "queue_id": tenant.queue_id,
        "handler": handler,
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {},
    }
    body.update(fields)
    return body


async def submit(
    http: httpx.AsyncClient, tenant: Tenant, token: str | None = None, **fields: Any
) -> str:
    key = os.urandom(8).hex()
    response = await http.post(
        "/v1/tasks", json=task_body(tenant, **fields), headers=tenant.headers(token, key=key)
    )
    assert response.status_code == 201, response.text
    task_id: str = response.json()["data"]["task"]["id"]
    return task_id


async def get_task(http: httpx.AsyncClient, tenant: Tenant, task_id: str) -> dict[str, Any]:
    response = await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers())
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def attempts(http: httpx.AsyncClient, tenant: Tenant, task_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/v1/tasks/{task_id}/attempts?limit=100", headers=tenant.headers())
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["data"]["items"]
    return items


async def wait_state(
    http: httpx.AsyncClient, tenant: Tenant, task_id: str, states: set[str], timeout: float = 15
) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def reached() -> bool:
        found.update(await get_task(http, tenant, task_id))
        return found["state"] in states

    await wait_until(reached, timeout, f"task {task_id} in {sorted(states)}")
    return found


def in_seconds(seconds: float) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RawWorker:
    """A protocol-level worker for exact message tests: sends what the test says, keeps every
    server message, matches acks by msg_id."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.inbox: list[dict[str, Any]] = []
        self._ids = 0

    @classmethod
    async def connect(
        cls,
        base: str,
        token: str,
        queues: list[str],
        *,
        capacity: int = 4,
        handlers: tuple[tuple[str, str], ...] = (("demo.work", "v1"),),
        attempts: list[dict[str, str]] | None = None,
    ) -> tuple[RawWorker, dict[str, Any]]:
        from websockets.asyncio.client import connect

        ws = await connect(
            base.replace("http", "ws") + "/v1/workers/connect",
            additional_headers={"Authorization": f"Bearer {token}"},
            subprotocols=["orbit.worker.v1"],
            proxy=None,
        )  # type: ignore[list-item]
        worker = cls(ws)
        await worker.send(
            {
                "type": "hello",
                "protocol": "orbit.worker.v1",
                "worker": {"name": "raw", "instance_id": os.urandom(16).hex()},
                "queues": queues,
                "capacity": capacity,
                "attempts": attempts or [],
                "handlers": [{"handler": h, "handler_version": v} for h, v in handlers],
            }
        )
        return worker, await worker.next("hello_ok")

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def next(self, kind: str, timeout: float = 10) -> dict[str, Any]:
        for message in self.inbox:
            if message["type"] == kind:
                self.inbox.remove(message)
                return message
        async with asyncio.timeout(timeout):
            while True:
                message = json.loads(await self.ws.recv())
                if message["type"] == kind:
                    return message
                self.inbox.append(message)

    async def request(self, message: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
        self._ids += 1
        msg_id = f"r{self._ids}"
        await self.send({**message, "msg_id": msg_id})
        for found in self.inbox:
            if found["type"] == "ack" and found["msg_id"] == msg_id:
                self.inbox.remove(found)
                return found
        async with asyncio.timeout(timeout):
            while True:
                got = json.loads(await self.ws.recv())
                if got["type"] == "ack" and got.get("msg_id") == msg_id:
                    return got
                self.inbox.append(got)

    async def close(self) -> None:
        await self.ws.close()


def ref(lease: dict[str, Any]) -> dict[str, str]:
    return {"attempt_id": lease["attempt"]["id"], "lease_token": lease["attempt"]["lease_token"]}
