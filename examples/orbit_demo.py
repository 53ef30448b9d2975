"""Orbit demo (`make demo`): the task service on SQLite with two example workers.

Starts `orbit serve` on a fresh SQLite file, two `orbit worker` processes running
examples/orbit_workers.py, submits 100 tasks with mixed outcomes, kills the worker that runs a
RECONCILE_ONLY payment (which must then wait for review, never re-run), starts a replacement
worker, shows a live progress line and ends with a table of states.

    .venv/bin/python examples/orbit_demo.py [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
STATES = ("WAITING", "LEASED", "RUNNING", "SUCCEEDED", "FAILED", "NEEDS_REVIEW", "CANCELLED")
FAST = {
    "ORBIT_LEASE_TTL_MS": "3000",
    "ORBIT_RECONNECT_GRACE_MS": "1000",
    "ORBIT_SWEEP_INTERVAL_MS": "100",
}


def mix() -> list[tuple[str, dict[str, Any]]]:
    """100 tasks: (what, submit fields)."""
    idem = {"recovery_safety": "IDEMPOTENT", "retry": {"max_attempts": 3, "initial_delay_ms": 1}}
    tasks: list[tuple[str, dict[str, Any]]] = []
    payment = {"handler": "demo.charge", "payload": {"sleep_ms": 600_000, "amount": 42}}
    tasks.append(("payment, worker killed", payment))
    for n in range(70):
        handler = "demo.sync" if n % 5 == 0 else "demo.work"
        payload = {"sleep_ms": 50 + 37 * (n % 9), "echo": n}
        tasks.append(("succeeds", {"handler": handler, "payload": payload}))
    for n in range(15):
        payload = {"sleep_ms": 80, "outcome": "retryable", "succeed_from_attempt": 2, "echo": n}
        tasks.append(("retries, then succeeds", {**idem, "payload": payload}))
    for _ in range(5):
        tasks.append(("fails for good", {"payload": {"outcome": "fatal"}}))
    for _ in range(4):
        tasks.append(("asks for review", {"payload": {"outcome": "review", "evidence": True}}))
    for _ in range(5):
        tasks.append(("retryable until budget ends", {**idem, "payload": {"outcome": "retryable"}}))
    return tasks


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Processes:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}.log").open("wb")
        child = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
        )
        self.children.append(child)
        return child

    def worker(self, name: str, base: str, token: str, queue_id: str) -> subprocess.Popen[bytes]:
        args = [
            "-m",
            "agentcall.orbit.sdk.worker",
            "--app",
            "examples.orbit_workers:registry",
            "--queue",
            queue_id,
            "--concurrency",
            "8",
            "--name",
            name,
            "--log-format",
            "json",
        ]
        return self.start(name, args, {"ORBIT_URL": base, "ORBIT_TOKEN": token})

    def stop(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.terminate()
        for child in self.children:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()


async def wait_ready(client: httpx.AsyncClient, tmp: Path, names: list[str]) -> None:
    for _ in range(600):
        try:
            if (await client.get("/healthz")).status_code == 200 and all(
                '"connected"' in (tmp / f"{n}.log").read_text() for n in names
            ):
                return
        except (httpx.TransportError, FileNotFoundError):
            pass
        await asyncio.sleep(0.05)
    raise SystemExit("orbit demo: the server or its workers did not start; see the logs")


async def counts(client: httpx.AsyncClient, queue_id: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for state in STATES:
        cursor: str | None = None
        while True:
            params = {"queue_id": queue_id, "state": state, "limit": "100"}
            if cursor:
                params["cursor"] = cursor
            data = (await client.get("/v1/tasks", params=params)).json()["data"]
            found[state] += len(data["items"])
            cursor = data.get("next_cursor")
            if not cursor:
                break
    return found


def progress(found: Counter[str], started: float, tty: bool) -> None:
    parts = "  ".join(f"{s} {found[s]:3d}" for s in STATES if s != "CANCELLED")
    line = f"  {time.monotonic() - started:5.1f}s  {parts}"
    print(f"\r{line}" if tty else line, end="" if tty else "\n", flush=True)


async def run(tmp: Path) -> int:
    url = f"sqlite+aiosqlite:///{tmp / 'orbit-demo.db'}"
    db = Database.open(url)
    await upgrade(db)
    made = await Admin(db).init("demo", "jobs")
    await db.close()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    procs = Processes(tmp)
    procs.start(
        "server",
        [
            "-m",
            "agentcall.orbit",
            "serve",
            "--database",
            url,
            "--port",
            str(port),
            "--no-access-log",
            "--log-format",
            "json",
        ],
        FAST,
    )
    workers = {n: procs.worker(n, base, made.token, made.queue_id) for n in ("alpha", "beta")}
    headers = {"Authorization": f"Bearer {made.token}"}
    try:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
            await wait_ready(client, tmp, list(workers))
            print(f"server {base} (SQLite {tmp / 'orbit-demo.db'}), workers alpha and beta")
            print(f"console {base}/ui (while the demo runs): sign in with the token {made.token}")
            planned = mix()
            kinds = await submit_all(client, made.queue_id, planned[:1])
            print("submitted the RECONCILE_ONLY payment")
            await kill_payment_worker(client, kinds, workers, procs, base, made)
            watcher = asyncio.create_task(watch(client, made.queue_id, len(planned)))
            kinds.update(await submit_all(client, made.queue_id, planned[1:]))
            print(f"submitted {len(kinds) - 1} more tasks")
            await watcher
            code = await report(client, kinds)
            await hold_console(base, made.token)
            return code
    finally:
        procs.stop()


async def hold_console(base: str, token: str) -> None:
    """On a terminal, keep the server up for the console until Enter is pressed."""
    if not sys.stdin.isatty():
        return
    print(f"\nconsole {base}/ui is up (token {token}); press Enter to stop the demo")
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def watch(client: httpx.AsyncClient, queue_id: str, total: int) -> None:
    """The live progress line (a line every second when not on a terminal)."""
    started, last = time.monotonic(), 0.0
    tty = sys.stdout.isatty()
    while True:
        found = await counts(client, queue_id)
        done = sum(found[s] for s in ("SUCCEEDED", "FAILED", "NEEDS_REVIEW")) == total
        if tty or done or time.monotonic() - last >= 1:
            progress(found, started, tty)
            last = time.monotonic()
        if done:
            print()
            return
        await asyncio.sleep(0.2)


async def submit_all(
    client: httpx.AsyncClient, queue_id: str, planned: list[tuple[str, dict[str, Any]]]
) -> dict[str, str]:
    kinds: dict[str, str] = {}
    pending = iter(planned)

    async def submitter() -> None:
        for what, fields in pending:
            body = {
                "queue_id": queue_id,
                "handler": "demo.work",
                "handler_version": "v1",
                "payload_version": "v1",
                **fields,
            }
            key = {"Idempotency-Key": secrets.token_hex(8)}
            response = await client.post("/v1/tasks", json=body, headers=key)
            response.raise_for_status()
            kinds[response.json()["data"]["task"]["id"]] = what

    await asyncio.gather(*(submitter() for _ in range(8)))
    return kinds


async def kill_payment_worker(
    client: httpx.AsyncClient,
    kinds: dict[str, str],
    workers: dict[str, Any],
    procs: Processes,
    base: str,
    made: Any,
) -> None:
    payment = next(t for t, what in kinds.items() if what == "payment, worker killed")
    for _ in range(600):
        items = (await client.get(f"/v1/tasks/{payment}/attempts")).json()["data"]["items"]
        if items and items[-1]["state"] == "RUNNING" and items[-1]["evidence_count"]:
            break
        await asyncio.sleep(0.05)
    victim = items[-1]["worker"]["name"]
    workers[victim].send_signal(signal.SIGKILL)
    print(f"killed worker {victim} (SIGKILL) while it was running the RECONCILE_ONLY payment")
    workers["gamma"] = procs.worker("gamma", base, made.token, made.queue_id)
    print("started worker gamma")


async def report(client: httpx.AsyncClient, kinds: dict[str, str]) -> int:
    table: Counter[tuple[str, str, int]] = Counter()
    payment_state = ""
    for task_id, what in kinds.items():
        task = (await client.get(f"/v1/tasks/{task_id}")).json()["data"]
        code = task.get("error", {}).get("code", "")
        table[(what, f"{task['state']} {code}".strip(), task["attempt_count"])] += 1
        if what == "payment, worker killed":
            payment_state = task["state"]
    print(f"\n{'tasks':>5}  {'what was asked':30} {'final state':36} attempts")
    for (what, state, attempts), number in sorted(table.items()):
        print(f"{number:5d}  {what:30} {state:36} {attempts}")
    by_state: Counter[str] = Counter()
    for (_, state, _), number in table.items():
        by_state[state.split()[0]] += number
    print("\n" + "  ".join(f"{s}: {by_state[s]}" for s in STATES if by_state[s]))
    ok = payment_state == "NEEDS_REVIEW" and by_state["SUCCEEDED"] == 85
    print("payment: NEEDS_REVIEW, never re-run blindly" if ok else "unexpected outcome")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="orbit-demo-"))
    try:
        return asyncio.run(run(tmp))
    finally:
        if args.keep:
            print(f"logs and database kept in {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
