"""The real Orbit server under test: `python -m agentcall.orbit serve` on a loopback port, and
per-test tenants (namespace + queue + tokens) created through the store."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.support.ports import free_port

FAST = {
    "ORBIT_LEASE_TTL_MS": "1500",
    "ORBIT_RECONNECT_GRACE_MS": "1500",
    "ORBIT_SWEEP_INTERVAL_MS": "50",
    "ORBIT_DISPATCH_TICK_MS": "100",
}
"""Short lease settings for the worker suites (`execution_server`)."""


def serve_command(db_url: str, port: int, *extra: str) -> list[str]:
    """The argv of `orbit serve` on ``db_url`` and loopback ``port``, JSON logs."""
    return [
        sys.executable,
        "-m",
        "agentcall.orbit",
        "serve",
        "--database",
        db_url,
        "--port",
        str(port),
        "--log-format",
        "json",
        *extra,
    ]


@contextlib.contextmanager
def serving(
    db_url: str, log_path: Path, *extra: str, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """Start `orbit serve` and yield its base URL once /healthz answers; stop it after."""
    port = free_port()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            serve_command(db_url, port, *extra),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=os.environ if env is None else env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, process, log_path)
            yield base
        finally:
            stop(process)


def running_server(db_url: str, log_path: Path, *extra: str) -> AbstractContextManager[str]:
    """`orbit serve` with its default settings and ``extra`` options; yields the base URL."""
    return serving(db_url, log_path, *extra)


def execution_server(db_url: str, log_path: Path, **env: str) -> AbstractContextManager[str]:
    """`orbit serve` with the FAST lease settings (overridable); yields the base URL."""
    return serving(db_url, log_path, "--no-access-log", env={**os.environ, **FAST, **env})


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, SIGKILL after 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_healthy(base: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Return once ``base``/healthz answers 200; fail with the log's tail if it never does."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"orbit serve exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"orbit serve did not become healthy: {log_path.read_text()[-2000:]}")


@dataclass
class Tenant:
    """A namespace with one queue and a full-permission token, plus helpers for more."""

    db: Database
    base_url: str
    namespace_id: str
    queue_id: str
    token: str
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    async def create(cls, db: Database, base_url: str) -> Tenant:
        made = await Admin(db).init(f"t-{secrets.token_hex(8)}", "main")
        return cls(db, base_url, made.namespace_id, made.queue_id, made.token)

    async def queue(self, name: str | None = None) -> str:
        return await Admin(self.db).create_queue(self.namespace_id, name or secrets.token_hex(4))

    async def token_for(
        self,
        permissions: list[Permission],
        queue_ids: list[str] | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[str, str]:
        issued = await Admin(self.db).create_token(
            self.namespace_id, permissions, queue_ids or [self.queue_id], expires_at
        )
        return issued.token_id, issued.token

    def headers(self, token: str | None = None, key: str | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        if key is not None:
            headers["Idempotency-Key"] = key
            headers["Content-Type"] = "application/json"
        return headers

    def body(self, **changes: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "queue_id": self.queue_id,
            "handler": "file.convert",
            "handler_version": "v1",
            "payload_version": "v1",
            "payload": {"source_ref": "objects/input.txt", "sequence": 9007199254740993},
        }
        base.update(changes)
        return {k: v for k, v in base.items() if v is not DROP}


DROP = object()
