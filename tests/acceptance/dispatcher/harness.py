"""Real processes for the Dispatcher's acceptance tests: mocksaas, a sim cell and the D.

Everything runs as a subprocess on loopback ports and talks over real HTTP / AMQP.
Intervals are short so the whole suite stays within its CI budget.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from tests.support.ports import free_port
from tests.support.services import amqp_url, s3_settings
from tests.support.waiting import wait_for

BIN = Path(sys.executable).parent
CELL_ID = "cell-mock"  # the cell_id of mocksaas's default SIP artifact
FAST = {
    "DISPATCHER_DISCOVERY_INTERVAL_S": "0.3",
    "DISPATCHER_DISCOVERY_ERROR_BACKOFF_S": "0.2",
    "DISPATCHER_CONFIG_TTL_S": "0.5",
    "DISPATCHER_QUOTA_TTL_S": "0.5",
    "DISPATCHER_OUTBOX_RETRY_S": "0.2",
    "DISPATCHER_LOG_FORMAT": "json",
    "DISPATCHER_GRACE_S": "3",
}


class Proc:
    """A subprocess with its output in a log file."""

    def __init__(self, argv: list[str], log: Path, env: Mapping[str, str] | None = None) -> None:
        self.argv = argv
        self.log = log
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class MockSaas:
    """``mocksaas serve`` with its admin API."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [
            str(BIN / "mocksaas"),
            "serve",
            "--http-port",
            str(self.port),
            "--amqp-url",
            amqp_url(),
            "--db",
            str(workdir / "mocksaas.db"),
            "--log-format",
            "json",
        ]
        self.proc = Proc(argv, workdir / "mocksaas.log")
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def start(self) -> MockSaas:
        self.proc.start()
        wait_for(self._healthy, 30, "mocksaas /healthz")
        return self

    def _healthy(self) -> bool:
        if not self.proc.alive:
            raise RuntimeError(f"mocksaas exited:\n{self.proc.text()[-3000:]}")
        try:
            return self.http.get("/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def admin(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        response = self.http.request(method, f"/admin/v1{path}", json=body, params=params or None)
        if response.status_code >= 400:
            raise AssertionError(f"{method} {path} -> {response.status_code}: {response.text}")
        return response.json() if response.content else None

    def close(self) -> None:
        self.proc.stop()
        self.http.close()


class Cell:
    """``cell serve --mode sim`` with a script."""

    def __init__(self, workdir: Path, script: Mapping[str, Any], extra: Sequence[str] = ()) -> None:
        """``extra``: more ``cell serve`` options."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = workdir / "cell"
        self.data.mkdir(parents=True, exist_ok=True)
        path = workdir / "script.json"
        path.write_text(json.dumps(script))
        argv = [
            str(BIN / "cell"),
            "serve",
            "--mode",
            "sim",
            "--script",
            str(path),
            "--http-port",
            str(self.port),
            "--data-dir",
            str(self.data),
            "--log-format",
            "json",
            "--max-calls",
            "20000",
            "--cell-id",
            CELL_ID,
            *extra,
        ]
        self.proc = Proc(argv, workdir / "cell.log")

    def start(self) -> Cell:
        self.proc.start()
        wait_for(self._healthy, 30, "cell /healthz")
        return self

    def _healthy(self) -> bool:
        if not self.proc.alive:
            raise RuntimeError(f"cell exited:\n{self.proc.text()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def calls(self) -> list[dict[str, Any]]:
        body: dict[str, Any] = httpx.get(f"{self.url}/v1/calls", timeout=10).json()
        return list(body["calls"])

    def carry(self, snapshot: Mapping[str, Any]) -> None:
        """Load an approved SIP snapshot into the cell, as the deploy tool does (D-NOTE-9)."""
        response = httpx.put(f"{self.url}/v1/config", json=dict(snapshot), timeout=10)
        response.raise_for_status()


class Scenario:
    """One fresh dispatcher identity in mocksaas, plus its D process when started."""

    def __init__(self, saas: MockSaas, cell: Cell, workdir: Path) -> None:
        self.saas = saas
        self.cell = cell
        self.workdir = workdir
        created = saas.admin("POST", "/dispatchers", {})
        self.d: str = created["dispatcher_id"]
        self.secret: str = created["secret"]
        self.http_port = free_port()
        self.proc: Proc | None = None
        self.status_url = f"http://127.0.0.1:{self.http_port}/status"

    # --- SaaS side ---------------------------------------------------------------
    def sip(self, carry: bool = True, **builder: Any) -> Any:
        """Approve a SIP snapshot; ``carry``: also load it into the cell (D-NOTE-9)."""
        snapshot = self.saas.admin("PUT", f"/dispatchers/{self.d}/sip", builder)
        if carry:
            self.cell.carry(snapshot)
        return snapshot

    def task(self, task_id: str, tenant: str = "tenant-1", **spec: Any) -> Any:
        body = {"tenant_id": tenant, "tenant_key": f"key-{tenant}", "ring_timeout_ms": 1000}
        return self.saas.admin("PUT", f"/dispatchers/{self.d}/tasks/{task_id}", body | spec)

    def update_task(self, task_id: str, **spec: Any) -> Any:
        return self.saas.admin("PUT", f"/dispatchers/{self.d}/tasks/{task_id}", spec)

    def quota(self, tenant: str = "tenant-1", **body: Any) -> Any:
        body = body or {"max_concurrent_calls": 100}
        return self.saas.admin("PUT", f"/dispatchers/{self.d}/tenants/{tenant}/quota", body)

    def calls(self, task_id: str, **body: Any) -> list[str]:
        out = self.saas.admin("POST", f"/dispatchers/{self.d}/tasks/{task_id}/calls", body)
        return list(out["command_ids"])

    def raw(self, task_id: str, text: str) -> Any:
        body = {"target": "task", "task_id": task_id, "body": text}
        return self.saas.admin("POST", f"/dispatchers/{self.d}/faults/raw", body)

    def fault(self, scope: str, **body: Any) -> Any:
        return self.saas.admin("POST", f"/dispatchers/{self.d}/faults/{scope}", body)

    def clear_faults(self) -> Any:
        return self.saas.admin("DELETE", f"/dispatchers/{self.d}/faults")

    def page_size(self, size: int) -> Any:
        return self.saas.admin("PATCH", f"/dispatchers/{self.d}", {"discovery_page_size": size})

    def head(self) -> int:
        return int(self.saas.admin("GET", f"/dispatchers/{self.d}/events/head")["head"])

    def results(self, **filters: Any) -> list[dict[str, Any]]:
        found = self.saas.admin("GET", f"/dispatchers/{self.d}/results", limit=10000, **filters)
        return list(found["results"])

    def summary(self) -> dict[str, Any]:
        return dict(self.saas.admin("GET", f"/dispatchers/{self.d}/results/summary"))

    def wait_results(
        self, count: int, timeout: float = 20.0, **filters: Any
    ) -> list[dict[str, Any]]:
        def enough() -> list[dict[str, Any]] | None:
            found = self.results(**filters)
            return found if len(found) >= count else None

        return list(wait_for(enough, timeout, f"{count} results {filters}"))

    def wait_distinct_results(
        self, count: int, timeout: float = 20.0, **filters: Any
    ) -> list[dict[str, Any]]:
        """The first delivery of each event_id, once ``count`` distinct ones arrived (a D
        killed between a confirm and its delivered mark republishes the same event)."""

        def enough() -> list[dict[str, Any]] | None:
            first: dict[str, dict[str, Any]] = {}
            for result in self.results(**filters):
                first.setdefault(result["event_id"], result)
            return list(first.values()) if len(first) >= count else None

        return list(wait_for(enough, timeout, f"{count} distinct results {filters}"))

    def republished_differently(self) -> list[str]:
        """The event_ids delivered more than once with different bodies (D-MQ-4: a
        republish carries the same event_id and body; redelivery itself is allowed)."""
        bodies: dict[str, set[str]] = {}
        for result in self.results():
            text = (
                json.dumps(result["body"], sort_keys=True)
                if result["body"] is not None
                else str(result["raw"])
            )
            bodies.setdefault(result["event_id"], set()).add(text)
        return sorted(event for event, seen in bodies.items() if len(seen) > 1)

    # --- the D -------------------------------------------------------------------
    def env(self, **overrides: str) -> dict[str, str]:
        return {
            "DISPATCHER_ID": self.d,
            "DISPATCHER_SECRET_KEY": self.secret,
            "DISPATCHER_SAAS_URL": self.saas.url,
            "DISPATCHER_AMQP_URL": amqp_url(),
            "DISPATCHER_STATE_DB": str(self.workdir / f"d-{self.d[:8]}.sqlite"),
            "DISPATCHER_CELL_URL": self.cell.url,
            "DISPATCHER_HTTP_PORT": str(self.http_port),
            **FAST,
            **overrides,
        }

    def start(self, wait_open: bool = True, **overrides: str) -> Scenario:
        """Start ``dispatcher run``; the first start of the scenario creates its state file
        with ``dispatcher init-state`` as an operator does (a restart never does)."""
        log = self.workdir / f"d-{self.d[:8]}.log"
        env = self.env(**overrides)
        if self.proc is None and not Path(env["DISPATCHER_STATE_DB"]).exists():
            self.init_state(env)
        self.proc = Proc([str(BIN / "dispatcher"), "run"], log, env).start()
        wait_for(self._listening, 40, "dispatcher /status")
        if wait_open:
            wait_for(lambda: self.status()["admission"]["open"], 20, "admission open")
        return self

    def init_state(self, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        """``dispatcher init-state [args]``; fails the test unless it succeeds."""
        done = self.init_state_run(env, *args)
        assert done.returncode == 0, done.stderr
        return done

    def init_state_run(
        self, env: Mapping[str, str], *args: str
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(BIN / "dispatcher"), "init-state", *args]
        full = {**os.environ, **env}
        return subprocess.run(argv, env=full, capture_output=True, text=True, timeout=60)

    def _listening(self) -> bool:
        assert self.proc is not None
        if not self.proc.alive:
            raise RuntimeError(f"dispatcher exited:\n{self.proc.text()[-4000:]}")
        try:
            return httpx.get(self.status_url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(self.status_url, timeout=5).json()
        return body

    def task_row(self, task_id: str) -> dict[str, Any] | None:
        return next((t for t in self.status()["tasks"] if t["task_id"] == task_id), None)

    def stop(self) -> int:
        assert self.proc is not None
        return self.proc.stop()

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()

    def log(self) -> str:
        return self.proc.text() if self.proc else ""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def execute_body(
    d: str,
    task_id: str,
    callee: str,
    *,
    tenant: str = "tenant-1",
    tenant_key: str | None = None,
    command_id: str | None = None,
    not_after_s: int = 600,
) -> str:
    """A schema-valid call.execute, for publishing crafted envelopes through faults/raw."""
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    body = {
        "schema_version": "command-next.v0.1-proposal",
        "dispatcher_id": d,
        "tenant_id": tenant,
        "tenant_key": tenant_key or f"key-{tenant}",
        "trace_id": "trace-it",
        "issued_at": now.isoformat(timespec="seconds"),
        "command_id": command_id or unique("cmd"),
        "command_type": "call.execute",
        "not_after": (now + timedelta(seconds=not_after_s)).isoformat(timespec="seconds"),
        "payload": {"task_id": task_id, "callee": callee},
    }
    return json.dumps(body)


def s3_env(
    prefix: str, deadline_s: str = "20", sweep_s: str = "0.2", **overrides: str
) -> dict[str, str]:
    """DISPATCHER_* settings pointing the D's recordings at the local S3 under ``prefix``."""
    cfg = s3_settings()
    return {
        "DISPATCHER_S3_ENDPOINT": cfg.endpoint,
        "DISPATCHER_S3_BUCKET": cfg.bucket,
        "DISPATCHER_S3_REGION": cfg.region,
        "DISPATCHER_S3_ACCESS_KEY": cfg.access_key,
        "DISPATCHER_S3_SECRET_KEY": cfg.secret_key,
        "DISPATCHER_S3_KEY_PREFIX": prefix,
        "DISPATCHER_RECORDING_DEADLINE_S": deadline_s,
        "DISPATCHER_RECORDING_SWEEP_S": sweep_s,
        **overrides,
    }
