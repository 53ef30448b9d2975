"""The console's routes under `/ui`, assembled by `agentcall.orbit.assembly.server.create_app`."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from agentcall.orbit.console.actions import Actions, Hooks
from agentcall.orbit.console.bulk_pages import BulkPages
from agentcall.orbit.console.pages import HERE, Pages
from agentcall.orbit.console.schedule_pages import SchedulePages
from agentcall.orbit.console.schedule_views import ScheduleDesk
from agentcall.orbit.execution.inspection import Inspection
from agentcall.orbit.usecases.console_sessions import ConsoleSessions
from agentcall.orbit.usecases.operations import Operations

__all__ = ["Hooks", "console_routes"]


def console_routes(
    ops: Operations,
    sessions: ConsoleSessions,
    inspection: Inspection,
    hooks: Hooks,
    on_failure: Callable[[], None],
    schedules: ScheduleDesk | None = None,
) -> list[BaseRoute]:
    """The console's routes; the Schedules pages only when the server has `schedules`."""
    pages = Pages(ops, sessions, inspection, on_failure, hooks.controls)
    actions = Actions(pages, hooks)
    bulk = BulkPages(pages, actions, hooks.bulk_wake)
    extra = [] if schedules is None else _schedule_routes(SchedulePages(pages, actions, schedules))

    async def slash(request: Request) -> Response:
        return RedirectResponse("/ui", status_code=308)

    return [
        Route("/ui", pages.page(pages.overview), methods=["GET"]),
        Route("/ui/", slash, methods=["GET"]),
        Route("/ui/signin", pages.signin_form, methods=["GET"]),
        Route("/ui/signin", actions.signin, methods=["POST"]),
        Route("/ui/signout", actions.signout, methods=["POST"]),
        Route("/ui/review", pages.page(pages.review), methods=["GET"]),
        Route("/ui/audit", pages.page(pages.audit), methods=["GET"]),
        Route("/ui/queues/{queue_id}", pages.page(pages.queue), methods=["GET"]),
        Route("/ui/queues/{queue_id}/flow", pages.page(pages.queue_flow), methods=["GET"]),
        Route("/ui/queues/{queue_id}/flow", actions.set_flow, methods=["POST"]),
        Route("/ui/tasks/{task_id}", pages.page(pages.task), methods=["GET"]),
        Route("/ui/tasks/{task_id}/{action}", actions.act, methods=["POST"]),
        Route("/ui/queues/{queue_id}/bulk", pages.page(bulk.new), methods=["GET"]),
        Route("/ui/queues/{queue_id}/bulk", bulk.start, methods=["POST"]),
        Route("/ui/bulk", pages.page(bulk.listing), methods=["GET"]),
        Route("/ui/bulk/{operation_id}", pages.page(bulk.detail), methods=["GET"]),
        Route("/ui/bulk/{operation_id}/cancel", bulk.cancel, methods=["POST"]),
        *extra,
        Mount("/ui/static", StaticFiles(directory=HERE / "static"), name="console-static"),
    ]


def _schedule_routes(schedules: SchedulePages) -> list[BaseRoute]:
    schedules.pages.env.globals["schedules_enabled"] = True  # the nav link
    return [
        Route("/ui/schedules", schedules.page(schedules.listing), methods=["GET"]),
        Route("/ui/schedules/{schedule_id}", schedules.page(schedules.detail), methods=["GET"]),
        Route("/ui/schedules/{schedule_id}/{action}", schedules.act, methods=["POST"]),
    ]
