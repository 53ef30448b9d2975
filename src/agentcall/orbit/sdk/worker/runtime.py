"""The worker process: connects, serves leases with its registry, heartbeats, reconnects with
its one reconnect policy (`link.ReconnectPolicy`: full jitter, capped at `max_backoff`, reset
by a welcomed session) and shuts down gracefully (worker-protocol.md §7).

    worker = Worker(registry, WorkerConfig(url=..., token=..., queues=[...], concurrency=8))
    await worker.run()        # until SIGTERM/SIGINT (or worker.stop()) and a graceful drain
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import secrets
import signal
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.sdk.worker.execution import AttemptRun, Phase, invoke, run_from_lease
from agentcall.orbit.sdk.worker.link import (
    LinkDown,
    Outbox,
    ReconnectPolicy,
    endpoint,
    next_server,
    split_urls,
)
from agentcall.orbit.sdk.worker.outcomes import invalid_result
from agentcall.orbit.sdk.worker.registry import Registry
from agentcall.orbit.sdk.worker.session import Session, SessionEnded
from agentcall.orbit.telemetry import provider

log = logging.getLogger("orbit.worker")
SDK = "orbit-python/0.1.0"
_SERVER_ENDED = frozenset({"attempt_timeout", "deadline_exceeded", "lease_lost"})


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """`url`: one server URL, or several separated by commas or spaces (stateless servers on
    one database: the worker connects to the first and moves on to the next when its server
    goes away, docs/orbit/scaling.md)."""

    url: str
    token: str
    queues: tuple[str, ...]
    concurrency: int = 4
    name: str = "orbit-worker"
    grace_period: float = 30.0
    cancel_wait: float = 5.0
    max_backoff: float = 10.0
    tracing: bool = False  # a span around each handler, over OTLP (docs/orbit/tracing.md)


class Worker:
    def __init__(self, registry: Registry, config: WorkerConfig) -> None:
        self.registry = registry
        self.config = config
        self.instance_id = secrets.token_hex(16)
        self.outbox = Outbox()
        self._reconnect = ReconnectPolicy(cap_s=config.max_backoff)
        self.runs: dict[str, AttemptRun] = {}
        self.stopping = False
        self._closing = asyncio.Event()
        self._pool = ThreadPoolExecutor(config.concurrency, thread_name_prefix="orbit-handler")
        self._session: Session | None = None
        self._signals = 0

    # ----------------------------------------------------------------- lifecycle
    async def run(self) -> None:
        """Serve until stopped; raises WorkerStopped when the server refuses this worker."""
        self._install_signals()
        if self.config.tracing:
            provider.enable("orbit-worker")
        connector = asyncio.create_task(self._connect_forever(), name="orbit-worker-connect")
        closing = asyncio.create_task(self._closing.wait())
        try:
            await asyncio.wait({connector, closing}, return_when=asyncio.FIRST_COMPLETED)
            if connector.done():
                connector.result()  # raises WorkerStopped
        finally:
            connector.cancel()
            closing.cancel()
            await asyncio.gather(connector, closing, return_exceptions=True)
            self._pool.shutdown(wait=False, cancel_futures=True)
            if self.config.tracing:
                provider.disable()  # exports the spans still queued

    def stop(self) -> None:
        """Begin a graceful shutdown (what SIGTERM does); a second call aborts at once."""
        self._signals += 1
        if self._signals > 1:
            log.warning("second stop signal: exiting now; leases will expire")
            self._closing.set()
        elif not self.stopping:
            asyncio.get_running_loop().create_task(self._shutdown(), name="orbit-worker-drain")

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop)
            except (NotImplementedError, RuntimeError, ValueError):
                return  # not the main thread: the embedding program calls stop()

    async def _shutdown(self) -> None:
        self.stopping = True
        log.info("draining", extra={"in_flight": len(self.runs)})
        await self._flow(0)
        if not await self._wait_runs(self.config.grace_period):
            for run in self.runs.values():
                run.token.cancel("shutdown")
            if not await self._wait_runs(self.config.cancel_wait):
                await self._abandon_remaining()
        await self._wait_outbox(self.config.cancel_wait)
        self._closing.set()

    async def _wait_runs(self, timeout: float) -> bool:
        runners = [r.runner for r in self.runs.values() if r.runner is not None]
        if runners:
            await asyncio.wait(runners, timeout=timeout)
        return not self.runs

    async def _abandon_remaining(self) -> None:
        releases = []
        for run in list(self.runs.values()):
            run.abandoned = True
            releases.append(self._release(run, "shutdown"))
        await asyncio.wait_for(asyncio.gather(*releases, return_exceptions=True), 5.0)

    async def _wait_outbox(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while len(self.outbox) and loop.time() < end:
            await asyncio.sleep(0.02)

    # ----------------------------------------------------------------- connection
    async def _connect_forever(self) -> None:
        urls = [endpoint(url) for url in split_urls(self.config.url)] or [self.config.url]
        failures = index = 0
        while True:
            session = Session(self, urls[index], self.config.token)
            self._session = session
            try:
                await session.serve()
            except SessionEnded as ended:
                log.warning("connection ended", extra={"reason": str(ended)})
            finally:
                self._session = None
                self.outbox.disconnected()
            failures = 0 if session.welcomed else failures + 1
            index, backoff = next_server(len(urls), index, failures)
            await asyncio.sleep(self._reconnect.delay(backoff, random.random()))

    def hello(self) -> dict[str, JsonValue]:
        handlers: list[JsonValue] = [
            {"handler": r.handler, "handler_version": r.handler_version} for r in self.registry
        ]
        held: list[JsonValue] = [run.ref for run in self.runs.values() if not run.silent]
        return {
            "type": "hello",
            "protocol": "orbit.worker.v1",
            "worker": {
                "name": self.config.name,
                "instance_id": self.instance_id,
                "sdk": SDK,
                "host": socket.gethostname()[:128],
                "pid": os.getpid(),
            },
            "queues": list(self.config.queues),
            "handlers": handlers,
            "capacity": 0 if self.stopping else self.config.concurrency,
            "attempts": held,
        }

    # ----------------------------------------------------------------- server messages
    def on_lease(self, message: dict[str, Any]) -> None:
        try:
            run = run_from_lease(message)
        except (KeyError, TypeError, ValueError):
            log.error("malformed lease message ignored; its lease will expire")
            return
        self.runs[run.attempt.attempt_id] = run
        run.runner = asyncio.create_task(self._execute(run), name=f"attempt-{run.attempt.number}")

    def on_cancel(self, attempt_id: str, reason: str) -> None:
        run = self.runs.get(attempt_id)
        if run is None:
            return
        run.token.cancel(reason)
        if reason in _SERVER_ENDED:
            run.lost = True

    def on_attempt_status(self, attempt_id: str, status: str) -> None:
        if status == "lost":
            if attempt_id in self.runs and not self.runs[attempt_id].lost:
                log.warning(
                    "attempt lost: its lease ended; stopping it", extra={"attempt_id": attempt_id}
                )
            self.on_cancel(attempt_id, "lease_lost")
        elif status == "cancel_requested":
            self.on_cancel(attempt_id, "cancel_requested")

    def heartbeat_refs(self) -> list[JsonValue]:
        """Every attempt still held, including one whose result awaits its ack."""
        return [run.ref for run in self.runs.values() if not run.silent]

    # ----------------------------------------------------------------- one attempt
    async def _execute(self, run: AttemptRun) -> None:
        try:
            registration = self.registry.get(run.task.handler, run.task.handler_version)
            if self.stopping or registration is None:
                await self._release(run, "shutdown" if registration else "unsupported")
                return
            ack = await self._request({"type": "started", **run.ref}, run)
            if not ack.get("ok"):
                log.info("start refused", extra=_error_fields(ack, run))
                return
            run.phase = Phase.RUNNING
            body = await invoke(run, registration, self._evidence_sink(run), self._pool)
            await self._finish(run, body)
        finally:
            self.runs.pop(run.attempt.attempt_id, None)

    async def _finish(self, run: AttemptRun, body: dict[str, JsonValue] | None) -> None:
        run.phase = Phase.FINISHING
        if run.evidence_sent:
            await asyncio.gather(*run.evidence_sent, return_exceptions=True)
        if body is None and run.token.reason == "cancel_requested":
            body = {"outcome": "cancelled"}  # the cooperative stop the server asked for
        late = run.take_evidence()  # recorded just before returning: goes inline
        if late and body is not None:
            body = {**body, "evidence": late}
        if run.silent:
            return
        if body is None:
            await self._release(run, "shutdown")
            return
        ack = await self._request({"type": "result", **run.ref, **body}, run)
        error = ack.get("error") or {}
        if error.get("code") == "INVALID_RESULT":
            fallback = invalid_result(str(error.get("message", "")))
            ack = await self._request({"type": "result", **run.ref, **fallback}, run)
        if not ack.get("ok"):
            log.warning("result refused", extra=_error_fields(ack, run))

    async def _release(self, run: AttemptRun, reason: str) -> None:
        await self._request({"type": "release", **run.ref, "reason": reason}, run, force=True)

    def _evidence_sink(self, run: AttemptRun) -> Any:
        """Handlers record evidence from any thread; it is sent at once (so it survives a crash
        of this process), or inline with the result when recorded just before returning."""
        loop = asyncio.get_running_loop()

        def flush() -> None:
            items = run.take_evidence()
            if items and run.phase is Phase.RUNNING:
                message: dict[str, JsonValue] = {"type": "evidence", **run.ref, "items": items}
                run.evidence_sent.append(loop.create_task(self._request(message, run)))
            elif items:
                run.evidence_queue[:0] = [dict(i) for i in items if isinstance(i, dict)]

        def record(item: dict[str, Any]) -> None:
            run.evidence_queue.append(item)
            loop.call_soon_threadsafe(flush)

        return record

    async def _request(
        self, message: dict[str, JsonValue], run: AttemptRun | None, *, force: bool = False
    ) -> dict[str, Any]:
        """Send until acked; an UNAVAILABLE ack is retried with backoff (resending is safe)."""
        tries = 0
        while True:
            if run is not None and run.lost and not force:
                return {"ok": False, "error": {"code": "LEASE_LOST", "message": "cancelled"}}
            ack = await self.outbox.submit(message)
            if (ack.get("error") or {}).get("code") != "UNAVAILABLE":
                return ack
            tries += 1
            await asyncio.sleep(self._reconnect.delay(tries, random.random()))

    async def _flow(self, capacity: int) -> None:
        try:
            await asyncio.wait_for(
                self.outbox.submit({"type": "flow", "capacity": capacity}, resend=False), 5.0
            )
        except (LinkDown, TimeoutError):
            return  # the next hello carries capacity 0


def _error_fields(ack: dict[str, Any], run: AttemptRun) -> dict[str, Any]:
    error = ack.get("error") or {}
    return {
        "attempt_id": run.attempt.attempt_id,
        "code": error.get("code"),
        "detail": error.get("message"),
    }
