"""The engine of one server process: the batcher, kernel, hub and its loops, the WebSocket and
history routes, and the submit hook that wakes the dispatcher, built from the server's
`ExecutionSettings`. `agentcall.orbit.assembly.server.create_app` calls `ExecutionService` (one
object, three calls: routes, start, stop) and hands its hooks (`on_accepted`, `handoff`) to the use
cases (`Operations`)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial

from prometheus_client import CollectorRegistry, Counter
from starlette.routing import BaseRoute, Route, WebSocketRoute

from agentcall.orbit.api import attempt_routes as routes
from agentcall.orbit.api.app import Wrap
from agentcall.orbit.api.inspection_routes import InspectionRoutes, readiness
from agentcall.orbit.api.observability import ExecutionMetrics, TaskGauges, inspection_failures
from agentcall.orbit.api.queue_routes import QueueRoutes
from agentcall.orbit.api.worker_socket import WorkerEndpoint
from agentcall.orbit.assembly.bulk_runner import BulkRunner
from agentcall.orbit.domain.backoff import JitteredBackoff
from agentcall.orbit.domain.flow_settings import QueueFlow
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.execution.batch import Batcher
from agentcall.orbit.execution.eager import EagerDispatch
from agentcall.orbit.execution.flow import FlowControl, Wakes
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.inspection import Inspection, settled_among
from agentcall.orbit.execution.kernel import Kernel, KernelSettings, handlers
from agentcall.orbit.execution.offers import OfferCounters, OfferDesk
from agentcall.orbit.execution.peers import HintSender, Listener, PeerCounters, PeerHints
from agentcall.orbit.execution.remote_eager import RemoteEager
from agentcall.orbit.execution.token_watch import TokenWatch
from agentcall.orbit.execution.upkeep import Upkeep
from agentcall.orbit.execution.waiters import Waiters
from agentcall.orbit.execution.worker_directory import WorkerDirectory
from agentcall.orbit.settings import ExecutionSettings
from agentcall.orbit.store.bulk_store import SqlBulkStore
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import require_current
from agentcall.orbit.store.submit_group import Handoff
from agentcall.orbit.store.task_store import SqlTaskStore
from agentcall.orbit.usecases.operations import Operations


class ExecutionService:
    """Components are built in dependency order and each gets what it uses as a constructor
    argument. Where several server processes share the database (`Database.shared`) the
    cross-process parts join: the hint socket's sender (which the hub relays submits to), the
    offering side of remote eager dispatch (which the hub hands idle links to), the worker
    directory, and the registration round that ties them to the other processes (built last:
    its datagrams end in the hub and the remote eager dispatch)."""

    def __init__(
        self,
        db: Database,
        settings: ExecutionSettings,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        lanes = self.settings.lanes or db.write_lanes(4)
        kernel_settings = KernelSettings(
            self.settings.lease_ttl_ms, self.settings.reconnect_grace_ms, JitteredBackoff()
        )
        registry = registry or CollectorRegistry()
        self.flow_wakes = Wakes()
        self.flow = FlowControl(wake=self.flow_wakes.later)
        kernel = Kernel(kernel_settings, flow=self.flow)
        self.batcher = Batcher(db, lanes, handlers=handlers(kernel))
        metrics = _counters(registry)
        self.token_watch = TokenWatch(
            db, self.settings.worker_token_check_ms / 1000, on_ended=metrics.revoked.inc
        )
        failures = inspection_failures(registry)
        self.waiters = Waiters(partial(settled_among, db), on_failure=failures.inc)
        cross = _CrossProcess(db, settings, registry) if db.shared else None
        self.offers = cross.desk if cross is not None else None
        self.hub = Hub(
            self.batcher,
            kernel,
            Upkeep(kernel_settings),
            tick_s=self.settings.dispatch_tick_ms / 1000,
            sweep_s=self.settings.sweep_interval_ms / 1000,
            on_grants=metrics.leases.inc,
            observer=ExecutionMetrics(registry, self.waiters),
            on_empty=metrics.empty.inc,
            relay=cross.sender.announce if cross is not None else lambda queue_ids: None,
            offers=self.offers,
        )
        self.flow_wakes.bind(self.hub.hinted)
        directory = WorkerDirectory(db, self.hub, cross.server_id) if cross else None
        # what the inspection API, the console and /metrics read (counts cached, shared)
        self.inspection = Inspection(db, self.hub, self.waiters, directory=directory)
        self.inspection_routes = InspectionRoutes(self.inspection, self.flow.controls)
        self.gauges = TaskGauges(registry, self.inspection, failures, self.flow)
        # the hooks of `Operations`: a committed submit wakes the dispatcher for its queue;
        # a submit group leases to an idle connection in its transaction (of this process,
        # or one another process offered)
        self.on_accepted: Callable[[str], None] = self.hub.notify
        self.handoff: Handoff | None = None
        remote = cross.remote if cross is not None else None
        if self.settings.eager:
            self.handoff = EagerDispatch(
                self.hub, self.settings.lease_ttl_ms, metrics.eager.inc, remote, self.flow
            ).claim
        self.peers = cross.registration(self.hub, directory) if cross is not None else None
        self.bulk = self._bulk_runner(cross.server_id if cross is not None else new_id())

    def _bulk_runner(self, server_id: str) -> BulkRunner:
        """The runner of bulk operations (docs/orbit/bulk.md) of this process."""
        return BulkRunner(
            SqlBulkStore(self.db),
            SqlTaskStore(self.db),
            self.db.write_lanes(8),
            server_id,
            self.settings.bulk_claim_ms / 1000,
            wake=self.hub.notify,
            tell_cancel=self.hub.tell_cancel,
            changed=self.waiters.wake,
        )

    def routes(self, wrap: Wrap, ops: Operations) -> list[BaseRoute]:
        endpoint = WorkerEndpoint(ops, self.hub, self.settings.lease_ttl_ms, self.token_watch)
        queues = QueueRoutes(self.flow_changed)
        return [
            WebSocketRoute("/v1/workers/connect", endpoint.handle),
            Route(
                "/v1/tasks/{task_id}/attempts",
                wrap("attempts", routes.list_attempts),
                methods=["GET"],
            ),
            Route(
                "/v1/tasks/{task_id}/attempts/{attempt_id}",
                wrap("attempt", routes.get_attempt),
                methods=["GET"],
            ),
            Route("/v1/queues", wrap("queues", self.inspection_routes.queues), methods=["GET"]),
            Route("/v1/queues/{queue_id}", wrap("queue", queues.get), methods=["GET"]),
            Route("/v1/queues/{queue_id}", wrap("queue_set", queues.patch), methods=["PATCH"]),
            Route("/v1/workers", wrap("workers", self.inspection_routes.workers), methods=["GET"]),
            Route(
                "/readyz",
                readiness(partial(require_current, self.db), self.gauges.failures.inc),
                methods=["GET"],
            ),
        ]

    def flow_changed(self, queue: QueueFlow) -> None:
        """Settings changed here apply at once in this process (the others re-read theirs
        within `FlowControl.refresh_s`); a lease round runs for the queue."""
        self.flow.changed(queue)
        self.hub.notify(queue.queue_id)

    async def start(self) -> None:
        if self.peers is not None:
            await self.peers.start()
        self.hub.start()
        self.token_watch.start()
        self.waiters.start()
        self.bulk.start()

    async def stop(self) -> None:
        await self.bulk.stop()
        await self.token_watch.stop()
        await self.waiters.stop()
        await self.hub.stop()
        if self.peers is not None:
            await self.peers.stop()
        if self.offers is not None:
            await self.offers.stop()
        await self.batcher.stop()


@dataclass(frozen=True, slots=True)
class _Counters:
    leases: Counter
    empty: Counter
    revoked: Counter
    eager: Counter


def _counters(registry: CollectorRegistry) -> _Counters:
    def counter(name: str, text: str) -> Counter:
        return Counter(name, text, registry=registry)

    return _Counters(
        counter("orbit_leases", "Leases granted to workers"),
        counter(
            "orbit_lease_asks_empty",
            "Lease asks of the dispatcher that found no task "
            "(another process or connection took it first, or none was ready)",
        ),
        counter(
            "orbit_worker_sessions_revoked",
            "Worker sessions ended because their token was revoked or expired",
        ),
        counter(
            "orbit_eager_leases",
            "Leases granted in the submit's transaction (eager "
            "dispatch), also counted in orbit_leases",
        ),
    )


class _CrossProcess:
    """The parts that join where several server processes share the database
    (docs/orbit/scaling.md): this process's id, the hint socket's sender, and, with remote
    eager dispatch on (`ORBIT_REMOTE_EAGER` and eager dispatch), its offering and claiming
    sides."""

    def __init__(self, db: Database, settings: ExecutionSettings, registry: CollectorRegistry):
        def counter(name: str, text: str) -> Callable[..., None]:
            return Counter(name, text, registry=registry).inc

        self.db = db
        self.settings = settings
        self.server_id = new_id()
        self.counters = PeerCounters(
            counter(
                "orbit_peer_hints_sent", "Wake-up hints sent to other server processes (datagrams)"
            ),
            counter(
                "orbit_peer_hints_received", "Wake-up hints received from other server processes"
            ),
            counter(
                "orbit_peer_hints_ignored", "Datagrams on the hint port that were not valid hints"
            ),
            counter(
                "orbit_peer_registration_failures",
                "Server registration rounds that failed (the database was unreachable)",
            ),
        )
        self.sender = HintSender(self.counters)
        self.desk: OfferDesk | None = None
        self.remote: RemoteEager | None = None
        if settings.eager and settings.remote_eager:
            offers = OfferCounters(
                counter(
                    "orbit_worker_offers_published",
                    "Idle worker slots of this process offered to the other server processes",
                ),
                counter(
                    "orbit_worker_offers_withdrawn",
                    "Offered slots this process took back "
                    "for its own work before another process claimed them",
                ),
                counter(
                    "orbit_remote_eager_leases",
                    "Leases delivered to workers of this "
                    "process that another process's submit granted (remote eager "
                    "dispatch), also counted in orbit_leases",
                ),
            )
            self.desk = OfferDesk(db, self.server_id, self.sender.offered, self.sender.live, offers)
            claims = counter(
                "orbit_remote_eager_claims",
                "Tasks submitted here and leased in "
                "the submit's transaction to another process's offered slot",
            )
            self.remote = RemoteEager(
                settings.lease_ttl_ms, self.sender.gone, self.sender.claim, claims
            )

    def registration(self, hub: Hub, directory: WorkerDirectory | None) -> PeerHints:
        """The registration round and the hint socket: datagrams heard end in `hub` (hints,
        claims of this process's offers) and in the remote eager dispatch (offers)."""
        offered = self.remote.offered if self.remote is not None else lambda queue_ids: None
        listener = Listener(hub.hinted, offered, hub.claimed)
        settings, desk = self.settings, self.desk
        also = directory.record if directory is not None else None
        offers: Callable[[], Collection[str]] = desk.offered_queues if desk else lambda: ()
        return PeerHints(
            self.db,
            self.server_id,
            self.sender,
            listener,
            bind_host=settings.peer_host,
            bind_port=settings.peer_port,
            advertise_host=settings.peer_advertise,
            also=also,
            offered=offers,
        )
