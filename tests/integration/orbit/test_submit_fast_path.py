"""`POST /v1/tasks` served below Starlette (`OrbitApp.submit`) answers exactly as the routed
endpoint does: the same ASGI messages (status, headers, body bytes), the same access lines and
the same request counters, for valid submits, replays, conflicts and each kind of refusal.

Both apps run in this process over two copies of one SQLite database (the same tenant), with
the same sequence of IDs and a fixed database clock, so their answers are comparable byte for
byte."""

from __future__ import annotations

import itertools
import logging
import shutil
from collections.abc import MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentcall.orbit.api.app import OrbitApp
from agentcall.orbit.api.http import MAX_BODY_BYTES
from agentcall.orbit.assembly.server import create_app
from agentcall.orbit.domain import ids
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade

pytestmark = [pytest.mark.integration]

NOW = datetime(2026, 12, 1, 8, 0, 0, 123456, tzinfo=UTC)


@dataclass(frozen=True)
class Call:
    """One HTTP request as ASGI gives it: headers, query string and body messages."""

    name: str
    headers: list[tuple[bytes, bytes]]
    bodies: list[bytes]  # one http.request message each; more_body on all but the last
    query: bytes = b""
    method: str = "POST"
    disconnect: bool = False  # the client goes away after the bodies
    path: str = "/v1/tasks"


@dataclass(frozen=True)
class Tenant:
    queue_id: str
    token: str
    reader: str  # a token without tasks:submit


def body(queue_id: str, n: int, extra: str = "") -> bytes:
    return (
        f'{{"queue_id":"{queue_id}","handler":"file.convert","handler_version":"v1",'
        f'"payload_version":"v1","payload":{{"n":{n},"big":9007199254740993}}{extra}}}'
    ).encode()


def calls(t: Tenant) -> list[Call]:
    def h(*pairs: tuple[str, str], token: str | None = t.token) -> list[tuple[bytes, bytes]]:
        auth = [] if token is None else [(b"authorization", f"Bearer {token}".encode())]
        return [(b"host", b"x"), *auth, *[(k.encode(), v.encode()) for k, v in pairs]]

    json_ = ("content-type", "application/json")
    past = (NOW - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        Call("accepted", h(json_, ("idempotency-key", "k1")), [body(t.queue_id, 1)]),
        Call("replayed", h(json_, ("idempotency-key", "k1")), [body(t.queue_id, 1)]),
        Call("conflict", h(json_, ("idempotency-key", "k1")), [body(t.queue_id, 2)]),
        Call(
            "chunks",
            h(("content-type", "application/json; charset=utf-8"), ("idempotency-key", "k2")),
            [body(t.queue_id, 3)[:10], b"", body(t.queue_id, 3)[10:]],
        ),
        Call(
            "options",
            h(json_, ("idempotency-key", "k3")),
            [body(t.queue_id, 4, ',"business_key":"b\\u00e9","retry":{"max_attempts":3}')],
        ),
        Call("no token", h(json_, ("idempotency-key", "k4"), token=None), [body(t.queue_id, 5)]),
        Call("bad token", h(json_, ("idempotency-key", "k4"), token="orb_nope"), [b"{}"]),
        Call("two tokens", [*h(json_), (b"authorization", b"Bearer x")], [b"{}"]),
        Call("no permission", h(json_, ("idempotency-key", "k4"), token=t.reader), [b"{}"]),
        Call("query", h(json_, ("idempotency-key", "k4")), [body(t.queue_id, 5)], b"a=1"),
        Call("empty query value", h(json_), [b"{}"], b"a"),
        Call("text", h(("content-type", "text/plain"), ("idempotency-key", "k4")), [b"{}"]),
        Call("two types", h(json_, json_, ("idempotency-key", "k4")), [b"{}"]),
        Call("no type", h(("idempotency-key", "k4")), [b"{}"]),
        Call("declared too large", h(json_, ("content-length", str(MAX_BODY_BYTES + 1))), [b""]),
        Call("too large", h(json_, ("idempotency-key", "k4")), [b" " * MAX_BODY_BYTES, b"{}"]),
        Call("not json", h(json_, ("idempotency-key", "k4")), [b'{"queue_id":']),
        Call("duplicate key", h(json_, ("idempotency-key", "k4")), [b'{"a":1,"a":1}']),
        Call("bad number", h(json_, ("idempotency-key", "k4")), [b'{"payload":{"x":[1e999]}}']),
        Call("no key", h(json_), [body(t.queue_id, 5)]),
        Call(
            "two keys",
            h(json_, ("idempotency-key", "a"), ("idempotency-key", "b")),
            [body(t.queue_id, 5)],
        ),
        Call(
            "unknown field",
            h(json_, ("idempotency-key", "k4")),
            [body(t.queue_id, 5, ',"Handler":"x"')],
        ),
        Call(
            "in the past",
            h(json_, ("idempotency-key", "k5")),
            [body(t.queue_id, 6, f',"available_at":"{past}"')],
        ),
        Call("other queue", h(json_, ("idempotency-key", "k6")), [body("0" * 32, 7)]),
        Call("disconnect", h(json_, ("idempotency-key", "k7")), [b'{"queue'], disconnect=True),
        Call("list still routed", h(), [b""], b"queue_id=" + t.queue_id.encode(), "GET"),
    ]


