"""The console's pages (GET): sign-in, overview, queue, task, review inbox. Each request
resumes its server-side session (`agentcall.orbit.usecases.console_sessions`: the session and
its token are checked afresh); a page that is refreshed live answers only its `<main>` when
asked with `X-Orbit-Fragment: 1`."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agentcall.orbit.console import reads, times
from agentcall.orbit.console.chart import Chart
from agentcall.orbit.console.headers import HEADERS
from agentcall.orbit.console.queue_flow import FlowForm, form_of
from agentcall.orbit.console.search import read_search, refused
from agentcall.orbit.console.session import (
    COOKIE,
    SIGNIN_COOKIE,
    SIGNIN_MAX_AGE_S,
    SIGNIN_PATH,
    csrf_token,
    new_signin_nonce,
    signin_token,
)
from agentcall.orbit.domain.audit import AuditQuery
from agentcall.orbit.domain.cursor import decode_cursor, encode_cursor
from agentcall.orbit.domain.errors import (
    BodyTooLarge,
    Conflict,
    InvalidArgument,
    NotFound,
    OrbitError,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    UnsupportedMediaType,
)
from agentcall.orbit.domain.ids import check_id, new_id, task_id_from_path
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.execution.inspection import Inspection
from agentcall.orbit.usecases.audit import list_audit
from agentcall.orbit.usecases.console_sessions import ConsoleSessions
from agentcall.orbit.usecases.operations import Operations
from agentcall.orbit.usecases.queue_flow import read_queue, task_waiting_reason

log = logging.getLogger("agentcall.orbit.console")
HERE = Path(__file__).parent
STATES = [state.value for state in TaskState]
CHART_S = 5.0
AUDIT_PAGE = 50
LIVE = frozenset({TaskState.WAITING, TaskState.LEASED, TaskState.RUNNING})


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str  # the cookie's value: the browser's, never the API token
    principal: Principal
    csrf: str

    def can(self, permission: Permission) -> bool:
        return permission in self.principal.permissions


def environment() -> Environment:
    """Times read relative to now, with the absolute time on hover
    (`agentcall.orbit.console.times`)."""
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
    env.filters["when"] = lambda value: times.moment(value, datetime.now(UTC))
    env.filters["age"] = lambda value: times.age(value, datetime.now(UTC))
    env.filters["utc"] = lambda value: "" if value is None else format_time(value)
    env.filters["visible"] = visible
    env.filters["json_text"] = lambda value: dumps(dict(value)) if value else ""
    return env


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(value: object) -> str:
    """Control characters as `\\xNN` text: a stored value shows as what it is (escaping
    HTML is autoescape's)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


class Pages:
    def __init__(
        self,
        ops: Operations,
        sessions: ConsoleSessions,
        inspection: Inspection,
        on_failure: Callable[[], None],
        controls: Callable[[str], bool] = lambda queue_id: False,
    ) -> None:
        """`controls(queue_id)`: the queue has flow settings (its WAITING tasks say why)."""
        self.ops = ops
        self.controls = controls
        self.sessions = sessions
        self.inspection = inspection
        self.on_failure = on_failure  # a metric: failed console requests
        self.env = environment()
        self._charts: dict[frozenset[str], tuple[float, Chart]] = {}

    # ------------------------------------------------------------------ plumbing
    async def session(self, request: Request) -> Session | None:
        session_id = request.cookies.get(COOKIE)
        principal = await self.sessions.resume(session_id)
        if principal is None or session_id is None:
            return None
        return Session(session_id, principal, csrf_token(session_id))

    def render(self, request: Request, name: str, status: int = 200, **values: Any) -> Response:
        fragment = request.headers.get("x-orbit-fragment") == "1"
        html = self.env.get_template(name).render(fragment=fragment, request=request, **values)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def page(
        self, handler: Callable[[Request, Session], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """Signed in with tasks:read, or sent to the sign-in page; errors become a page."""

        async def run(request: Request) -> Response:
            session: Session | None = None
            try:
                session = await self.session(request)
                if session is None:
                    return RedirectResponse("/ui/signin", status_code=303, headers=HEADERS)
                session.principal.require(Permission.READ)
                return await handler(request, session)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a page (logged)
                return self.error(request, session, exc)

        return run

    def error(self, request: Request, session: Session | None, exc: Exception) -> Response:
        if not isinstance(exc, OrbitError) or isinstance(exc, Unavailable):
            self.on_failure()
            log.error("console request failed", exc_info=exc)
            message = "the service could not complete the request; try again"
        else:
            message = exc.message
        return self.render(
            request, "error.html", error_status(exc), session=session, message=message
        )

    # ------------------------------------------------------------------ pages
    async def signin_form(self, request: Request) -> Response:
        return self.signin_page(request, 200, None)

    def signin_page(self, request: Request, status: int, message: str | None) -> Response:
        """The sign-in form, with a new pre-session cookie and the form's token tied to it
        (`agentcall.orbit.console.session`)."""
        nonce = new_signin_nonce()
        response = self.render(
            request,
            "signin.html",
            status,
            session=None,
            message=message,
            signin_csrf=signin_token(nonce),
        )
        response.set_cookie(
            SIGNIN_COOKIE,
            nonce,
            max_age=SIGNIN_MAX_AGE_S,
            path=SIGNIN_PATH,
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
        return response

    async def overview(self, request: Request, session: Session) -> Response:
        queues = await self.inspection.queues(session.principal)
        chart = await self._chart(session.principal)
        workers = await self.inspection.workers(session.principal)
        reviews = sum(q.counts.get(TaskState.NEEDS_REVIEW.value, 0) for q in queues)
        return self.render(
            request,
            "overview.html",
            session=session,
            queues=queues,
            chart=chart,
            workers=workers,
            states=STATES,
            reviews=reviews,
            refresh=3000,
        )

    async def _chart(self, principal: Principal) -> Chart:
        """The throughput chart of these queues, shared by their viewers for CHART_S."""
        key, now = principal.queue_ids, time.monotonic()
        cached = self._charts.get(key)
        if cached is not None and now - cached[0] < CHART_S:
            return cached[1]
        chart = await reads.throughput(self.ops, principal)
        if len(self._charts) > 256:
            self._charts.clear()
        self._charts[key] = (now, chart)
        return chart

    async def queue(self, request: Request, session: Session) -> Response:
        """A queue's tasks, narrowed by the search filter of the URL (`console.search`), and
        its flow settings with what they hold back."""
        queue_id = check_id(request.path_params["queue_id"], "queue_id")
        session.principal.require_queue(queue_id)
        names = {q.id: q for q in await self.inspection.queues(session.principal)}
        report = await read_queue(self.ops.db, session.principal, queue_id)
        shown: dict[str, Any] = {
            "session": session,
            "queue": names.get(queue_id),
            "queue_id": queue_id,
            "flow": report.flow,
            "flow_status": report.status,
            "can_admin": session.can(Permission.QUEUE_ADMIN),
            "states": STATES,
        }
        try:
            found = read_search(request, queue_id)
            where = found.where
            after = None
            if found.cursor:
                after = decode_cursor(found.cursor, queue_id, where.state, where.digest())
        except InvalidArgument as exc:  # the page again, the refusal above its form
            again = refused(request, queue_id)
            return self.render(
                request, "queue.html", 400, rows=[], search=again, refusal=exc.message, **shown
            )
        canonical = found.href()[1:]
        if found.cursor is None and request.url.query != canonical:  # the form's empty fields
            target = f"/ui/queues/{queue_id}" + (f"?{canonical}" if canonical else "")
            return RedirectResponse(target, status_code=303, headers=HEADERS)
        page = await reads.queue_page(self.ops, where, after)
        next_cursor = encode_cursor(page.next_position) if page.next_position else None
        return self.render(
            request,
            "queue.html",
            rows=page.rows,
            search=found,
            next_cursor=next_cursor,
            refresh=0 if found.cursor else 3000,
            **shown,
        )

    async def task(self, request: Request, session: Session) -> Response:
        task_id = task_id_from_path(request.path_params["task_id"])
        detail = await reads.task_detail(self.ops, session.principal, task_id)
        task = detail.task
        live = task.state in LIVE
        names = {q.id: q.name for q in await self.inspection.queues(session.principal)}
        reason = None
        if task.state is TaskState.WAITING and self.controls(task.queue_id):
            reason = await self.ops.db.retrying(
                lambda: task_waiting_reason(self.ops.db, task, datetime.now(UTC))
            )
        return self.render(
            request,
            "task.html",
            waiting_reason=None if reason is None else reason.value,
            session=session,
            task=task,
            queue_name=names.get(task.queue_id, ""),
            detail=detail,
            payload=reads.pretty(task.payload_text),
            result=reads.pretty(task.result_text),
            can_cancel=session.can(Permission.CANCEL) and not task.state.terminal,
            can_review=session.can(Permission.REVIEW),
            done=request.query_params.get("done"),
            key=_new_key(),
            refresh=2000 if live else 0,
        )

    async def queue_flow(self, request: Request, session: Session) -> Response:
        """The form that replaces a queue's flow settings (queues:admin)."""
        if request.query_params:
            raise InvalidArgument("this page takes no query parameter")
        queue_id = check_id(request.path_params["queue_id"], "queue_id")
        session.principal.require(Permission.QUEUE_ADMIN)
        report = await read_queue(self.ops.db, session.principal, queue_id)
        shown = form_of(report.flow.settings)
        return self.flow_form(request, session, queue_id, report.name, report.flow.revision, shown)

    def flow_form(
        self,
        request: Request,
        session: Session,
        queue_id: str,
        name: str,
        revision: int,
        shown: FlowForm,
        message: str | None = None,
        status: int = 200,
    ) -> Response:
        """The form with the stored settings, or with what was sent and refused (`message`)."""
        return self.render(
            request,
            "queue_flow.html",
            status,
            session=session,
            queue_id=queue_id,
            queue_name=name,
            revision=revision,
            form=shown,
            message=message,
        )

    async def audit(self, request: Request, session: Session) -> Response:
        """The namespace's audit log (audit:read), filtered and paged like `GET /v1/audit`."""
        params = _params(request, {"action", "actor", "target", "cursor"})
        words = {name: params.get(name) or None for name in ("action", "actor", "target")}
        where = AuditQuery(
            session.principal.namespace_id, words["action"], words["actor"], words["target"]
        )
        cursor = params.get("cursor") or None
        page = await list_audit(self.ops.store, session.principal, where, cursor, AUDIT_PAGE)
        return self.render(
            request,
            "audit.html",
            session=session,
            entries=page.items,
            where=words,
            next_cursor=page.next_cursor,
            refresh=0,
        )

    async def review(self, request: Request, session: Session) -> Response:
        queues = await self.inspection.queues(session.principal)
        names = {q.id: q.name for q in queues}
        items = await reads.review_inbox(self.ops, session.principal, names)
        return self.render(
            request,
            "review.html",
            session=session,
            items=items,
            can_review=session.can(Permission.REVIEW),
            key=_new_key(),
            refresh=5000,
        )


def _params(request: Request, allowed: set[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in allowed or name in params:
            raise InvalidArgument("unknown or repeated query parameter", name)
        params[name] = value
    return params


def _new_key() -> str:
    """An idempotency key per rendered form: sending the same form twice acts once."""
    return f"console-{new_id()}"


_STATUS: tuple[tuple[type[OrbitError], int], ...] = (
    (InvalidArgument, 400),
    (Unauthenticated, 401),
    (PermissionDenied, 403),
    (NotFound, 404),
    (Conflict, 409),
    (BodyTooLarge, 413),
    (UnsupportedMediaType, 415),
)


def error_status(exc: Exception) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 503
