"""The console's actions (POST): sign in, sign out, cancel, retry, resolve, and a queue's flow
settings (`agentcall.orbit.console.queue_flow`). Every POST that
the browser marks as coming from another site or origin is refused (403); sign-in needs the
token tied to its pre-session cookie, every other action the session's CSRF token (403
without it). Each action runs the same use case, permission check and idempotency as its API
endpoint, with a key made when the form was rendered (sending a form twice acts once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from agentcall.orbit.console.headers import HEADERS
from agentcall.orbit.console.pages import Pages, Session, error_status
from agentcall.orbit.console.queue_flow import form_of, patch_body, sent
from agentcall.orbit.console.session import (
    COOKIE,
    PATH,
    SIGNIN_COOKIE,
    SIGNIN_PATH,
    cookie_attributes,
    cross_site,
    csrf_ok,
    signin_ok,
)
from agentcall.orbit.domain.audit import Origin, Source, bind_source, reset_source
from agentcall.orbit.domain.cancel import parse_cancel
from agentcall.orbit.domain.errors import (
    BodyTooLarge,
    Conflict,
    InvalidArgument,
    PermissionDenied,
    Unauthenticated,
    UnsupportedMediaType,
)
from agentcall.orbit.domain.flow_settings import QueueFlow
from agentcall.orbit.domain.idempotency import check_key
from agentcall.orbit.domain.ids import check_id, new_id, task_id_from_path
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.review import parse_resolve, parse_retry
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.usecases.cancel import cancel_task
from agentcall.orbit.usecases.queue_flow import read_queue, set_queue_flow
from agentcall.orbit.usecases.resolve import resolve_task
from agentcall.orbit.usecases.retry import retry_task

MAX_FORM_BYTES = 65_536
FORM_TYPE = "application/x-www-form-urlencoded"


@dataclass(frozen=True, slots=True)
class Hooks:
    """After a committed action: tell a running attempt's worker of a cancel; wake the
    dispatcher (a retried task is WAITING again); wake whoever waits for the task; apply a
    queue's new flow settings in this process (`flow_changed`). `controls(queue_id)`: the
    queue has flow settings (the task page shows a WAITING task's `waiting_reason`)."""

    tell_cancel: Callable[[str], None]
    notify: Callable[..., None]
    changed: Callable[[str], None]
    flow_changed: Callable[[QueueFlow], None] = lambda queue: None
    controls: Callable[[str], bool] = lambda queue_id: False
    bulk_wake: Callable[[], None] = lambda: None  # the bulk runner: an operation started


async def read_form(request: Request) -> dict[str, str]:
    """A urlencoded form of single-valued fields, at most MAX_FORM_BYTES."""
    media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media != FORM_TYPE:
        raise UnsupportedMediaType(f"send the form as {FORM_TYPE}")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise BodyTooLarge(f"the form exceeds {MAX_FORM_BYTES} bytes")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=32)
    except (UnicodeDecodeError, ValueError):
        raise InvalidArgument("the form is not valid UTF-8 urlencoded text") from None
    form: dict[str, str] = {}
    for name, values in fields.items():
        if len(values) != 1:
            raise InvalidArgument("a form field must appear once", name)
        form[name] = values[0]
    return form


