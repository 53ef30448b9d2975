"""Run `mocksaas serve` as a subprocess and talk to it over real HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support.ports import free_port
from tests.support.services import amqp_url

CONTRACT = "/internal/v1/dispatcher"


def mocksaas_command() -> list[str]:
    script = Path(sys.executable).parent / "mocksaas"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from agentcall.mocksaas.cli import main; main()"]


class Server:
    """One `mocksaas serve` process on a free loopback port with its own SQLite file."""

    def __init__(
        self, db: Path, log: Path, page_size: int | None = None, amqp: str | None = None
    ) -> None:
        self.amqp = amqp or amqp_url()
        self.db = db
        self.log = log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.page_size = page_size
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, timeout=60)

    def start(self) -> Server:
        args = [
            *mocksaas_command(),
            "serve",
            "--http-port",
            str(self.port),
            "--amqp-url",
            self.amqp,
            "--db",
            str(self.db),
            "--log-format",
            "json",
        ]
        if self.page_size:
            args += ["--discovery-page-size", str(self.page_size)]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ}
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mocksaas exited: {self.log.read_text()[-3000:]}")
            try:
                if self.http.get("/healthz").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"mocksaas did not start: {self.log.read_text()[-3000:]}")

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    # ---- admin API ---------------------------------------------------------
    def admin(
        self,
        method: str,
        path: str,
        body: Any = None,
        expect: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        r = self.http.request(method, f"/admin/v1{path}", json=body, params=params)
        if expect is not None:
            assert r.status_code == expect, r.text
        elif r.status_code >= 300:
            raise AssertionError(f"{method} {path}: {r.status_code} {r.text}")
        return r.json()

    def new_dispatcher(self, **body: Any) -> Dispatcher:
        out = self.admin("POST", "/dispatchers", body, expect=201)
        return Dispatcher(self, out["dispatcher_id"], out["secret"], out["topology"])


@dataclass
class Dispatcher:
    """A dispatcher created on the server, with helpers for the contract GETs."""

    server: Server
    id: str
    secret: str
    topology: dict[str, str]

    @property
    def path(self) -> str:
        return f"/dispatchers/{self.id}"

    def headers(self) -> dict[str, str]:
        return {"X-DISPATCHER-ID": self.id, "X-DISPATCHER-SECRET-KEY": self.secret}

    def get(
        self, path: str, headers: Mapping[str, str] | None = None, params: Any = None
    ) -> httpx.Response:
        h = self.headers() if headers is None else dict(headers)
        return self.server.http.get(f"{CONTRACT}{path}", headers=h, params=params)

    def page(self, after: str) -> httpx.Response:
        return self.get("/tasks", params={"after": after})

    def admin(
        self,
        method: str,
        path: str = "",
        body: Any = None,
        expect: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        return self.server.admin(method, f"{self.path}{path}", body, expect, params)

    def put_task(self, task_id: str | None = None, **body: Any) -> dict[str, Any]:
        task_id = task_id or f"task-{uuid.uuid4().hex[:12]}"
        body.setdefault("tenant_id", "tenant-a")
        body.setdefault("tenant_key", "tenant-a")
        out: dict[str, Any] = self.admin("PUT", f"/tasks/{task_id}", body)
        return out

    def set_status(self, task_id: str, status: str, **body: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.admin(
            "POST", f"/tasks/{task_id}/status", {"status": status, **body}
        )
        return out

    def delete(self) -> None:
        self.server.admin("DELETE", self.path)


def stop_applied(
    d: Dispatcher, task_id: str, event_id: str | None = None, tenant: str = "tenant-a"
) -> dict[str, Any]:
    """The D's ``stopped/applied`` receipt for ``task_id`` (command-next.control_result)."""
    return {
        "schema_version": "command-next.v0.1-proposal",
        "event_id": event_id or f"ev-{uuid.uuid4().hex}",
        "event_type": "command.result",
        "dispatcher_id": d.id,
        "tenant_id": tenant,
        "tenant_key": tenant,
        "trace_id": "trace-test",
        "occurred_at": "2026-09-21T00:00:01Z",
        "aggregate_type": "task",
        "aggregate_id": task_id,
        "aggregate_version": 3,
        "payload": {
            "command_type": "task.control",
            "task_id": task_id,
            "action": "stop",
            "status": "applied",
            "reason_code": "applied",
            "task_state": "stopped",
        },
    }
