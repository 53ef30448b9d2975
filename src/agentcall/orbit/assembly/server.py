"""The one assembly point of Orbit's server: settings → store → engine → use cases → app.
`orbit serve` (one process), the uvicorn factory of `orbit serve --workers N`
(`from_environment`), the tests and the benchmarks build the server here and nowhere else."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Route

from agentcall import logs
from agentcall.orbit.api import audit_routes, routes, submit_metrics
from agentcall.orbit.api.app import (
    SUBMIT_PATH,
    Metrics,
    OrbitApp,
    Wrap,
    endpoints,
    not_found,
    service_routes,
)
from agentcall.orbit.api.bulk_routes import BulkRoutes
from agentcall.orbit.api.control_routes import ControlRoutes
from agentcall.orbit.api.log_metrics import LogCounter
from agentcall.orbit.api.schedule_routes import ScheduleRoutes
from agentcall.orbit.api.transport import DRAIN
from agentcall.orbit.assembly.engine import ExecutionService
from agentcall.orbit.assembly.schedule_desk import ScheduleDeskService
from agentcall.orbit.assembly.schedules import ScheduleMetrics, ScheduleRunner, schedule_runner
from agentcall.orbit.console.edge import ConsoleEdge
from agentcall.orbit.console.routes import Hooks, console_routes
from agentcall.orbit.domain.sessions import SessionTimes
from agentcall.orbit.settings import ServerSettings, from_environ
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import require_current
from agentcall.orbit.store.schedules import SqlSchedules
from agentcall.orbit.store.token_cache import TokenCache
from agentcall.orbit.telemetry import provider
from agentcall.orbit.usecases.console_sessions import ConsoleSessions
from agentcall.orbit.usecases.operations import Operations

log = logging.getLogger("orbit.api")
STOP_TIMEOUT_S = 15.0  # the execution side's stop at shutdown (after the graceful HTTP stop)
# the collector's young-generation threshold once started (CPython's default: 700 new objects).
# A busy server allocates thousands of short-lived containers a second, nearly all freed by
# their reference counts; at 700 the collector ran some 25 times a second and took 3-4 % of
# the server's CPU in bench/orbit_workers.py's submit phase, at 10,000 under 1 %. Cycles are
# still collected, only less often.
YOUNG_GC_THRESHOLD = 10_000


def open_database(settings: ServerSettings) -> Database:
    """The store of one server process: its database pool, from the settings."""
    return Database.open(settings.database_url, pool_size=settings.pool_size)


def create_app(
    db: Database, settings: ServerSettings | None = None, *, fast_submit: bool = True
) -> OrbitApp:
    """The app of one server process on `db`, built from `settings` (default:
    `ServerSettings()`): the engine (`ExecutionService`), the use cases (`Operations`, the
    console's sessions), then the app and its routes. It refuses to start on an unmigrated
    database. `fast_submit=False` serves `POST /v1/tasks` through the router like every
    other route (the tests compare both)."""
    settings = settings or ServerSettings()
    if settings.tracing:
        provider.enable("orbit")
    metrics = Metrics()
    execution = ExecutionService(db, settings.execution, registry=metrics.registry)
    ops = Operations(
        db,
        token_cache=TokenCache(settings.token_cache_ms / 1000),
        submit_lanes=settings.submit_lanes,
        on_accepted=execution.on_accepted,
        handoff=execution.handoff,
    )
    submit_metrics.register(metrics.registry, ops)
    schedule_routes, schedule_desk, runner = _schedules(db, ops, metrics, execution)
    control = ControlRoutes(
        execution.hub.tell_cancel, execution.hub.notify, changed=execution.waiters.wake
    )
    console = settings.console
    times = SessionTimes(timedelta(seconds=console.idle_s), timedelta(seconds=console.max_age_s))
    sessions = ConsoleSessions(db, times, ops.authenticate)
    endpoint = endpoints(ops, metrics, settings.access_log)
    submit = endpoint("submit", routes.submit_task)
    app = OrbitApp(
        fast_submit,
        execution.inspection,
        routes=[
            Route(SUBMIT_PATH, submit, methods=["POST"]),
            *_task_routes(endpoint, control, execution),
            *_schedule_routes(endpoint, schedule_routes),
            *_bulk_routes(endpoint, BulkRoutes(execution.bulk.wake)),
            Route("/v1/audit", endpoint("audit", audit_routes.list_entries), methods=["GET"]),
            *execution.routes(endpoint, ops),
            *service_routes(metrics, execution.gauges.refresh),
            *console_routes(
                ops,
                sessions,
                execution.inspection,
                _console_hooks(execution),
                execution.gauges.failures.inc,
                schedule_desk,
            ),
        ],
        exception_handlers={HTTPException: not_found(ops)},
        lifespan=_lifespan(db, execution, runner, LogCounter(metrics.registry)),
        middleware=[Middleware(ConsoleEdge, console.allowed_hosts, console.trusted_proxies)],
    )
    return app


def _schedules(
    db: Database, ops: Operations, metrics: Metrics, execution: ExecutionService
) -> tuple[ScheduleRoutes, ScheduleDeskService, ScheduleRunner]:
    """The schedules' routes and console desk over one store, and this process's firing
    runner, which the routes wake after a change and whose counters they add to."""
    store = SqlSchedules(db)
    counters = ScheduleMetrics(metrics.registry)
    runner = schedule_runner(db, ops, counters, execution.hub.tell_cancel)
    routes = ScheduleRoutes(
        store, ops.submit, changed=lambda _: runner.wake(), counted=counters.counted
    )
    return routes, ScheduleDeskService(store, ops.submit), runner


def _console_hooks(execution: ExecutionService) -> Hooks:
    """What the console's actions tell the engine."""
    return Hooks(
        execution.hub.tell_cancel,
        execution.hub.notify,
        execution.waiters.wake,
        flow_changed=execution.flow_changed,
        controls=execution.flow.controls,
        bulk_wake=execution.bulk.wake,
    )


def _task_routes(
    endpoint: Wrap, control: ControlRoutes, execution: ExecutionService
) -> list[Route]:
    """The task routes after the submit: list, batch, cancel, retry, resolve, get."""
    return [
        Route("/v1/tasks", endpoint("list", routes.list_tasks), methods=["GET"]),
        Route("/v1/tasks:batch", endpoint("batch", control.batch), methods=["POST"]),
        Route(
            "/v1/tasks/{task_id}:cancel",
            endpoint("cancel", control.cancel),
            methods=["POST"],
        ),
        Route("/v1/tasks/{task_id}:retry", endpoint("retry", control.retry), methods=["POST"]),
        Route(
            "/v1/tasks/{task_id}:resolve",
            endpoint("resolve", control.resolve),
            methods=["POST"],
        ),
        Route(
            "/v1/tasks/{task_id}",
            endpoint("get", execution.inspection_routes.get_task),
            methods=["GET"],
        ),
    ]


def _schedule_routes(endpoint: Wrap, schedules: ScheduleRoutes) -> list[Route]:
    """The schedule routes (docs/orbit/schedules.md); a schedule's actions before the
    schedule itself."""
    one = "/v1/schedules/{schedule_id}"
    return [
        Route("/v1/schedules", endpoint("schedule_create", schedules.create), methods=["POST"]),
        Route("/v1/schedules", endpoint("schedule_list", schedules.list), methods=["GET"]),
        Route(f"{one}:pause", endpoint("schedule_pause", schedules.pause), methods=["POST"]),
        Route(f"{one}:resume", endpoint("schedule_resume", schedules.resume), methods=["POST"]),
        Route(f"{one}:trigger", endpoint("schedule_trigger", schedules.trigger), methods=["POST"]),
        Route(
            f"{one}:backfill", endpoint("schedule_backfill", schedules.backfill), methods=["POST"]
        ),
        Route(f"{one}/next", endpoint("schedule_next", schedules.next_times), methods=["GET"]),
        Route(f"{one}/firings", endpoint("schedule_firings", schedules.firings), methods=["GET"]),
        Route(one, endpoint("schedule", schedules.get), methods=["GET"]),
        Route(one, endpoint("schedule_update", schedules.patch), methods=["PATCH"]),
        Route(one, endpoint("schedule_delete", schedules.delete), methods=["DELETE"]),
    ]


def _bulk_routes(endpoint: Wrap, bulk: BulkRoutes) -> list[Route]:
    """The bulk operation routes (docs/orbit/bulk.md)."""
    base = "/v1/bulk-operations"
    one = base + "/{operation_id}"
    return [
        Route(base, endpoint("bulk_list", bulk.list), methods=["GET"]),
        Route(base, endpoint("bulk_start", bulk.start), methods=["POST"]),
        Route(base + ":preview", endpoint("bulk_preview", bulk.preview), methods=["POST"]),
        Route(one, endpoint("bulk_get", bulk.get), methods=["GET"]),
        Route(one + "/tasks", endpoint("bulk_tasks", bulk.tasks), methods=["GET"]),
        Route(one + ":cancel", endpoint("bulk_cancel", bulk.cancel), methods=["POST"]),
    ]


def from_environment() -> OrbitApp:
    """The app factory for `uvicorn --factory` with several worker processes: each process
    builds its own database pool and app from the settings that `orbit serve --workers N`
    exported to its environment (`agentcall.orbit.settings.export`)."""
    settings = from_environ()
    logs.configure(fmt=settings.log_format, logger="orbit")
    return create_app(open_database(settings), settings)


def _lifespan(
    db: Database, execution: ExecutionService, runner: ScheduleRunner, counter: LogCounter
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[dict[str, Any]]]:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        counter.attach()  # every warning and error Orbit logs is counted
        await require_current(db)
        await execution.start()
        runner.start()
        # what startup made (modules, SQLAlchemy's tables and compiled caches) leaves the
        # collector's generations: the collections requests trigger no longer scan it
        gc.freeze()
        gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
        log.info("orbit api ready", extra={"dialect": db.dialect.value})
        yield {DRAIN: execution.waiters.drain}  # called when a graceful stop begins
        try:  # bounded: an unreachable database must not keep a stopping server alive
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await runner.stop()
                await execution.stop()
        except TimeoutError:
            log.error(
                "the execution loops did not stop within %.0f s; exiting anyway "
                "(leases of this process expire on their own)",
                STOP_TIMEOUT_S,
            )
        await db.close()
        counter.detach()

    return lifespan
