"""Benchmark: call.execute → command.result + call.result through a real Dispatcher.

Starts ``mocksaas``, a sim ``cell`` whose callees never answer (calls end at once) and a
``dispatcher run`` as subprocesses against the local RabbitMQ, publishes N call.execute
(default 5,000) across 16 running tasks the way the SaaS does (persistent, mandatory,
confirmed), and measures until every command.result and call.result has been confirmed
into the SaaS result queue. Baseline, same run and same broker: a bare aio-pika relay that
consumes the same N messages from 16 durable queues (prefetch 256 each), and
for each one republishes two persistent, mandatory messages on one publisher-confirm
channel and ACKs it once both are confirmed; confirms are pipelined (every prefetched
message is in flight at once), not one round trip at a time. Its output queue is not
consumed; mocksaas (which consumes, checks and stores the D's results) runs at nice 19
so that the SaaS side does not take the D's CPU either. The relay and the D run ``--runs``
times (default 3) in pairs, in an order reversed every other pair (relay, D; D, relay; ...),
each D run with a fresh D identity, so that a change of the machine's load falls on both.
Prints each pair, then the median commands/s of both, the ratio of the medians D/baseline
(target: >= 0.8), the admission-decision p50/p99, and the CPU per command of every process
in each phase (user + system from /proc, so it does not depend on the machine's load): the
D, the cell, mocksaas, RabbitMQ (``beam.smp``) and this process (publisher; in the baseline
phase also the relay); the detail lines are those of the D run with the median rate.

Then (unless ``--no-paced``) a fresh D is offered ``--load`` (default 50 %) of the median
rate the full-load runs reached, steadily for ``--seconds`` (default 20), and the D's
delivery -> decision commit p50/p99 at that load is printed (bench/dispatcher_paced.py;
target: p99 < 50 ms). Under bench/run_all.py both figures are recorded (bench/figures.py).

With ``--console`` the D runs ``2 x --rounds`` times (a fresh D identity each time), half
of them with the console open and refreshing (``/ui`` and its panel fragments every refresh
interval, bench/dispatcher_console_viewer.py), interleaved (off, on, on, off, ...), and prints
the median rate of each, both ratios to the baseline and the ratio with/without (target:
within 10 %).

    python bench/dispatcher_commands.py [--n 5000] [--tasks 16] [--runs 3] [--keep]
    python bench/dispatcher_commands.py [--load 0.5] [--seconds 20] [--rate R] [--no-paced]
    python bench/dispatcher_commands.py --console [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aio_pika
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.dispatcher_console_viewer import Viewed, console_open  # noqa: E402
from bench.dispatcher_paced import Paced, line, publish_paced  # noqa: E402
from bench.figures import Figure, record  # noqa: E402

BIN = Path(sys.executable).parent
AMQP = os.environ.get("AGENTCALL_AMQP_URL", "amqp://agentcall:agentcall@127.0.0.1:5672/")
# The SaaS is not the system under test: its result consumer (schema check + one SQLite
# commit per result) would otherwise take a core of the 2-core machine from the D while
# the baseline's output is never consumed. It runs at the lowest CPU priority instead.
MOCKSAAS_NICE = 19
NAME = "dispatcher_commands"
RATIO_TARGET = 0.8  # median D rate / median bare relay rate
P99_TARGET_MS = 50.0  # delivery -> decision commit at --load of the maximum rate
SCRIPT = {
    "version": 1,
    "rules": [],
    "time_scale": 0.01,
    "default": {"outcome": "no_answer", "ring_ms": 1, "recording": False},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), seconds; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def broker_pid() -> int | None:
    found = subprocess.run(
        ["pgrep", "-o", "-x", "beam.smp"], capture_output=True, text=True, check=False
    ).stdout.split()
    return int(found[0]) if found else None


class CpuMeter:
    """CPU seconds used by named processes (and this one) since construction."""

    def __init__(self, pids: dict[str, int | None]) -> None:
        self._pids = {name: pid for name, pid in pids.items() if pid is not None}
        self._start = self._now()

    def _now(self) -> dict[str, float]:
        now = {name: cpu_seconds(pid) for name, pid in self._pids.items()}
        now["bench"] = time.process_time()
        return now

    def used(self) -> dict[str, float]:
        now = self._now()
        return {name: now[name] - self._start[name] for name in now}


def cpu_line(used: dict[str, float], n: int) -> str:
    parts = [f"{name} {seconds * 1000 / n:.3f}" for name, seconds in used.items()]
    total = sum(used.values()) * 1000 / n
    return f"{', '.join(parts)}; total {total:.2f} ms"


def wait(check: Any, timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except httpx.TransportError:
            value = None
        if value:
            return value
        time.sleep(every)
    raise SystemExit(f"bench: timed out waiting for {what}")


class Stack:
    """mocksaas + sim cell + dispatcher, each a subprocess with a log in ``workdir``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.pids: dict[str, int] = {}
        self.saas = f"http://127.0.0.1:{free_port()}"
        self.cell = f"http://127.0.0.1:{free_port()}"
        self.status = f"http://127.0.0.1:{free_port()}/status"
        self.http = httpx.Client(timeout=60)

    def spawn(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, nice: int = 0
    ) -> None:
        log = (self.workdir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            preexec_fn=(lambda: os.nice(nice)) if nice else None,  # noqa: PLW1509
        )
        self.procs.append(proc)
        self.pids[name] = proc.pid

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        response = self.http.request(method, f"{self.saas}/admin/v1{path}", json=body)
        response.raise_for_status()
        return response.json()

    def start_services(self) -> None:
        port = self.saas.rsplit(":", 1)[1]
        self.spawn(
            "mocksaas",
            [
                str(BIN / "mocksaas"),
                "serve",
                "--http-port",
                port,
                "--amqp-url",
                AMQP,
                "--db",
                str(self.workdir / "saas.db"),
                "--log-format",
                "json",
            ],
            nice=MOCKSAAS_NICE,
        )
        script = self.workdir / "script.json"
        script.write_text(json.dumps(SCRIPT))
        self.spawn(
            "cell",
            [
                str(BIN / "cell"),
                "serve",
                "--script",
                str(script),
                "--http-port",
                self.cell.rsplit(":", 1)[1],
                "--max-calls",
                "100000",
                "--cell-id",
                "cell-mock",  # the cell_id of mocksaas's SIP artifact (D-NOTE-9)
                "--data-dir",
                str(self.workdir / "cell"),
                "--log-format",
                "json",
                "--log-level",
                "warning",
            ],
        )
        wait(lambda: self.http.get(f"{self.saas}/healthz").status_code == 200, 60, "mocksaas")
        wait(lambda: self.http.get(f"{self.cell}/healthz").status_code == 200, 60, "cell")

    def configure(self, tasks: int, tag: str = "") -> tuple[str, str, list[str]]:
        created = self.admin("POST", "/dispatchers", {})
        d, secret = created["dispatcher_id"], created["secret"]
        snapshot = self.admin("PUT", f"/dispatchers/{d}/sip", {"max_concurrent_calls": 1_000_000})
        # the cell carries the approved snapshot: the D admits only then (D-NOTE-9)
        self.http.put(f"{self.cell}/v1/config", json=snapshot).raise_for_status()
        names = [f"bench{tag}-{i:02d}" for i in range(tasks)]  # task ids are global
        for name in names:
            self.admin(
                "PUT",
                f"/dispatchers/{d}/tasks/{name}",
                {
                    "tenant_id": "bench-tenant",
                    "tenant_key": "bench-key",
                    "max_concurrent_calls": 1_000_000,
                    "ring_timeout_ms": 1000,
                },
            )
        self.admin(
            "PUT",
            f"/dispatchers/{d}/tenants/bench-tenant/quota",
            {"max_concurrent_calls": 1_000_000},
        )
        return d, secret, names

    def start_dispatcher(self, d: str, secret: str, tag: str = "") -> None:
        self.status = f"http://127.0.0.1:{free_port()}/status"
        env = {
            "DISPATCHER_ID": d,
            "DISPATCHER_SECRET_KEY": secret,
            "DISPATCHER_SAAS_URL": self.saas,
            "DISPATCHER_AMQP_URL": AMQP,
            "DISPATCHER_STATE_DB": str(self.workdir / f"d{tag}.sqlite"),
            "DISPATCHER_CELL_URL": self.cell,
            "DISPATCHER_HTTP_PORT": self.status.rsplit(":", 1)[1].split("/")[0],
            "DISPATCHER_LOG_LEVEL": "WARNING",
            "DISPATCHER_LOG_FORMAT": "json",
            "DISPATCHER_PREFETCH": "256",
        }
        if not Path(env["DISPATCHER_STATE_DB"]).exists():  # first start: create the state file
            init = [str(BIN / "dispatcher"), "init-state"]
            subprocess.run(init, env={**os.environ, **env}, check=True, capture_output=True)
        self.spawn(f"dispatcher{tag}", [str(BIN / "dispatcher"), "run"], env)
        wait(lambda: self.http.get(self.status).json()["admission"]["open"], 60, "admission")
        tasks = lambda: self.http.get(self.status).json()["tasks"]  # noqa: E731
        wait(lambda: all(t["consumer"] == "consuming" for t in tasks()), 30, "consumers")

    def stop_dispatcher(self, tag: str = "") -> None:
        pid = self.pids.pop(f"dispatcher{tag}")
        proc = next(p for p in self.procs if p.pid == pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        self.procs.remove(proc)

    def d_status(self) -> dict[str, Any]:
        body: dict[str, Any] = self.http.get(self.status).json()
        return body

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def command(d: str, task_id: str, i: int) -> bytes:
    now = datetime.now(UTC)
    return json.dumps(
        {
            "schema_version": "command-next.v0.1-proposal",
            "dispatcher_id": d,
            "tenant_id": "bench-tenant",
            "tenant_key": "bench-key",
            "trace_id": "bench",
            "issued_at": now.isoformat(timespec="seconds"),
            "command_id": f"bench-{uuid.uuid4()}",
            "command_type": "call.execute",
            "not_after": (now + timedelta(hours=1)).isoformat(timespec="seconds"),
            # callees of mocksaas's default whitelist (allowed_targets, D-NOTE-6)
            "payload": {"task_id": task_id, "callee": f"15000{i % 1000:06d}"},
        }
    ).encode()


async def publish(bodies: list[tuple[str, str, bytes]]) -> None:
    """Publish (exchange, routing key, body) with persistent + mandatory + confirms."""
    connection = await aio_pika.connect(AMQP)
    async with connection:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchanges: dict[str, Any] = {}
        for start in range(0, len(bodies), 1000):
            pending = []
            for exchange_name, route, body in bodies[start : start + 1000]:
                if exchange_name not in exchanges:
                    exchanges[exchange_name] = (
                        channel.default_exchange
                        if exchange_name == ""
                        else await channel.get_exchange(exchange_name, ensure=False)
                    )
                message = aio_pika.Message(
                    body,
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    message_id=str(uuid.uuid4()),
                )
                pending.append(exchanges[exchange_name].publish(message, route, mandatory=True))
            await asyncio.gather(*pending)


def run_dispatcher(
    stack: Stack, n: int, tasks: int, tag: str = "", console: bool = False
) -> dict[str, Any]:
    d, secret, names = stack.configure(tasks, tag)
    stack.start_dispatcher(d, secret, tag)
    bodies = [
        (
            "agent-call.dispatchers.v3",
            f"d.{d}.task.{names[i % tasks]}.in",
            command(d, names[i % tasks], i),
        )
        for i in range(n)
    ]
    meter = CpuMeter({**stack.pids, "rabbitmq": broker_pid()})
    with console_open(stack.status.removesuffix("/status"), console) as viewed:
        started = time.monotonic()
        asyncio.run(publish(bodies))
        published = time.monotonic() - started
        # Poll sparingly: /status reads the database and would steal time from the D.
        wait(lambda: stack.d_status()["outbox"]["delivered"] >= 2 * n, 600, "all results", 0.5)
        elapsed = time.monotonic() - started
    cpu = meter.used()
    status = stack.d_status()

    def stored() -> dict[str, Any] | None:
        found: dict[str, Any] = stack.admin("GET", f"/dispatchers/{d}/results/summary")
        return found if found["distinct_events"] >= 2 * n else None

    summary = wait(stored, 300, "results at mocksaas", 0.5)
    return {
        "elapsed": elapsed,
        "published": published,
        "status": status,
        "summary": summary,
        "cpu": cpu,
        "viewed": viewed,
    }


def run_paced(stack: Stack, rate: float, seconds: float, tasks: int) -> Paced:
    """A fresh D offered ``rate`` commands/s for ``seconds``: its delivery -> decision
    commit latency at that load (bench/dispatcher_paced.py)."""
    d, secret, names = stack.configure(tasks, "-paced")
    stack.start_dispatcher(d, secret, "-paced")
    route = "agent-call.dispatchers.v3"

    def body(i: int) -> tuple[str, str, bytes]:
        task = names[i % tasks]
        return route, f"d.{d}.task.{task}.in", command(d, task, i)

    meter = CpuMeter({**stack.pids, "rabbitmq": broker_pid()})
    started = time.monotonic()
    sent, took = asyncio.run(publish_paced(AMQP, body, rate, seconds))
    wait(lambda: stack.d_status()["outbox"]["delivered"] >= 2 * sent, 600, "all results", 0.5)
    elapsed = time.monotonic() - started
    cpu = meter.used()
    latency = stack.d_status()["admission"]["latency"]
    stack.stop_dispatcher("-paced")
    return Paced(rate, seconds, sent, sent / took, elapsed, latency, cpu)


async def baseline(n: int, tasks: int, prefetch: int) -> tuple[float, dict[str, float]]:
    """Bare relay: consume, republish two messages with confirms, ACK."""
    tag = uuid.uuid4().hex[:8]
    inputs = [f"bench.baseline.{tag}.in.{i}" for i in range(tasks)]
    output = f"bench.baseline.{tag}.out"
    connection = await aio_pika.connect(AMQP)
    async with connection:
        setup = await connection.channel()
        for name in [*inputs, output]:
            await setup.declare_queue(name, durable=True)
        confirms = await connection.channel(publisher_confirms=True, on_return_raises=True)
        done = asyncio.Event()
        relayed = 0

        async def relay(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            nonlocal relayed
            copies = [
                aio_pika.Message(
                    message.body,
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    message_id=str(uuid.uuid4()),
                )
                for _ in range(2)
            ]
            await asyncio.gather(
                *(confirms.default_exchange.publish(c, output, mandatory=True) for c in copies)
            )
            await message.ack()
            relayed += 1
            if relayed == n:
                done.set()

        consumers = []
        for name in inputs:
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=prefetch)
            queue = await channel.declare_queue(name, passive=True)
            consumers.append((channel, queue, await queue.consume(relay)))
        bodies = [("", inputs[i % tasks], command(tag, inputs[i % tasks], i)) for i in range(n)]
        meter = CpuMeter({"rabbitmq": broker_pid()})
        started = time.monotonic()
        await publish(bodies)
        await asyncio.wait_for(done.wait(), 600)
        elapsed = time.monotonic() - started
        cpu = meter.used()
        for channel, queue, tag in consumers:
            await queue.cancel(tag)
            await channel.close()
        for name in [*inputs, output]:
            await setup.queue_delete(name)
    return elapsed, cpu


@dataclass
class Pair:
    """One bare-relay run and one D run, next to each other."""

    base_s: float
    base_cpu: dict[str, float]
    result: dict[str, Any]

    def rates(self, n: int) -> tuple[float, float]:
        return n / self.result["elapsed"], n / self.base_s


def full_load_pairs(args: argparse.Namespace, stack: Stack) -> list[Pair]:
    """``--runs`` pairs (relay, D; D, relay; ...), each D run with its own identity."""
    pairs = []
    for number in range(args.runs):
        tag = f"-run{number}"
        relay_first = number % 2 == 0
        if relay_first:
            base_s, base_cpu = asyncio.run(baseline(args.n, args.tasks, 256))
        result = run_dispatcher(stack, args.n, args.tasks, tag)
        stack.stop_dispatcher(tag)  # a later run takes no CPU from this one
        if not relay_first:
            base_s, base_cpu = asyncio.run(baseline(args.n, args.tasks, 256))
        pair = Pair(base_s, base_cpu, result)
        pairs.append(pair)
        d_rate, base_rate = pair.rates(args.n)
        print(
            f"  run {number + 1}: D {d_rate:,.0f} commands/s, relay {base_rate:,.0f} commands/s,"
            f" D/relay {d_rate / base_rate:.2f}, D CPU"
            f" {result['cpu'][f'dispatcher{tag}'] * 1000 / args.n:.3f} ms/command;"
            f" load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    return pairs


def report(args: argparse.Namespace, pairs: list[Pair]) -> float:
    """The medians of the pairs and the details of the median D run; returns its rate."""
    d_rate = statistics.median(p.rates(args.n)[0] for p in pairs)
    base_rate = statistics.median(p.rates(args.n)[1] for p in pairs)
    middle = sorted(pairs, key=lambda p: p.rates(args.n)[0])[len(pairs) // 2]
    base_middle = sorted(pairs, key=lambda p: p.rates(args.n)[1])[len(pairs) // 2]
    result = middle.result
    status, summary = result["status"], result["summary"]
    latency = status["admission"]["latency"]
    decide = status["admission"].get("decide", {})
    print(f"commands                 {args.n} across {args.tasks} tasks, {len(pairs)} runs")
    print(
        f"dispatcher               {d_rate:,.0f} commands/s (median; this run"
        f" {result['elapsed']:.2f} s, publishing took {result['published']:.2f} s)"
    )
    print(
        f"baseline (bare relay)    {base_rate:,.0f} commands/s (median; this run"
        f" {base_middle.base_s:.2f} s)"
    )
    ratio = d_rate / base_rate
    print(f"ratio D/baseline         {ratio:.2f} (median of {len(pairs)} each)")
    print(
        f"admission decision       p50={decide.get('p50_us')} us  p99={decide.get('p99_us')} us"
        " (pure decide)"
    )
    print(f"delivery->decision commit p50={latency['p50_ms']} ms  p99={latency['p99_ms']} ms")
    print(
        f"results at the SaaS      {summary['by_event_type']}  duplicates="
        f"{len(summary['duplicates'])} invalid={summary['invalid']}"
    )
    print(f"decisions                {status['commands']}")
    named = {k.split("-", 1)[0]: v for k, v in result["cpu"].items()}  # dispatcher-run1 ...
    print(f"CPU per command, D run   {cpu_line(named, args.n)}")
    print(
        f"CPU per command, baseline {cpu_line(base_middle.base_cpu, args.n)}"
        " (bench = publisher + relay)"
    )
    print(f"load average             {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    met = ratio >= RATIO_TARGET
    print(f"target (ratio>={RATIO_TARGET}): {'met' if met else 'NOT met'}")
    d_cpu = named["dispatcher"]
    record(
        Figure(
            NAME,
            "call.execute -> command.result + call.result",
            round(d_rate, 1),
            "commands/s",
            baseline=round(base_rate, 1),
            baseline_name="bare aio-pika relay",
            cpu_ms_per_unit=round(d_cpu * 1000 / args.n, 3),
            per="command",
            target=f"ratio >= {RATIO_TARGET} (median of {len(pairs)})",
            met=met,
        )
    )
    return d_rate


def report_paced(args: argparse.Namespace, paced: Paced) -> None:
    print(f"latency under load       {line(paced, args.load)}")
    print(f"CPU per command, paced   {cpu_line(paced.cpu, paced.sent)}")
    p99 = paced.latency["p99_ms"]
    met = p99 is not None and p99 < P99_TARGET_MS
    print(
        f"target (p99 < {P99_TARGET_MS:.0f} ms at {args.load:.0%}): {'met' if met else 'NOT met'}"
    )
    if p99 is None:
        return
    d_cpu = sum(v for k, v in paced.cpu.items() if k.startswith("dispatcher"))
    record(
        Figure(
            NAME,
            f"delivery -> decision commit p99 at {args.load:.0%} of the maximum rate",
            p99,
            "ms",
            higher_is_better=False,
            cpu_ms_per_unit=round(d_cpu * 1000 / max(1, paced.sent), 3),
            per="command",
            target=f"p99 < {P99_TARGET_MS:.0f} ms",
            met=met,
        )
    )


def console_runs(args: argparse.Namespace, stack: Stack) -> dict[bool, list[dict[str, Any]]]:
    """2 x rounds D runs, console off and on interleaved (off, on, on, off, ...)."""
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for r in range(args.rounds):
        for console in (False, True) if r % 2 == 0 else (True, False):
            tag = f"-{r}-{'on' if console else 'off'}"
            result = run_dispatcher(stack, args.n, args.tasks, tag, console)
            stack.stop_dispatcher(tag)
            result["d_cpu_ms"] = result["cpu"][f"dispatcher{tag}"] * 1000 / args.n
            runs[console].append(result)
            rate = args.n / result["elapsed"]
            viewed: Viewed = result["viewed"]
            print(
                f"  run {tag[1:]:<8} {rate:,.0f} commands/s ({result['elapsed']:.2f} s),"
                f" D CPU {result['d_cpu_ms']:.2f} ms/command"
                + (f"; console: {viewed.line()}" if console else ""),
                flush=True,
            )
    return runs


def report_console(args: argparse.Namespace, base_s: float, runs: dict[bool, list[Any]]) -> bool:
    base_rate = args.n / base_s
    rate = {on: statistics.median(args.n / r["elapsed"] for r in runs[on]) for on in runs}
    ratio = rate[True] / rate[False]
    print(f"commands                 {args.n} across {args.tasks} tasks, {args.rounds} rounds")
    print(f"baseline (bare relay)    {base_rate:,.0f} commands/s ({base_s:.2f} s)")
    for on in (False, True):
        label = "with console open " if on else "without console    "
        print(
            f"D {label}    {rate[on]:,.0f} commands/s (median), ratio D/baseline"
            f" {rate[on] / base_rate:.2f}"
        )
    print(f"with/without console     {ratio:.3f} (target: within 10 %)")
    cpu = {on: statistics.median(r["d_cpu_ms"] for r in runs[on]) for on in runs}
    print(
        f"D CPU per command        {cpu[False]:.2f} ms without, {cpu[True]:.2f} ms with the"
        f" console (x{cpu[True] / cpu[False]:.3f}; CPU seconds, not wall time)"
    )
    print(f"load average             {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ok = ratio >= 0.9
    print(f"target (console costs < 10 %): {'met' if ok else 'NOT met'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="call.execute to publish")
    parser.add_argument("--tasks", type=int, default=16, help="running tasks")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--console", action="store_true", help="compare runs with the console open and without"
    )
    parser.add_argument("--rounds", type=int, default=2, help="--console: off/on pairs")
    parser.add_argument("--runs", type=int, default=3, help="relay and D runs (median)")
    parser.add_argument(
        "--paced", action="store_true", help="offer --load of the max rate (the default)"
    )
    parser.add_argument("--no-paced", action="store_true", help="full-load runs only")
    parser.add_argument("--load", type=float, default=0.5, help="paced: share of max rate")
    parser.add_argument("--seconds", type=float, default=20.0, help="paced: how long")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="paced: offer this rate (one short full run)"
    )
    args = parser.parse_args()
    paced_too = not args.no_paced and not args.console
    if args.rate:  # a given rate: one short full-load run only warms the broker up
        paced_too, args.n, args.runs = True, min(args.n, 500), 1
    workdir = Path(tempfile.mkdtemp(prefix="bench-dispatcher-"))
    stack = Stack(workdir)
    try:
        stack.start_services()
        if args.console:
            base_s, _ = asyncio.run(baseline(args.n, args.tasks, 256))
            runs = console_runs(args, stack)
        else:
            pairs = full_load_pairs(args, stack)
            if paced_too:
                median = statistics.median(p.rates(args.n)[0] for p in pairs)
                paced = run_paced(stack, args.rate or args.load * median, args.seconds, args.tasks)
    finally:
        stack.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.console:
        report_console(args, base_s, runs)
    else:
        report(args, pairs)
        if paced_too:
            report_paced(args, paced)
    if args.keep:
        print(f"work directory: {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
