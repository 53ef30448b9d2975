"""Dispatcher demo: mock SaaS + the D + a simulated cell + S3, one small campaign.

Run by ``make demo`` (scripts/demo.py) against the local RabbitMQ and S3 of
``scripts/services`` (addresses from AGENTCALL_AMQP_URL and AGENTCALL_S3_*). It starts
``mocksaas serve``, ``cell serve --mode sim`` (time-scaled, examples/cell-demo-script.json)
and ``dispatcher run``, creates a dispatcher with its SIP snapshot, tenant quotas and
three tasks, dispatches about 60 calls with mixed outcomes plus two commands the D must
reject, shows live progress, prints a summary table and where the recordings are, then
stops every process. Exit status 0 only if every check passed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import httpx
from dispatcher_demo_report import check, recording, summarize

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SCRIPT = ROOT / "examples" / "cell-demo-script.json"
TOTAL_BUDGET_S = 60.0  # the whole demo, start to stop
ENV = os.environ.get
AMQP_URL = ENV("AGENTCALL_AMQP_URL", "amqp://agentcall:agentcall@127.0.0.1:5672/")
S3 = {
    "endpoint": ENV("AGENTCALL_S3_ENDPOINT", "http://127.0.0.1:8333"),
    "access_key": ENV("AGENTCALL_S3_ACCESS_KEY", "agentcall"),
    "secret_key": ENV("AGENTCALL_S3_SECRET_KEY", "agentcall-secret-key"),
    "bucket": ENV("AGENTCALL_S3_BUCKET", "recordings"),
    "region": ENV("AGENTCALL_S3_REGION", "us-east-1"),
}
# Callee groups of the cell script → the outcome the call must have.
GROUPS = {
    "1500000": "answered",  # interested: transcript, recording
    "1500001": "answered",  # opts out: opt_out=true, recording
    "1500002": "no_answer",
    "1500003": "busy",
    "1500004": "rejected",
    "1500005": "failed",
}
OPT_OUT = "1500001"
# task → (tenant, agent mode, how many calls per group in GROUPS order)
TASKS = {
    "task-sales": ("tenant-a", "full_ai", (8, 4, 4, 2, 1, 1)),
    "task-renewals": ("tenant-a", "full_ai", (6, 3, 5, 3, 2, 1)),
    "task-survey": ("tenant-b", "asr_only", (6, 3, 4, 3, 2, 2)),
}
NOT_ALLOWED = "15999999999"
EXPIRED = "15000009999"


class DemoError(Exception):
    """Something in the demo went wrong; the message says what."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise DemoError(f"timed out after {timeout:.0f} s waiting for {what}")


class Process:
    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str]) -> None:
        self.name, self.log = name, log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)

    def alive(self) -> bool:
        if self.proc.poll() is None:
            return True
        raise DemoError(f"{self.name} exited with {self.proc.returncode}; see {self.log}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def healthy(process: Process, url: str) -> Callable[[], bool]:
    return lambda: process.alive() and httpx.get(url, timeout=2).status_code == 200


def check_services() -> Any:
    parts = urlsplit(AMQP_URL)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5672), 3).close()
    except OSError as exc:
        raise DemoError(
            f"RabbitMQ at {parts.hostname}:{parts.port} is not reachable: {exc}"
        ) from None
    s3 = boto3.client(
        "s3",
        endpoint_url=S3["endpoint"],
        aws_access_key_id=S3["access_key"],
        aws_secret_access_key=S3["secret_key"],
        region_name=S3["region"],
    )
    try:
        s3.head_bucket(Bucket=S3["bucket"])
    except Exception as exc:  # noqa: BLE001 - any failure: the demo cannot record
        raise DemoError(
            f"S3 bucket {S3['bucket']} at {S3['endpoint']} is not usable: {exc}"
        ) from None
    return s3


