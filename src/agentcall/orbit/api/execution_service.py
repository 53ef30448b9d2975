"""Wiring of the execution side into the API process: the batcher, kernel, hub and its loops,
the WebSocket and history routes, and the submit hook that wakes the dispatcher, built from
the server's `ExecutionSettings`. `orbit.api.app.create_app` calls `ExecutionService` (one
object, three calls: routes, start, stop)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry, Counter
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from agentcall.orbit.api import attempt_routes as routes
from agentcall.orbit.api.routes import Context
from agentcall.orbit.api.worker_socket import WorkerEndpoint
from agentcall.orbit.domain.backoff import JitteredBackoff
from agentcall.orbit.execution.batch import Batcher, Many
from agentcall.orbit.execution.eager import EagerDispatch
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.kernel import Kernel, KernelSettings
from agentcall.orbit.execution.upkeep import Upkeep
from agentcall.orbit.settings import ExecutionSettings
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.operations import Operations

Handler = Callable[[Request, Context], Awaitable[Response]]
Wrap = Callable[[str, Handler], Callable[[Request], Awaitable[Response]]]


class ExecutionService:
    def __init__(
        self,
        db: Database,
        ops: Operations,
        settings: ExecutionSettings,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.settings = settings
        lanes = self.settings.lanes or (1 if db.dialect is Dialect.SQLITE else 4)
        kernel_settings = KernelSettings(self.settings.lease_ttl_ms,
                                         self.settings.reconnect_grace_ms,
                                         JitteredBackoff())  # fmt: skip
        kernel = Kernel(db.dialect, kernel_settings)
        kinds: dict[str, Many] = {
            "lease": kernel.lease_many,
            "start": kernel.start_many,
            "finish": kernel.finish_many,
        }
        self.batcher = Batcher(db, lanes, kinds=kinds)
        registry = registry or CollectorRegistry()
        leases = Counter("orbit_leases", "Leases granted to workers", registry=registry)
        self.hub = Hub(
            self.batcher,
            kernel,
            Upkeep(db.dialect, kernel_settings),
            tick_s=self.settings.dispatch_tick_ms / 1000,
            sweep_s=self.settings.sweep_interval_ms / 1000,
            on_grants=leases.inc,
        )
        self.endpoint = WorkerEndpoint(ops, self.hub, self.settings.lease_ttl_ms)
        ops.on_accepted = self.hub.notify  # a committed submit wakes the dispatcher for its queue
        if ops.groups is not None and self.settings.eager:
            eager = Counter("orbit_eager_leases", "Leases granted in the submit's transaction "
                            "(eager dispatch), also counted in orbit_leases", registry=registry)
            ops.groups.handoff = EagerDispatch(self.hub, self.settings.lease_ttl_ms,
                                               eager.inc).claim  # fmt: skip

    def routes(self, wrap: Wrap) -> list[BaseRoute]:
        return [
            WebSocketRoute("/v1/workers/connect", self.endpoint.handle),
            Route("/v1/tasks/{task_id}/attempts", wrap("attempts", routes.list_attempts),
                  methods=["GET"]),  # fmt: skip
            Route("/v1/tasks/{task_id}/attempts/{attempt_id}", wrap("attempt", routes.get_attempt),
                  methods=["GET"]),  # fmt: skip
        ]

    async def start(self) -> None:
        self.batcher.start()
        self.hub.start()

    async def stop(self) -> None:
        await self.hub.stop()
        await self.batcher.stop()
