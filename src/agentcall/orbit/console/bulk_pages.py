"""The console's bulk operations (docs/orbit/bulk.md, "Console"): from a queue's search,
"Act on all matching" chooses an action (`/ui/queues/{id}/bulk`), the same page with the
action shows the preview (how many tasks match now and a sample, the filter as chips) and
the confirm form, whose POST starts the operation; its page (`/ui/bulk/{id}`) shows the
progress, refreshes itself while it runs and has a cancel button; `/ui/bulk` lists the
namespace's operations. Each step runs the API's use case with the same permission checks
(cancel needs tasks:cancel, retry and resolve tasks:review) and every POST carries the
session's CSRF token (`agentcall.orbit.console.actions.Actions.checked`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from agentcall.orbit.console.actions import Actions, console_source
from agentcall.orbit.console.headers import HEADERS
from agentcall.orbit.console.pages import Pages, Session
from agentcall.orbit.console.search import LABELS, Search, search_of
from agentcall.orbit.domain.audit import bind_source, reset_source
from agentcall.orbit.domain.bulk import BulkRequest, BulkState, Outcome, parse_bulk
from agentcall.orbit.domain.errors import InvalidArgument, NotFound
from agentcall.orbit.domain.idempotency import check_key
from agentcall.orbit.domain.ids import check_id, is_id, new_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.search import TaskFilter, filter_json
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.usecases.audit import record
from agentcall.orbit.usecases.bulk_cancel import cancel_bulk
from agentcall.orbit.usecases.bulk_reads import bulk_tasks, get_bulk, list_bulk
from agentcall.orbit.usecases.bulk_start import PERMISSION, preview_bulk, start_bulk

ACTION_FIELDS = ("action", "reason", "outcome")  # the rest of the query is the filter
LABEL = {"cancel": "Cancel", "retry": "Retry", "resolve": "Resolve"}
OUTCOMES = ("succeeded", "failed")
LIST_LIMIT = 50
ITEMS_SHOWN = 20
EMPTY_FILTER = (
    "Narrow the search first: a bulk operation acts on the tasks a filter matches, and an "
    "empty filter would match the whole queue (set at least a state, handler, business key, "
    "error code or a time range)."
)


def actions_of(principal: Principal) -> list[str]:
    """The bulk actions this token may start (the single action's permission)."""
    return [a.value for a, need in PERMISSION.items() if need in principal.permissions]


class BulkPages:
    def __init__(self, pages: Pages, actions: Actions, wake: Callable[[], None]) -> None:
        self.pages = pages
        self.actions = actions
        self.wake = wake  # this process's bulk runner: an operation was started

    async def new(self, request: Request, session: Session) -> Response:
        """GET /ui/queues/{queue_id}/bulk: choose the action; with `action`, the preview."""
        queue_id = check_id(request.path_params["queue_id"], "queue_id")
        given = request.query_params.multi_items()
        search, fields = _split(given, queue_id)
        allowed = actions_of(session.principal)
        shown: dict[str, Any] = {
            "session": session,
            "queue_id": queue_id,
            "search": search,
            "allowed": allowed,
        }
        if "action" not in fields:
            session.principal.require_queue(queue_id)
            if not allowed:
                session.principal.require(Permission.CANCEL)  # the refusal names one
            return self.pages.render(request, "bulk_new.html", fields=fields, **shown)
        bulk = _request(search, fields)
        found = await preview_bulk(self.pages.ops.bulk, session.principal, bulk)
        return self.pages.render(
            request,
            "bulk_new.html",
            fields=fields,
            preview=found,
            label=LABEL[bulk.action.value],
            key=f"console-{new_id()}",
            **shown,
        )

    async def start(self, request: Request) -> Response:
        """POST /ui/queues/{queue_id}/bulk: start the previewed operation."""
        session, form, refusal = await self.actions.checked(request)
        if refusal is not None or session is None:
            return refusal or self.pages.signin_page(request, 401, "sign in first")
        try:
            queue_id = check_id(request.path_params["queue_id"], "queue_id")
            given = [(k, v) for k, v in form.items() if k not in ("csrf", "key")]
            search, fields = _split(given, queue_id)
            bulk = _request(search, fields)
            key = check_key(form.get("key"))
            source = console_source(request)
            bound = bind_source(source)
            try:
                op_id = await self._start(session, bulk, key, source.request_id or "")
            finally:
                reset_source(bound)
        except Exception as exc:  # noqa: BLE001 - a page (logged when not an Orbit refusal)
            return self.pages.error(request, session, exc)
        return RedirectResponse(f"/ui/bulk/{op_id}", status_code=303, headers=HEADERS)

    async def _start(self, session: Session, bulk: BulkRequest, key: str, rid: str) -> str:
        ops, principal = self.pages.ops, session.principal
        started = await start_bulk(ops.bulk, principal, bulk, key, rid)
        op = started.operation
        if not started.deduplicated:
            self.wake()
            detail: dict[str, JsonValue] = {
                "action": op.action.value,
                "filter": dict(filter_json(op.filter)),
                "matched": op.progress.matched,
            }
            await record(ops.store, principal, "bulk.create", "bulk_operation", op.id, detail)
        return op.id

    async def listing(self, request: Request, session: Session) -> Response:
        """GET /ui/bulk: the namespace's operations on this token's queues, newest first."""
        if request.query_params:
            raise InvalidArgument("this page takes no query parameter")
        found = await list_bulk(self.pages.ops.bulk, session.principal, None, LIST_LIMIT)
        running = any(op.state is BulkState.RUNNING for op in found)
        return self.pages.render(
            request,
            "bulk_list.html",
            session=session,
            operations=found,
            labels=LABELS,
            refresh=2000 if running else 0,
        )

    async def detail(self, request: Request, session: Session) -> Response:
        """GET /ui/bulk/{operation_id}: progress, refreshed every second while it runs."""
        op_id = _operation_id(request.path_params["operation_id"])
        bulks, principal = self.pages.ops.bulk, session.principal
        op = await get_bulk(bulks, principal, op_id)
        skipped = await bulk_tasks(bulks, principal, op_id, Outcome.SKIPPED, None, ITEMS_SHOWN)
        failed = await bulk_tasks(bulks, principal, op_id, Outcome.FAILED, None, ITEMS_SHOWN)
        running = op.state is BulkState.RUNNING
        return self.pages.render(
            request,
            "bulk.html",
            session=session,
            op=op,
            chips=_chips(op.filter),
            label=LABEL[op.action.value],
            can_cancel=running and PERMISSION[op.action] in principal.permissions,
            items=[*failed, *skipped],
            done=request.query_params.get("done"),
            refresh=1000 if running else 0,
        )

    async def cancel(self, request: Request) -> Response:
        """POST /ui/bulk/{operation_id}/cancel: stop a running operation."""
        session, _form, refusal = await self.actions.checked(request)
        if refusal is not None or session is None:
            return refusal or self.pages.signin_page(request, 401, "sign in first")
        try:
            op_id = _operation_id(request.path_params["operation_id"])
            source = console_source(request)
            bound = bind_source(source)
            try:
                await cancel_bulk(self.pages.ops.bulk, session.principal, op_id)
                await record(
                    self.pages.ops.store, session.principal, "bulk.cancel", "bulk_operation", op_id
                )
            finally:
                reset_source(bound)
        except Exception as exc:  # noqa: BLE001 - a page (logged when not an Orbit refusal)
            return self.pages.error(request, session, exc)
        return RedirectResponse(f"/ui/bulk/{op_id}?done=cancel", 303, headers=HEADERS)


def _split(items: list[tuple[str, str]], queue_id: str) -> tuple[Search, dict[str, str]]:
    """The filter (refused when it is empty) and the action's fields of a query or form."""
    fields = {k: v for k, v in items if k in ACTION_FIELDS}
    if fields.get("action") != "resolve":  # the form's outcome belongs to resolve only
        fields.pop("outcome", None)
    search = search_of([(k, v) for k, v in items if k not in ACTION_FIELDS], queue_id)
    if not search.where.narrowed:
        raise InvalidArgument(EMPTY_FILTER, "filter")
    return search, fields


def _request(search: Search, fields: dict[str, str]) -> BulkRequest:
    """The API's request from the console's fields (resolve: succeeded, or failed with the
    reason as its message)."""
    body: dict[str, JsonValue] = {
        "filter": dict(filter_json(search.where)),
        "action": fields.get("action", ""),
        "reason": fields.get("reason", ""),
    }
    if body["action"] == "resolve":
        outcome = fields.get("outcome", "")
        if outcome not in OUTCOMES:
            raise InvalidArgument("choose the outcome: succeeded or failed", "outcome")
        body["outcome"] = outcome
        if outcome == "failed":
            body["error"] = {"code": "RESOLVED_FAILED", "message": body["reason"]}
    return parse_bulk(body)


def _chips(where: TaskFilter) -> list[tuple[str, str]]:
    values = {k: str(v) for k, v in filter_json(where).items()}
    return [(LABELS[name], values[name]) for name in LABELS if name in values]


def _operation_id(text: str) -> str:
    """A malformed ID in a path names no operation: 404, like a missing one."""
    if not is_id(text):
        raise NotFound("bulk operation not found")
    return text