class Actions:
    def __init__(self, pages: Pages, hooks: Hooks) -> None:
        self.pages = pages
        self.hooks = hooks

    async def signin(self, request: Request) -> Response:
        """A new server-side session on the pasted token; the cookie gets the session id."""
        forged = _foreign(request)
        if forged is not None:
            return self.pages.error(request, None, forged)
        try:
            form = await read_form(request)
            if not signin_ok(request.cookies.get(SIGNIN_COOKIE), form.get("csrf")):
                raise PermissionDenied(
                    "the sign-in form has expired or was sent from another page: "
                    "reload the sign-in page and sign in again"
                )
            secret = form.get("token", "").strip()
            if not secret:
                raise Unauthenticated("paste a token")
            replaces = request.cookies.get(COOKIE)
            signed = await self.pages.sessions.sign_in(secret, replaces, console_source(request))
            signed.principal.require(Permission.READ)
        except (
            Unauthenticated,
            PermissionDenied,
            InvalidArgument,
            BodyTooLarge,
            UnsupportedMediaType,
        ) as exc:
            return self.pages.signin_page(request, error_status(exc), exc.message)
        except Exception as exc:  # noqa: BLE001 - the database is down: a page, logged
            return self.pages.error(request, None, exc)
        response = RedirectResponse("/ui", status_code=303, headers=HEADERS)
        attributes = cookie_attributes(request.url.scheme == "https")
        response.set_cookie(
            COOKIE,
            signed.session_id,
            max_age=signed.max_age_s,
            httponly=True,
            samesite="strict",
            path=PATH,
            secure=bool(attributes["secure"]),
        )
        response.delete_cookie(SIGNIN_COOKIE, path=SIGNIN_PATH, httponly=True, samesite="strict")
        return response

    async def signout(self, request: Request) -> Response:
        """Ends the session on the server (on every process), then deletes the cookie; with
        `everywhere=1` ("Sign out everywhere") every session of the token ends."""
        session, form, refusal = await self.checked(request)
        if refusal is not None or session is None:
            return refusal or self._unauthenticated(request)
        sessions, source = self.pages.sessions, console_source(request)
        try:
            if form.get("everywhere") == "1":
                await sessions.sign_out_everywhere(session.principal, source)
            else:
                await sessions.sign_out(session.session_id, session.principal, source)
        except Exception as exc:  # noqa: BLE001 - the database is down: a page, logged
            return self.pages.error(request, session, exc)
        response = RedirectResponse("/ui/signin", status_code=303, headers=HEADERS)
        attributes = cookie_attributes(request.url.scheme == "https")
        response.delete_cookie(
            COOKIE, path=PATH, secure=bool(attributes["secure"]), httponly=True, samesite="strict"
        )
        return response

    async def act(self, request: Request) -> Response:
        """POST /ui/tasks/{task_id}/{action}: cancel, retry or resolve."""
        session, form, refusal = await self.checked(request)
        if refusal is not None or session is None:
            return refusal or self._unauthenticated(request)
        action = request.path_params["action"]
        try:
            task_id = task_id_from_path(request.path_params["task_id"])
            key = check_key(form.get("key"))
            source = console_source(request)
            bound = bind_source(source)
            try:
                await self._run(session, action, task_id, form, key, source.request_id or "")
            finally:
                reset_source(bound)
        except Exception as exc:  # noqa: BLE001 - a page (logged when not an Orbit refusal)
            return self.pages.error(request, session, exc)
        back = form.get("back") if form.get("back") == "/ui/review" else f"/ui/tasks/{task_id}"
        return RedirectResponse(f"{back}?done={action}", status_code=303, headers=HEADERS)

    async def set_flow(self, request: Request) -> Response:
        """POST /ui/queues/{queue_id}/flow: replace the queue's flow settings at the revision
        the form was rendered with (queues:admin). A refused value shows the form again with
        what was sent; settings changed meanwhile show the form with the stored ones."""
        session, form, refusal = await self.checked(request)
        if refusal is not None or session is None:
            return refusal or self._unauthenticated(request)
        try:
            queue_id = check_id(request.path_params["queue_id"], "queue_id")
            session.principal.require(Permission.QUEUE_ADMIN)
            db = self.pages.ops.db
            try:
                saved = await set_queue_flow(db, session.principal, queue_id, patch_body(form))
            except (InvalidArgument, Conflict) as exc:
                report = await read_queue(db, session.principal, queue_id)
                stale = isinstance(exc, Conflict)
                revision = report.flow.revision if stale else int(form.get("revision") or 0)
                shown = form_of(report.flow.settings) if stale else sent(form)
                return self.pages.flow_form(
                    request,
                    session,
                    queue_id,
                    report.name,
                    revision,
                    shown,
                    exc.message,
                    error_status(exc),
                )
            self.hooks.flow_changed(saved)
        except Exception as exc:  # noqa: BLE001 - a page (logged when not an Orbit refusal)
            return self.pages.error(request, session, exc)
        return RedirectResponse(f"/ui/queues/{queue_id}", status_code=303, headers=HEADERS)

    async def _run(
        self,
        session: Session,
        action: str,
        task_id: str,
        form: dict[str, str],
        key: str,
        request_id: str,
    ) -> None:
        principal, store = session.principal, self.pages.ops.store
        revision, reason = form.get("revision", ""), form.get("reason", "")
        body: dict[str, JsonValue] = {"expected_revision": revision, "reason": reason}
        if action == "cancel":
            principal.require(Permission.CANCEL)
            written = await cancel_task(
                store, principal, task_id, parse_cancel(body), key, request_id
            )
            if written.tell_worker is not None:
                self.hooks.tell_cancel(written.tell_worker)
        elif action == "retry":
            principal.require(Permission.REVIEW)
            await retry_task(store, principal, task_id, parse_retry(body), key, request_id)
            self.hooks.notify()
        elif action == "resolve":
            principal.require(Permission.REVIEW)
            request = parse_resolve(_resolution(body, form))
            await resolve_task(store, principal, task_id, request, key, request_id)
        else:
            raise InvalidArgument("the action must be cancel, retry or resolve", "action")
        self.hooks.changed(task_id)

    async def checked(
        self, request: Request
    ) -> tuple[Session | None, dict[str, str], Response | None]:
        """The session and its form with a valid CSRF token, or the refusal to send."""
        forged = _foreign(request)
        if forged is not None:
            return None, {}, self.pages.error(request, None, forged)
        try:
            session = await self.pages.session(request)
            if session is None:
                return None, {}, self._unauthenticated(request)
            form = await read_form(request)
        except Exception as exc:  # noqa: BLE001 - a page (logged when not an Orbit refusal)
            return None, {}, self.pages.error(request, None, exc)
        if not csrf_ok(session.session_id, form.get("csrf")):
            forged = PermissionDenied(
                "the form has no valid CSRF token: reload the page and send it again"
            )
            return session, form, self.pages.error(request, session, forged)
        return session, form, None

    def _unauthenticated(self, request: Request) -> Response:
        return self.pages.signin_page(request, 401, "sign in first")


def console_source(request: Request) -> Source:
    """A console request's audit source: origin `console`, the client's address (after the
    trusted-proxy rules, `console.edge`), a new request id."""
    return Source(Origin.CONSOLE, request.client.host if request.client else None, new_id())


def _foreign(request: Request) -> PermissionDenied | None:
    """The refusal of a POST the browser says comes from another site or origin."""
    host = request.headers.get("host", "")
    why = cross_site(
        request.headers.get("origin"),
        request.headers.get("sec-fetch-site"),
        request.url.scheme,
        host,
    )
    return None if why is None else PermissionDenied(f"{why}: sign in and act from the console")


def _resolution(body: dict[str, JsonValue], form: dict[str, str]) -> dict[str, JsonValue]:
    """The resolve body from the form: succeeded with an optional JSON result, or failed with
    an error code and message."""
    outcome = form.get("outcome", "")
    body = {**body, "outcome": outcome}
    if outcome == "succeeded" and form.get("result", "").strip():
        body["result"] = read_json(form["result"].encode("utf-8"))
    elif outcome == "failed":
        body["error"] = {
            "code": form.get("error_code") or "RESOLVED_FAILED",
            "message": form.get("error_message") or str(body["reason"]),
        }
    return body
