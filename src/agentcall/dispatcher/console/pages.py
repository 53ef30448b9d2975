"""The console's routes under ``/ui``: the page, one fragment per panel (what the page's
script fetches every refresh), the static assets, and a recording's link. Read-only:
every route is a GET.

A recording link (``/ui/recordings/{call_id}``, shown for an uploaded recording when the D
has a bucket) answers 303 to a presigned GET of the object, made on that request and valid
for :data:`LINK_EXPIRES_S`; the URL is never stored or logged.

With a console token set every route asks for it (401 with a basic-auth challenge, so a
browser prompts). Every answer carries a strict Content-Security-Policy: the page runs
only its own script and style, and every value is escaped by the templates.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from jinja2 import Environment, FileSystemLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from agentcall.dispatcher.console import aggregate, auth, live, voice
from agentcall.dispatcher.console.panels import calls_panel, plumbing_panel, tasks_panel
from agentcall.dispatcher.store import console as reads

HERE = Path(__file__).parent
REFRESH_MS = 2000
# How often the page fetches each panel: the calls panel (six hours in 5-minute buckets,
# the heaviest read) less often than the live state of tasks and plumbing.
PANEL_REFRESH_MS = {
    "live": REFRESH_MS,
    "tasks": REFRESH_MS,
    "calls": 3 * REFRESH_MS,
    "plumbing": REFRESH_MS,
}
LINK_EXPIRES_S = 300
MAX_CALL_ID = 200
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
Snapshot = Callable[[], Awaitable[dict[str, Any]]]
CellCalls = Callable[[], Awaitable[Sequence[live.ListedCall]]]
PANELS = ("live", "tasks", "calls", "plumbing")


class RecordingLinks(Protocol):
    """Presigns a GET of a recording's object (the D's object store adapter)."""

    async def presign_get(self, key: str, expires_s: int) -> str: ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _when(value: datetime | str | None) -> str:
    if value is None:
        return "—"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 120:
        return f"{value:.1f} s"
    return f"{value / 60:.0f} min" if value < 7200 else f"{value / 3600:.1f} h"


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
    env.filters["when"] = _when
    env.filters["seconds"] = _seconds
    env.filters["mask"] = live.mask
    env.filters["voice_turns"] = voice.voice_turns
    env.filters["greeting"] = voice.greeting
    env.globals["voice_stages"] = voice.STAGES
    return env


class Console:
    """Renders the panels from ``snapshot()`` (the /status body) and the state database;
    ``live_calls()`` is the cell's list of its calls (how many turns the agent spoke on
    each), ``links`` presigns recording links (None: the D has no bucket)."""

    def __init__(
        self,
        snapshot: Snapshot,
        state_db: Path,
        token: str | None,
        clock: Callable[[], datetime] = _utcnow,
        live_calls: CellCalls | None = None,
        links: RecordingLinks | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._cell_calls = live_calls
        self._links = links
        self._reader = reads.Reader(state_db)
        self._token = token
        self._clock = clock
        self._env = environment()
        self._built: dict[str, tuple[float, dict[str, Any]]] = {}

    async def _live(self, snap: dict[str, Any], now: datetime) -> dict[str, Any]:
        rows = await self._reader.read(reads.live_calls)
        turns: Mapping[str, int] | None = None
        if self._cell_calls is not None and rows:
            try:
                turns = live.agent_turns(await self._cell_calls())
            except Exception:  # noqa: BLE001 - whatever the cell does, the panel shows
                turns = None  # its calls, with their turns unknown
        return {"calls": live.live_rows(rows, turns, now), "limit": reads.LIVE_LIMIT}

    async def _tasks(self, snap: dict[str, Any], now: datetime) -> dict[str, Any]:
        rows, active = await self._reader.read_each(
            (reads.admission_rows, (now - aggregate.HOUR,)), (reads.active_calls, ())
        )
        return tasks_panel(snap, aggregate.admissions(rows), active)

    async def _calls(self, snap: dict[str, Any], now: datetime) -> dict[str, Any]:
        since = now - aggregate.WINDOW
        ended, results, outcomes = await self._reader.read_each(
            (reads.ended_calls, (since,)),
            (reads.last_results, ()),
            (reads.task_outcomes, (since,)),
        )
        figures = calls_panel(ended, results, now)
        return {**figures, "rates": live.task_rates(outcomes), "linked": self._links is not None}

    async def _plumbing(self, snap: dict[str, Any], now: datetime) -> dict[str, Any]:
        return plumbing_panel(snap, await self._reader.read(reads.plumbing_facts), now)

    async def _context(self, names: tuple[str, ...]) -> dict[str, Any]:
        """Each panel's figures, read again when older than half its refresh interval (two
        tabs, or the page and its fragments, cost the D one read per refresh, not one each)."""
        stale = [n for n in names if self._age(n) > PANEL_REFRESH_MS[n] / 2000]
        if stale:
            snap, now = await self._snapshot(), self._clock()
            build = {
                "live": self._live,
                "tasks": self._tasks,
                "calls": self._calls,
                "plumbing": self._plumbing,
            }
            for name in stale:
                figures = await build[name](snap, now)
                self._built[name] = (
                    time.monotonic(),
                    {**figures, "now": now, "dispatcher_id": snap.get("dispatcher_id")},
                )
        context: dict[str, Any] = {"now": self._clock()}
        for name in names:
            built = self._built[name][1]
            context[name] = built
            context["dispatcher_id"] = built["dispatcher_id"]
        return context

    def _age(self, name: str) -> float:
        built = self._built.get(name)
        return time.monotonic() - built[0] if built else float("inf")

    def _denied(self, request: Request) -> Response | None:
        if auth.allowed(self._token, request.headers.get("authorization")):
            return None
        headers = {**HEADERS, "WWW-Authenticate": auth.CHALLENGE}
        text = "The console needs the token of DISPATCHER_CONSOLE_TOKEN (bearer or basic auth)."
        return Response(text, status_code=401, headers=headers, media_type="text/plain")

    async def _html(self, template: str, context: dict[str, Any]) -> Response:
        """Rendered on a worker thread, so that a long page does not hold the D's loop."""
        body = await asyncio.to_thread(self._env.get_template(template).render, context)
        return HTMLResponse(body, headers=HEADERS)

    async def page(self, request: Request) -> Response:
        denied = self._denied(request)
        if denied is not None:
            return denied
        context = await self._context(PANELS)
        refresh = {"refresh": REFRESH_MS, "panel_refresh": PANEL_REFRESH_MS}
        shown = {"callees_shown": _callees_shown(request)}
        return await self._html("console.html", {**context, **refresh, **shown})

    async def panel(self, request: Request) -> Response:
        denied = self._denied(request)
        if denied is not None:
            return denied
        name = request.path_params["name"]
        if name not in PANELS:
            return Response("no such panel", status_code=404, headers=HEADERS)
        context = {**await self._context((name,)), "callees_shown": _callees_shown(request)}
        return await self._html(f"{name}.html", context)

    async def recording(self, request: Request) -> Response:
        """303 to a presigned GET of the call's uploaded recording, made now."""
        denied = self._denied(request)
        if denied is not None:
            return denied
        call_id = request.path_params["call_id"]
        if self._links is None:
            return _text(404, "This dispatcher stores no recordings (DISPATCHER_S3_BUCKET).")
        key = None
        if len(call_id) <= MAX_CALL_ID:
            key = await self._reader.read(reads.uploaded_recording, call_id)
        if key is None:
            return _text(404, "No uploaded recording for that call.")
        try:
            url = await self._links.presign_get(key, LINK_EXPIRES_S)
        except Exception as exc:  # noqa: BLE001 - whatever the store says: one clear answer
            return _text(503, f"The object store cannot make the link now ({type(exc).__name__}).")
        return RedirectResponse(url, status_code=303, headers=HEADERS)

    async def assets(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        denied = self._denied(request)
        if denied is not None:
            await denied(scope, receive, send)
            return
        await _STATIC(scope, receive, send)


def _callees_shown(request: Request) -> bool:
    return request.query_params.get("callees") == "shown"


def _text(status: int, text: str) -> Response:
    return Response(text, status_code=status, headers=HEADERS, media_type="text/plain")


_STATIC = StaticFiles(directory=HERE / "static")


def console_routes(console: Console) -> list[BaseRoute]:
    async def slash(request: Request) -> Response:
        return RedirectResponse("/ui", status_code=308)

    return [
        Route("/ui", console.page, methods=["GET"]),
        Route("/ui/", slash, methods=["GET"]),
        Route("/ui/panels/{name}", console.panel, methods=["GET"]),
        Route("/ui/recordings/{call_id}", console.recording, methods=["GET"]),
        Mount("/ui/static", app=console.assets, name="console-static"),
    ]
