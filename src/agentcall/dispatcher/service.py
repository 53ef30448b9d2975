"""Wiring of the Dispatcher process and its supervised loops.

Loops (named tasks in one ``TaskGroup``; if one fails the group stops and the process
exits non-zero after a clean shutdown): AMQP link, discovery, consumer reconciliation,
intake (admission), outbox relay, call supervisor, status HTTP. SIGTERM/SIGINT cancel the
group: consumers are cancelled first (prefetched deliveries return to their queues), the
in-flight batch gets ``grace_s`` to commit, then connections and the database close.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from agentcall.dispatcher.admission.service import AdmissionService
from agentcall.dispatcher.calls.service import CallSupervisor
from agentcall.dispatcher.cell.port import CellPort, CellPortError
from agentcall.dispatcher.console.pages import Console, console_routes
from agentcall.dispatcher.control.plane import ControlPlane
from agentcall.dispatcher.discovery.cellgate import CellGate
from agentcall.dispatcher.discovery.gate import Gate
from agentcall.dispatcher.discovery.service import DiscoveryLoop
from agentcall.dispatcher.domain.consumption import queues_to_consume
from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.identity import CellIdentity
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import TaskStatus
from agentcall.dispatcher.logs import handled, log
from agentcall.dispatcher.mq.cancel import raise_if_cancelling
from agentcall.dispatcher.mq.consumers import TaskConsumers
from agentcall.dispatcher.mq.intake import Intake
from agentcall.dispatcher.mq.link import AmqpLink
from agentcall.dispatcher.mq.names import result_routing_key
from agentcall.dispatcher.mq.publisher import OutboxRelay
from agentcall.dispatcher.recording.service import from_settings as recordings_from_settings
from agentcall.dispatcher.recording.storage import S3Store, StorageConfig
from agentcall.dispatcher.saas.cache import ConfigCache
from agentcall.dispatcher.saas.client import SaasClient, SaasError
from agentcall.dispatcher.saas.outage import CacheRetry, SaasOutages
from agentcall.dispatcher.settings import Settings
from agentcall.dispatcher.status import Components, ErrorLog, snapshot, store_facts
from agentcall.dispatcher.store import tasks
from agentcall.dispatcher.store.db import Database, StoreError
from agentcall.dispatcher.telemetry.prometheus import PrometheusTelemetry
from agentcall.dispatcher.telemetry.tracing_setup import from_settings as tracing_from_settings
from agentcall.dispatcher.web.app import build_app
from agentcall.dispatcher.web.edge import EdgeLimits
from agentcall.dispatcher.web.hosts import allowed_hosts
from agentcall.dispatcher.web.server import edge_for
from agentcall.dispatcher.web.server import serve as serve_http

LOG = logging.getLogger("dispatcher")
Loop = Callable[[], Awaitable[None]]


def utcnow() -> datetime:
    return datetime.now(UTC)


class Dispatcher:
    """All components of one D; ``run()`` until cancelled or a loop fails."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        cell: CellPort,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.settings = settings
        self.db = db
        self.cell = cell
        self.clock = clock
        self.started_at = clock()
        self.errors = ErrorLog()
        self.gate = Gate()
        self.extra_loops: dict[str, Loop] = {}
        self.http_port: int | None = None
        self.failed: str | None = None
        self._reconcile_wake = asyncio.Event()
        self.telemetry = t = PrometheusTelemetry()
        self.tracing = tr = tracing_from_settings(settings.tracing)
        did = settings.dispatcher_id
        self.saas = SaasClient(
            settings.saas_url, did, settings.secret_key, settings.http_timeout_s, telemetry=t
        )
        self.cache = ConfigCache(
            self.saas,
            db,
            config_ttl_s=settings.config_ttl_s,
            quota_ttl_s=settings.quota_ttl_s,
            clock=clock,
            on_error=self._config_error,
        )
        self._gates(settings, clock)
        self.link = AmqpLink(settings.amqp_url)
        self.relay = OutboxRelay(
            db,
            self.link,
            batch=settings.outbox_batch,
            retry_s=settings.outbox_retry_s,
            clock=clock,
            telemetry=self.telemetry,
            tracing=tr,
        )
        self.recordings = recordings_from_settings(
            settings, db, cell, clock=clock, on_outbox=self.relay.wake, tracing=tr
        )
        self.calls = CallSupervisor(
            db,
            cell,
            dispatcher_id=did,
            routing_key=result_routing_key(did),
            clock=clock,
            on_outbox=self.relay.wake,
            recordings=self.recordings,
            telemetry=self.telemetry,
            tracing=tr,
        )
        self._features(settings, db, cell, clock)

    def _features(
        self, settings: Settings, db: Database, cell: CellPort, clock: Callable[[], datetime]
    ) -> None:
        """Intake, consumers, admission, discovery and task control, over the edges built
        before them."""
        did, tr = settings.dispatcher_id, self.tracing
        self.intake = Intake(self._admit, settings.intake_batch, quarantine=self._quarantine)
        qos = settings.prefetch, self.intake.submit, tr.on, settings.inflight
        self.consumers = TaskConsumers(self.link, did, *qos)
        self.gate.subscribe(self._reconcile_wake.set)
        self.link.on_up(self._on_link_up)
        self.link.on_down(self.consumers.on_link_down)
        self.admission = AdmissionService(
            db,
            self.cache,
            dispatcher_id=did,
            routing_key=result_routing_key(did),
            clock=clock,
            is_consuming=self.consumers.is_consuming,
            on_accepted=self.calls.submit,
            on_outbox=self.relay.wake,
            outages=self.outages,
            hold=self._hold_tasks,
            skew_s=settings.clock_skew_s,
            telemetry=self.telemetry,
            amd=settings.amd,
            tracing=tr,
        )
        self.discovery = DiscoveryLoop(
            self.saas,
            db,
            self.gate,
            interval_s=settings.discovery_interval_s,
            error_backoff_s=settings.discovery_error_backoff_s,
            clock=clock,
            on_tasks=self._on_tasks,
        )
        self.control = ControlPlane(
            dispatcher_id=did,
            routing_key=result_routing_key(did),
            db=db,
            cache=self.cache,
            registry=self.consumers,
            wake_consumers=self._reconcile_wake.set,
            link=self.link,
            cell=cell,
            clock=clock,
            on_receipt=self.relay.wake,
            skew_s=settings.clock_skew_s,
        )

    # --- hooks ---------------------------------------------------------------------
    def _config_error(self, exc: SaasError) -> None:
        self.errors.add(f"saas.{exc.resource}", str(exc))

    async def _admit(self, batch: list[Any]) -> None:
        await self.admission.process(batch)

    async def _quarantine(self, delivery: Any, exc: Exception) -> None:
        await self.admission.quarantine(delivery, exc)

    async def _on_link_up(self) -> None:
        self._reconcile_wake.set()
        self.relay.wake()

    async def _on_tasks(
        self, stored: dict[str, LocalTask], changed: tuple[DiscoveredTask, ...]
    ) -> None:
        for task in changed:
            if task.status is TaskStatus.REMOVED:
                self.cache.drop_task(task.task_id)  # D-DISC-8: drop the task config
            else:
                self.cache.note_revision(task.task_id, task.task_revision)  # D-CTL-5
        self.control.after_discovery(stored, changed)
        self._reconcile_wake.set()

    def _gates(self, settings: Settings, clock: Callable[[], datetime]) -> None:
        """What closes admission besides discovery: outages, SIP snapshot, cell (D-NOTE-2/9)."""
        self.outages = SaasOutages(
            self.gate,
            clock=clock,
            base_s=settings.saas_retry_base_s,
            cap_s=settings.saas_retry_max_s,
            on_change=self._reconcile_wake.set,
        )
        self.cell_gate = CellGate(
            self.gate,
            sip=self.cache.sip,
            identity=self._cell_identity,
            interval_s=settings.config_ttl_s,
            clock=clock,
        )

    def wanted_queues(self, known: dict[str, LocalTask]) -> set[str]:
        """Task queues to consume now (see :func:`queues_to_consume`), without the tasks a
        SaaS outage holds (D-NOTE-2)."""
        wanted = queues_to_consume(known.values(), self.gate.open)
        if self.outages.active:
            held = self.outages.blocking
            wanted = {t for t in wanted if held(t, known[t].tenant_id) is None}
        return wanted

    async def _hold_tasks(self, task_ids: list[str]) -> None:
        """An outage holds these tasks: stop their consumers before their deliveries go
        back to the queue, so they are not redelivered in a storm (D-NOTE-2)."""
        for task_id in task_ids:
            await self.consumers.stop(task_id)
        self._reconcile_wake.set()

    async def _cell_identity(self) -> CellIdentity | None:
        try:
            return await self.cell.identity()
        except CellPortError as exc:
            self.errors.add("cell.identity", str(exc))
            return None

    # --- loops ----------------------------------------------------------------------
    async def _reconcile_loop(self) -> None:
        while True:
            known = await self.db.read(tasks.load_tasks)
            await self.consumers.reconcile(self.wanted_queues(known))
            raise_if_cancelling(None)  # aio-pika may have turned our cancellation into an error
            retry = 2.0 if self.consumers.missing else 30.0
            try:
                await asyncio.wait_for(self._reconcile_wake.wait(), retry)
            except TimeoutError:
                pass
            self._reconcile_wake.clear()

    async def _http(self) -> None:
        s = self.settings
        limits = EdgeLimits(
            s.http_header_timeout_s,
            s.http_body_timeout_s,
            s.http_idle_timeout_s,
            s.http_max_connections,
        )
        edge = edge_for(limits, lambda level, event, facts: log(LOG, level, event, **facts))
        app = build_app(
            self.snapshot,
            lambda: self.failed is None,
            lambda request, exc: handled(LOG, "http", exc, path=request.url.path),
            registry=self.telemetry.render,
            routes=console_routes(self._console()),
            allowed=allowed_hosts(s.http_host, s.http_allowed_hosts),
            edge=edge,
        )
        await serve_http(app, s.http_host, s.http_port, edge, self._listening)

    def _listening(self, port: int) -> None:
        self.http_port = port
        log(LOG, logging.INFO, "http.listening", host=self.settings.http_host, port=port)

    def _console(self) -> Console:
        token = self.settings.console_token
        storage = StorageConfig.from_settings(self.settings)
        return Console(
            self.snapshot,
            self.settings.state_db,
            token.reveal() if token else None,
            self.clock,
            live_calls=self.cell.list_calls,
            links=S3Store(storage, threads=2) if storage else None,
        )

    def loops(self) -> dict[str, Loop]:
        return {
            "http": self._http,
            "amqp": self.link.run,
            "discovery": self.discovery.run,
            "consumers": self._reconcile_loop,
            "intake": self.intake.run,
            "outbox": self.relay.run,
            "calls": self.calls.run,
            "control": self.control.run,
            "saas_reads": self._saas_reads,
            "cell_identity": self.cell_gate.run,
            "state_file": self.db.watch,  # a lost state file stops the D (store.guard)
            **self.extra_loops,
        }

    async def _saas_reads(self) -> None:
        await self.outages.run(CacheRetry(self.cache, self.db))

    async def run(self) -> None:
        log(LOG, logging.INFO, "dispatcher.starting", dispatcher_id=self.settings.dispatcher_id)
        try:
            async with asyncio.TaskGroup() as group:
                for name, loop in self.loops().items():
                    group.create_task(self._watched(name, loop), name=name)
        finally:
            await self._shutdown()

    async def _watched(self, name: str, loop: Loop) -> None:
        try:
            await loop()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failed = f"{name}: {exc!r}"
            if self.db.lost is None:  # a lost state file: serve() logs state.lost, once
                log(LOG, logging.ERROR, "loop.failed", loop=name, error=repr(exc))
            raise
        raise RuntimeError(f"loop {name} returned unexpectedly")

    async def _shutdown(self) -> None:
        log(LOG, logging.INFO, "dispatcher.stopping")
        try:
            await asyncio.wait_for(self.consumers.close(), self.settings.grace_s)
        except (TimeoutError, Exception) as exc:  # shutting down: report, keep closing
            handled(LOG, "shutdown.consumers", exc, "shutdown.consumers", logging.WARNING)
        await self.link.close()
        await self.saas.aclose()
        await self.cell.aclose()
        self.tracing.close()  # exports the spans still queued

    async def snapshot(self) -> dict[str, Any]:
        facts = await self.db.read(store_facts)
        return snapshot(facts, self.components())

    def components(self) -> Components:
        """The ``status()`` of every component, now."""
        return Components(
            dispatcher_id=self.settings.dispatcher_id,
            started_at=self.started_at,
            now=self.clock(),
            failed=self.failed,
            errors=self.errors.latest(),
            gate=self.gate.status(),
            admission=self.admission.status(),
            discovery=self.discovery.status(),
            config=self.cache.status(),
            consumers=self.consumers.status(),
            link=self.link.status(),
            relay=self.relay.status(),
            calls=self.calls.status(),
            recordings=self.recordings.status() if self.recordings else None,
            intake=self.intake.status(),
            control=self.control.status(),
            outages=self.outages.status(),
            cell=self.cell_gate.status(),
            state_file=self.db.lost,
        )


async def serve(settings: Settings, cell_factory: Callable[[], CellPort]) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or a loop failure, a lost state file included (exit
    1); exit 2 at once when the state database is missing, foreign, locked or unwritable."""
    try:
        db = await Database.open(
            settings.state_db, dispatcher_id=settings.dispatcher_id, create=False
        )
    except StoreError as exc:
        log(LOG, logging.ERROR, "dispatcher.refused", error=str(exc))
        print(f"dispatcher: {exc}", file=sys.stderr, flush=True)
        return 2
    dispatcher = Dispatcher(settings, db, cell_factory())
    main = asyncio.create_task(dispatcher.run(), name="dispatcher")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, main.cancel)
    code = 1
    try:
        await main
    except asyncio.CancelledError:
        code = 0
    except BaseException as exc:  # a loop failed: already logged with its name
        lost = db.lost  # the state file: nothing acknowledged after the loss (store.guard)
        event = "state.lost" if lost else "dispatcher.failed"
        log(LOG, logging.ERROR, event, error=lost or repr(exc))
    finally:
        await db.close()
    log(LOG, logging.INFO, "dispatcher.stopped", exit_code=code)
    return code