class Demo:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.procs: list[Process] = []
        self.prefix = f"demo-{uuid.uuid4().hex[:8]}"
        self.expected: dict[str, str] = {}  # callee → outcome
        self.rejections: dict[str, str] = {}  # command_id → reason the D must give
        self.admin: httpx.Client | None = None
        self.d = ""
        self.opt_out_prefix = OPT_OUT

    # --- processes ---------------------------------------------------------------------
    def start_mocksaas(self) -> None:
        port = free_port()
        argv = [str(BIN / "mocksaas"), "serve", "--http-port", str(port)]
        argv += ["--amqp-url", AMQP_URL, "--db", str(self.work / "mocksaas.db")]
        proc = Process(
            "mocksaas",
            argv + ["--log-format", "json"],
            self.work / "mocksaas.log",
            dict(os.environ),
        )
        self.procs.append(proc)
        self.saas_url = f"http://127.0.0.1:{port}"
        wait_until(healthy(proc, f"{self.saas_url}/healthz"), 30, "mocksaas")
        self.admin = httpx.Client(base_url=f"{self.saas_url}/admin/v1", timeout=30)

    def start_cell(self) -> None:
        port = free_port()
        argv = [str(BIN / "cell"), "serve", "--mode", "sim", "--script", str(SCRIPT)]
        argv += ["--http-port", str(port), "--data-dir", str(self.work / "cell")]
        argv += ["--cell-id", "cell-mock"]  # the cell_id of mocksaas's SIP artifact
        proc = Process(
            "cell", argv + ["--log-format", "json"], self.work / "cell.log", dict(os.environ)
        )
        self.procs.append(proc)
        self.cell_url = f"http://127.0.0.1:{port}"
        wait_until(healthy(proc, f"{self.cell_url}/healthz"), 30, "the cell")

    def start_dispatcher(self, secret: str) -> None:
        self.http_port = free_port()
        env = dict(os.environ) | {
            "DISPATCHER_ID": self.d,
            "DISPATCHER_SECRET_KEY": secret,
            "DISPATCHER_SAAS_URL": self.saas_url,
            "DISPATCHER_AMQP_URL": AMQP_URL,
            "DISPATCHER_STATE_DB": str(self.work / "dispatcher.sqlite"),
            "DISPATCHER_CELL_URL": self.cell_url,
            "DISPATCHER_HTTP_PORT": str(self.http_port),
            "DISPATCHER_DISCOVERY_INTERVAL_S": "1",
            "DISPATCHER_OUTBOX_RETRY_S": "0.5",
            "DISPATCHER_GRACE_S": "3",
            "DISPATCHER_LOG_FORMAT": "json",
            "DISPATCHER_S3_ENDPOINT": S3["endpoint"],
            "DISPATCHER_S3_BUCKET": S3["bucket"],
            "DISPATCHER_S3_REGION": S3["region"],
            "DISPATCHER_S3_ACCESS_KEY": S3["access_key"],
            "DISPATCHER_S3_SECRET_KEY": S3["secret_key"],
            "DISPATCHER_S3_KEY_PREFIX": self.prefix,
            "DISPATCHER_RECORDING_DEADLINE_S": "30",
            "DISPATCHER_RECORDING_SWEEP_S": "0.5",
        }
        init = [str(BIN / "dispatcher"), "init-state"]  # the first start creates the state file
        subprocess.run(init, env=env, check=True, capture_output=True)
        proc = Process(
            "dispatcher", [str(BIN / "dispatcher"), "run"], self.work / "dispatcher.log", env
        )
        self.procs.append(proc)
        status = f"http://127.0.0.1:{self.http_port}/status"
        wait_until(
            lambda: proc.alive() and httpx.get(status, timeout=2).json()["admission"]["open"],
            40,
            "the dispatcher to open admission",
        )

    def stop(self) -> list[str]:
        """Stop the D, drop its queues at the mock SaaS, stop the rest; report bad exits."""
        problems = []
        for proc in reversed(self.procs):  # dispatcher, cell, mocksaas
            if proc.name == "mocksaas" and self.admin is not None and self.d:
                try:  # the dispatcher's queues go away with it; the recordings stay in S3
                    self.admin.delete(f"/dispatchers/{self.d}")
                except httpx.HTTPError:
                    pass
            code = proc.stop()
            if code != 0:
                problems.append(f"{proc.name} exited with {code} when stopped; see {proc.log}")
        return problems

    # --- the SaaS side ---------------------------------------------------------------------
    def call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        assert self.admin is not None
        response = self.admin.request(method, path, json=body, params=params or None)
        if response.status_code >= 400:
            raise DemoError(f"mocksaas {method} {path}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    def setup(self) -> str:
        created = self.call("POST", "/dispatchers", {})
        self.d = created["dispatcher_id"]
        callees = self.campaign_callees()
        base = f"/dispatchers/{self.d}"
        allowed = sorted([*callees, EXPIRED])
        sip = {"allowed_targets": allowed, "max_concurrent_calls": 100}
        snapshot = self.call("PUT", f"{base}/sip", sip)
        # The cell carries the approved snapshot; the D checks it before admitting (D-NOTE-9).
        httpx.put(f"{self.cell_url}/v1/config", json=snapshot, timeout=10).raise_for_status()
        for tenant in ("tenant-a", "tenant-b"):
            self.call(
                "PUT",
                f"{base}/tenants/{tenant}/quota",
                {"max_concurrent_calls": 60, "tenant_key": tenant},
            )
        for task_id, (tenant, mode, _) in TASKS.items():
            spec = {
                "tenant_id": tenant,
                "tenant_key": tenant,
                "mode": mode,
                "max_concurrent_calls": 40,
            }
            self.call("PUT", f"{base}/tasks/{task_id}", spec)
        return str(created["secret"])

    def campaign_callees(self) -> dict[str, str]:
        plan: dict[str, str] = {}
        for t, (_, _, counts) in enumerate(TASKS.values()):
            for (prefix, outcome), count in zip(GROUPS.items(), counts, strict=True):
                for n in range(count):
                    plan[f"{prefix}{t}{n:03d}"] = outcome
        self.expected = plan
        return plan

    def dispatch(self) -> int:
        base = f"/dispatchers/{self.d}/tasks"
        for t, task_id in enumerate(TASKS):
            callees = [c for c in self.expected if c[7] == str(t)]
            self.call("POST", f"{base}/{task_id}/calls", {"callees": callees})
        late = self.call(
            "POST", f"{base}/task-sales/calls", {"callees": [EXPIRED], "not_after_s": -5}
        )
        self.rejections[late["command_ids"][0]] = "command_expired"
        barred = self.call("POST", f"{base}/task-sales/calls", {"callees": [NOT_ALLOWED]})
        self.rejections[barred["command_ids"][0]] = "target_not_allowed"
        return len(self.expected) + len(self.rejections)

    def results(self, event_type: str) -> list[dict[str, Any]]:
        """Distinct results (a republished event keeps its event_id: counted once)."""
        found = self.call(
            "GET", f"/dispatchers/{self.d}/results", event_type=event_type, limit=100000
        )
        return list({r["event_id"]: r for r in reversed(found["results"])}.values())

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(
            f"http://127.0.0.1:{self.http_port}/status", timeout=5
        ).json()
        return body

    # --- progress, checks, summary ---------------------------------------------------------
    def progress(self, total: int, started: float, budget_s: float) -> list[dict[str, Any]]:
        accepted = len(self.expected)
        tty = sys.stdout.isatty()
        last_print = 0.0
        while True:
            for proc in self.procs:
                proc.alive()
            commands, calls = self.results("command.result"), self.results("call.result")
            live = sum(
                v for k, v in self.status()["executions"].items() if k not in ("ended", "finalized")
            )
            uploaded = sum(1 for r in calls if recording(r)["status"] == "uploaded")
            line = (
                f"  {time.monotonic() - started:5.1f} s  commands answered {len(commands)}/{total}"
                f"  calls in progress {live:3d}  call.results {len(calls)}/{accepted}"
                f"  recordings uploaded {uploaded}"
            )
            if tty:
                print("\r" + line, end="", flush=True)
            elif time.monotonic() - last_print > 2:
                print(line, flush=True)
                last_print = time.monotonic()
            if len(commands) >= total and len(calls) >= accepted:
                print("\r" + line if tty else line, flush=True)
                return calls
            if time.monotonic() - started > budget_s:
                raise DemoError(f"the campaign did not finish in {budget_s:.0f} s: {line.strip()}")
            time.sleep(0.3)


def main() -> int:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="dispatcher-demo-"))
    demo = Demo(work)
    try:
        s3 = check_services()
        print(
            "Starting mocksaas, a simulated cell (time scale 0.02) and the dispatcher ...",
            flush=True,
        )
        demo.start_mocksaas()
        demo.start_cell()
        secret = demo.setup()
        demo.start_dispatcher(secret)
        ready = time.monotonic() - started
        print(f"dispatcher {demo.d}: 3 tasks, 2 tenants; ready after {ready:.1f} s")
        total = demo.dispatch()
        dial, reject = len(demo.expected), len(demo.rejections)
        print(f"Dispatched {total} call.execute ({dial} to dial, {reject} to be rejected)")
        budget = max(10.0, TOTAL_BUDGET_S - 5 - (time.monotonic() - started))
        calls = demo.progress(total, time.monotonic(), budget)
        commands = demo.results("command.result")
        summarize(demo, commands, calls, S3)
        problems = check(demo, commands, calls, s3)
    except DemoError as exc:
        print(f"\ndemo failed: {exc}\nlogs: {work}", file=sys.stderr)
        return 1
    finally:
        stopped = demo.stop()
    problems += stopped
    elapsed = time.monotonic() - started
    if elapsed > TOTAL_BUDGET_S:
        problems.append(f"the demo took {elapsed:.0f} s, more than {TOTAL_BUDGET_S:.0f} s")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    print(f"\nDone in {elapsed:.1f} s: {'OK' if not problems else 'FAILED'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
