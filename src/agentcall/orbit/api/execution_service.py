"""Wiring of the execution side into the API process: the batcher, kernel, hub and its loops,
the WebSocket and history routes, and the submit hook that wakes the dispatcher, built from
the server's `ExecutionSettings`. `orbit.api.app.create_app` calls `ExecutionService` (one
object, three calls: routes, start, stop) and hands its hooks (`on_accepted`, `handoff`) to
`Operations`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from prometheus_client import CollectorRegistry, Counter
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from agentcall.orbit.api import attempt_routes as routes
from agentcall.orbit.api.inspection_routes import InspectionRoutes, readiness
from agentcall.orbit.api.observability import ExecutionMetrics, TaskGauges
from agentcall.orbit.api.routes import Context
from agentcall.orbit.api.worker_socket import WorkerEndpoint
from agentcall.orbit.domain.backoff import JitteredBackoff
from agentcall.orbit.execution.batch import Batcher, Many
from agentcall.orbit.execution.eager import EagerDispatch
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.inspection import Inspection
from agentcall.orbit.execution.kernel import Kernel, KernelSettings
from agentcall.orbit.execution.peers import PeerCounters, PeerHints
from agentcall.orbit.execution.token_watch import TokenWatch
from agentcall.orbit.execution.upkeep import Upkeep
from agentcall.orbit.execution.waiters import Waiters
from agentcall.orbit.execution.worker_directory import WorkerDirectory
from agentcall.orbit.settings import ExecutionSettings
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.operations import Operations
from agentcall.orbit.store.submit_group import Handoff

Handler = Callable[[Request, Context], Awaitable[Response]]
Wrap = Callable[[str, Handler], Callable[[Request], Awaitable[Response]]]


class ExecutionService:
    def __init__(
        self,
        db: Database,
        settings: ExecutionSettings,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.settings = settings
        lanes = self.settings.lanes or db.write_lanes(4)
        kernel_settings = KernelSettings(self.settings.lease_ttl_ms,
                                         self.settings.reconnect_grace_ms,
                                         JitteredBackoff())  # fmt: skip
        kernel = Kernel(kernel_settings)
        kinds: dict[str, Many] = {
            "lease": kernel.lease_many,
            "start": kernel.start_many,
            "finish": kernel.finish_many,
        }
        self.batcher = Batcher(db, lanes, kinds=kinds, clocked={"lease": kernel.lease_clocked})
        registry = registry or CollectorRegistry()
        leases = Counter("orbit_leases", "Leases granted to workers", registry=registry)
        empty = Counter("orbit_lease_asks_empty", "Lease asks of the dispatcher that found no "
                        "task (another process or connection took it first, or none was "
                        "ready)", registry=registry)  # fmt: skip
        revoked = Counter("orbit_worker_sessions_revoked", "Worker sessions ended because their "
                          "token was revoked or expired", registry=registry)  # fmt: skip
        self.token_watch = TokenWatch(db, self.settings.worker_token_check_ms / 1000,
                                      on_ended=revoked.inc)  # fmt: skip
        self.db = db
        self.waiters = Waiters(self._settled_among)
        observer = ExecutionMetrics(registry, self.waiters)
        self.hub = Hub(
            self.batcher,
            kernel,
            Upkeep(kernel_settings),
            tick_s=self.settings.dispatch_tick_ms / 1000,
            sweep_s=self.settings.sweep_interval_ms / 1000,
            on_grants=leases.inc,
            observer=observer,
            on_empty=empty.inc,
        )
        # what the inspection API, the console and /metrics read (counts cached, shared)
        self.inspection = Inspection(db, self.hub, self.waiters)
        self.inspection_routes = InspectionRoutes(self.inspection)
        self.gauges = TaskGauges(registry, self.inspection)
        self.waiters.on_failure = self.gauges.failures.inc
        self.peers = _peer_hints(db, settings, self.hub, registry)
        if self.peers is not None:  # the workers of every server process, in each listing
            directory = WorkerDirectory(db, self.hub, self.peers.server_id)
            self.peers.also = directory.record
            self.inspection.directory = directory
        # the hooks of `Operations`: a committed submit wakes the dispatcher for its queue;
        # a submit group leases to an idle connection of this process in its transaction
        self.on_accepted: Callable[[str], None] = self.hub.notify
        self.handoff: Handoff | None = None
        if self.settings.eager:
            eager = Counter("orbit_eager_leases", "Leases granted in the submit's transaction "
                            "(eager dispatch), also counted in orbit_leases", registry=registry)
            self.handoff = EagerDispatch(self.hub, self.settings.lease_ttl_ms, eager.inc).claim

    def routes(self, wrap: Wrap, ops: Operations) -> list[BaseRoute]:
        endpoint = WorkerEndpoint(ops, self.hub, self.settings.lease_ttl_ms, self.token_watch)
        return [
            WebSocketRoute("/v1/workers/connect", endpoint.handle),
            Route("/v1/tasks/{task_id}/attempts", wrap("attempts", routes.list_attempts),
                  methods=["GET"]),  # fmt: skip
            Route("/v1/tasks/{task_id}/attempts/{attempt_id}", wrap("attempt", routes.get_attempt),
                  methods=["GET"]),  # fmt: skip
            Route("/v1/queues", wrap("queues", self.inspection_routes.queues), methods=["GET"]),
            Route("/v1/workers", wrap("workers", self.inspection_routes.workers),
                  methods=["GET"]),  # fmt: skip
            Route("/readyz", readiness(self.db, self.gauges.failures.inc), methods=["GET"]),
        ]

    async def _settled_among(self, task_ids: Sequence[str]) -> set[str]:
        return await self.inspection.settled_among(task_ids)

    async def start(self) -> None:
        if self.peers is not None:
            await self.peers.start()
        self.hub.start()
        self.token_watch.start()
        self.waiters.start()

    async def stop(self) -> None:
        await self.token_watch.stop()
        await self.waiters.stop()
        await self.hub.stop()
        if self.peers is not None:
            await self.peers.stop()
        await self.batcher.stop()


def _peer_hints(
    db: Database, settings: ExecutionSettings, hub: Hub, registry: CollectorRegistry
) -> PeerHints | None:
    """Cross-process wake-ups between the server processes of one MySQL/MariaDB database
    (docs/orbit/scaling.md); none on SQLite (one process)."""
    if db.dialect is not Dialect.MYSQL:
        return None
    sent = Counter("orbit_peer_hints_sent", "Wake-up hints sent to other server processes "
                   "(datagrams)", registry=registry)  # fmt: skip
    heard = Counter("orbit_peer_hints_received", "Wake-up hints received from other server "
                    "processes", registry=registry)  # fmt: skip
    ignored = Counter("orbit_peer_hints_ignored", "Datagrams on the hint port that were not "
                      "valid hints", registry=registry)  # fmt: skip
    failed = Counter("orbit_peer_registration_failures", "Server registration rounds that "
                     "failed (the database was unreachable)", registry=registry)  # fmt: skip
    counters = PeerCounters(sent.inc, heard.inc, ignored.inc, failed.inc)
    peers = PeerHints(db, hub.hinted, bind_host=settings.peer_host, bind_port=settings.peer_port,
                      advertise_host=settings.peer_advertise, counters=counters)  # fmt: skip
    hub.relay = peers.announce
    return peers
