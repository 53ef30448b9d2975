"""The worker's side of acknowledgements: every state-changing message waits in the outbox until
its `ack` arrives, and is resent in order after a reconnect (worker-protocol.md §3.11). Also the
reconnect policy (:class:`ReconnectPolicy`, pure), the server rotation and the endpoint URL."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentcall.orbit.domain.jsonvalue import JsonValue, dumps

log = logging.getLogger("orbit.worker.link")

CONNECT_PATH = "/v1/workers/connect"
Send = Callable[[str], Awaitable[None]]


class LinkDown(Exception):
    """The connection dropped before a non-resendable message (heartbeat, flow) was acked."""


@dataclass(slots=True)
class Pending:
    text: str
    future: asyncio.Future[dict[str, Any]]
    resend: bool


class Outbox:
    """Messages awaiting their ack, in send order."""

    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}
        self._ids = itertools.count(1)
        self._send: Send | None = None

    def __len__(self) -> int:
        return len(self._pending)

    async def submit(self, message: dict[str, JsonValue], *, resend: bool = True) -> dict[str, Any]:
        """Send (now, or after the next reconnect) and wait for the ack."""
        msg_id = f"m{next(self._ids)}"
        text = dumps({**message, "msg_id": msg_id})
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if self._send is None and not resend:
            raise LinkDown("not connected")
        self._pending[msg_id] = Pending(text, future, resend)
        try:
            if self._send is not None:
                await self._transmit(self._send, text)
            return await future
        finally:
            self._pending.pop(msg_id, None)

    def acknowledge(self, ack: dict[str, Any]) -> None:
        pending = self._pending.get(str(ack.get("msg_id")))
        if pending is not None and not pending.future.done():
            pending.future.set_result(ack)

    async def connected(self, send: Send) -> None:
        """Resend every resendable message in its original order."""
        self._send = send
        for pending in list(self._pending.values()):
            if pending.resend and not pending.future.done():
                await self._transmit(send, pending.text)

    def disconnected(self) -> None:
        self._send = None
        for pending in self._pending.values():
            if not pending.resend and not pending.future.done():
                pending.future.set_exception(LinkDown("connection lost before the ack"))

    @staticmethod
    async def _transmit(send: Send, text: str) -> None:
        try:
            await send(text)
        except Exception as exc:  # noqa: BLE001 - a dropped link: resent on reconnect
            log.debug("send on a dropped link; resent after the reconnection: %r", exc)


@dataclass(frozen=True)
class ReconnectPolicy:
    """The worker's one reconnect policy (pure): exponential backoff with full jitter, capped.

    Both retry loops of the worker use it: a session that ended without a welcome (refused,
    cut, or a handshake that timed out; :func:`next_server` gives the round, 0 again after a
    welcomed session) and a request the server answered ``UNAVAILABLE``. ``jitter`` is a
    random number in [0, 1): the delay is uniform in [0, min(cap, base * 2^round)], so
    workers that lost one server together do not all come back at once."""

    base_s: float = 0.1
    cap_s: float = 10.0

    def __post_init__(self) -> None:
        if not (self.base_s > 0 and self.cap_s > 0):
            raise ValueError("a reconnect policy needs a positive base_s and cap_s")

    def delay(self, round_: int, jitter: float) -> float:
        """Seconds to wait before try ``round_`` + 1 (``round_`` 0: the first retry)."""
        if round_ < 0:
            raise ValueError("the backoff round counts from 0")
        ceiling = min(self.cap_s, self.base_s * float(2 ** min(round_, 62)))
        return ceiling * min(max(jitter, 0.0), 1.0)


def backoff_delay(attempt: int, *, base: float = 0.1, cap: float = 10.0) -> float:
    """:class:`ReconnectPolicy`'s delay with a fresh random jitter."""
    return ReconnectPolicy(base, cap).delay(attempt, random.random())


def next_server(count: int, index: int, failures: int) -> tuple[int, int]:
    """After a session on server `index` (of `count`) ended, with `failures` sessions in a row
    now ended without a welcome: the server to try next and the backoff round (0: at once).
    Every session end moves to the next server, so a dead one is left at once; the backoff
    grows only once a whole turn over the servers failed."""
    nxt = (index + 1) % count if count > 1 else 0
    if failures == 0 or failures % count != 0:
        return nxt, 0
    return nxt, failures // count


def split_urls(text: str) -> tuple[str, ...]:
    """Several server URLs in one value (`ORBIT_URL`): separated by commas or white space."""
    return tuple(part for part in text.replace(",", " ").split() if part)


def endpoint(url: str) -> str:
    """`http(s)://host:port[/prefix]` or `ws(s)://…` → the WebSocket URL of the endpoint."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ValueError(f"ORBIT_URL {url!r} must be an http(s):// or ws(s):// URL")
    path = parts.path.rstrip("/")
    if not path.endswith(CONNECT_PATH):
        path += CONNECT_PATH
    return urlunsplit((scheme, parts.netloc, path, "", ""))