async def exchange(app: OrbitApp, call: Call) -> list[dict[str, Any]]:
    """Send `call` to `app`; the ASGI messages it answers with."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": call.method,
        "scheme": "http",
        "path": call.path,
        "raw_path": call.path.encode(),
        "root_path": "",
        "query_string": call.query,
        "headers": call.headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": chunk, "more_body": index + 1 < len(call.bodies)}
        for index, chunk in enumerate(call.bodies)
    ]
    if call.disconnect:
        messages[-1]["more_body"] = True
        messages.append({"type": "http.disconnect"})
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)
    return sent


async def fixed_now(conn: HotConnection) -> datetime:
    return NOW


async def tenant(url: str) -> Tenant:
    db = Database.open(url)
    try:
        await upgrade(db)
        made = await Admin(db).init("fast", "q")
        reader = await Admin(db).create_token(
            made.namespace_id, [Permission.READ], [made.queue_id], None
        )
    finally:
        await db.close()
    return Tenant(made.queue_id, made.token, reader.token)


async def run_all(
    url: str,
    fast: bool,
    script: list[Call],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> tuple[list[list[dict[str, Any]]], list[str], list[str]]:
    """Answers, access lines and request counters of `script` on a fresh app."""
    counter = itertools.count()
    monkeypatch.setattr(ids, "urandom", lambda n: next(counter).to_bytes(n, "big"))  # new_id
    db = Database.open(url)
    monkeypatch.setattr(db, "now", fixed_now)
    app = create_app(db, fast_submit=fast)
    assert (app.submit is not None) is fast
    caplog.clear()
    try:
        answers = [await exchange(app, call) for call in script]
        metrics = await exchange(app, Call("metrics", [], [b""], method="GET", path="/metrics"))
    finally:
        await db.close()
    lines = [
        f"{r.levelname} {r.getMessage()} "
        + str({k: v for k, v in vars(r).items() if k in ACCESS_FIELDS})
        for r in caplog.records
        if r.name == "orbit.api"
    ]
    text = metrics[1]["body"].decode()
    counters = [line for line in text.splitlines() if line.startswith("orbit_http_requests_t")]
    return answers, lines, counters


ACCESS_FIELDS = {"request_id", "route", "method", "status", "token_id", "code", "why"}


async def test_fast_submit_answers_byte_for_byte_as_the_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="orbit.api")
    seed = tmp_path / "seed.db"
    made = await tenant(f"sqlite+aiosqlite:///{seed}")
    for name in ("fast.db", "slow.db"):
        shutil.copy(seed, tmp_path / name)
    script = calls(made)
    fast = await run_all(
        f"sqlite+aiosqlite:///{tmp_path / 'fast.db'}", True, script, monkeypatch, caplog
    )
    slow = await run_all(
        f"sqlite+aiosqlite:///{tmp_path / 'slow.db'}", False, script, monkeypatch, caplog
    )
    for call, got, expected in zip(script, fast[0], slow[0], strict=True):
        assert got == expected, call.name
    assert fast[1] == slow[1]  # one access line per request, and no error line
    assert not any(line.startswith("ERROR") for line in fast[1])  # a client leaving is no error
    assert sum(line.startswith("INFO request ") for line in fast[1]) == len(script)
    assert fast[2] == slow[2]
    statuses = [answer[0]["status"] for answer in fast[0]]
    assert statuses == [
        201,
        200,
        409,
        201,
        201,
        401,
        401,
        401,
        403,
        400,
        400,
        415,
        415,
        415,
        413,
        413,
        400,
        400,
        400,
        400,
        400,
        400,
        400,
        403,
        499,
        200,
    ]
    unauthenticated = dict(fast[0][5][0]["headers"])
    assert unauthenticated[b"www-authenticate"] == b'Bearer realm="orbit"'
