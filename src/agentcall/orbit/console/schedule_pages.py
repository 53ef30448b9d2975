"""The console's schedule pages and actions: the Schedules list (`/ui/schedules`), a
schedule's page with its recent firings and next nominal times (`/ui/schedules/{id}`), and
its actions pause, resume, trigger now and delete (POST `/ui/schedules/{id}/{action}`).
Reading needs `schedules:read`, acting `schedules:write` (queue scopes apply to the target
queue, as in the API); actions carry the session's CSRF token and, for trigger, an idempotency
key made when the form was rendered (`agentcall.orbit.console.actions`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from agentcall.orbit.console.actions import Actions
from agentcall.orbit.console.headers import HEADERS
from agentcall.orbit.console.pages import Pages, Session
from agentcall.orbit.console.schedule_views import (
    FIRINGS,
    NEXT_TIMES,
    PAGE,
    READ,
    WRITE,
    ScheduleDesk,
    allowed,
    require,
)
from agentcall.orbit.domain.errors import InvalidArgument, NotFound
from agentcall.orbit.domain.idempotency import check_key
from agentcall.orbit.domain.ids import is_id, new_id

STATES = ("active", "paused")
ACTIONS = ("pause", "resume", "trigger", "delete")
MAX_NOTE = 1000


def schedule_id_from_path(text: str) -> str:
    """A malformed ID in a path names no schedule: 404, like a missing one."""
    if not is_id(text):
        raise NotFound("schedule not found")
    return text


class SchedulePages:
    def __init__(self, pages: Pages, actions: Actions, desk: ScheduleDesk) -> None:
        self.pages = pages
        self.actions = actions
        self.desk = desk

    def page(
        self, handler: Callable[[Request, Session], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """Signed in with schedules:read, or sent to the sign-in page; errors become a page."""

        async def run(request: Request) -> Response:
            session: Session | None = None
            try:
                session = await self.pages.session(request)
                if session is None:
                    return RedirectResponse("/ui/signin", status_code=303, headers=HEADERS)
                require(session.principal, READ)
                return await handler(request, session)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a page (logged)
                return self.pages.error(request, session, exc)

        return run

    async def listing(self, request: Request, session: Session) -> Response:
        params = request.query_params
        unknown = set(params) - {"state", "cursor", "done"}
        if unknown:
            raise InvalidArgument("unknown query parameter", sorted(unknown)[0])
        state = params.get("state") if params.get("state") in STATES else None
        cursor = params.get("cursor") or None
        found = await self.desk.page(session.principal, state, cursor, PAGE)
        return self.pages.render(
            request,
            "schedules.html",
            session=session,
            schedules=found.items,
            next_cursor=found.next_cursor,
            state=state,
            states=STATES,
            done=params.get("done"),
            refresh=0 if cursor else 5000,
        )

    async def detail(self, request: Request, session: Session) -> Response:
        schedule_id = schedule_id_from_path(request.path_params["schedule_id"])
        principal = session.principal
        schedule = await self.desk.get(principal, schedule_id)
        firings = await self.desk.firings(principal, schedule_id, FIRINGS)
        upcoming = await self.desk.next_times(principal, schedule_id, NEXT_TIMES)
        return self.pages.render(
            request,
            "schedule.html",
            session=session,
            schedule=schedule,
            firings=firings,
            upcoming=upcoming,
            can_write=allowed(principal, WRITE),
            done=request.query_params.get("done"),
            key=f"console-{new_id()}",
            refresh=3000,
        )

    async def act(self, request: Request) -> Response:
        """POST /ui/schedules/{schedule_id}/{action}: pause, resume, trigger or delete."""
        session, form, refusal = await self.actions.checked(request)
        if refusal is not None or session is None:
            return refusal or self.pages.signin_page(request, 401, "sign in first")
        action = request.path_params["action"]
        try:
            schedule_id = schedule_id_from_path(request.path_params["schedule_id"])
            back = await self._run(session, action, schedule_id, form)
        except Exception as exc:  # noqa: BLE001 - a page (logged when not an Orbit refusal)
            return self.pages.error(request, session, exc)
        return RedirectResponse(f"{back}?done={action}", status_code=303, headers=HEADERS)

    async def _run(
        self, session: Session, action: str, schedule_id: str, form: dict[str, str]
    ) -> str:
        """Runs the action; answers the page to go back to."""
        principal, request_id = session.principal, new_id()
        if action not in ACTIONS:
            raise InvalidArgument("the action must be pause, resume, trigger or delete", "action")
        require(principal, WRITE)
        if action == "trigger":
            key = check_key(form.get("key"))
            await self.desk.trigger(principal, schedule_id, key, request_id)
            return f"/ui/schedules/{schedule_id}"
        revision = _revision(form.get("revision", ""))
        if action == "pause":
            note = form.get("note", "").strip() or None
            if note is not None and len(note) > MAX_NOTE:
                raise InvalidArgument(f"the note exceeds {MAX_NOTE} characters", "note")
            await self.desk.pause(principal, schedule_id, revision, note, request_id)
        elif action == "resume":
            await self.desk.resume(principal, schedule_id, revision, request_id)
        else:
            await self.desk.delete(principal, schedule_id, revision, request_id)
            return "/ui/schedules"
        return f"/ui/schedules/{schedule_id}"


def _revision(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 18 or int(text) < 1:
        raise InvalidArgument("must be the schedule's revision, a positive integer", "revision")
    return int(text)
