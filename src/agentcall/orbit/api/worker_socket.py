"""`/v1/workers/connect`: authenticate the upgrade (401/403 before accepting), read `hello`,
answer `hello_ok`, then apply every worker message through the batcher and acknowledge it.
Messages of one connection are handled concurrently (so they share group commits); the
protocol keeps that safe because a worker only sends `result` after its `started` ack."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import UTC, datetime
from functools import partial
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from agentcall.orbit.api.socket_edge import (
    GONE,
    close_quietly,
    close_reason,
    deny,
    msg_id_in,
    msg_id_of,
    secret_of,
)
from agentcall.orbit.domain.errors import InvalidArgument, PermissionDenied, Unauthenticated
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.domain.worker_errors import ProtocolError
from agentcall.orbit.execution.acks import Ack, Peer
from agentcall.orbit.execution.hub import Hub, Link
from agentcall.orbit.execution.token_watch import TokenWatch, Watched
from agentcall.orbit.protocol.frames import read_frame
from agentcall.orbit.protocol.framing import BATCH_PROTOCOL, FrameWriter
from agentcall.orbit.protocol.messages import (
    PROTOCOL,
    ClientMessage,
    Evidence,
    Flow,
    Heartbeat,
    Hello,
    Release,
    Result,
    Started,
    parse_message,
    parse_value,
)
from agentcall.orbit.usecases import heartbeat, lease
from agentcall.orbit.usecases.failures import is_database_failure
from agentcall.orbit.usecases.finish import finish, record_evidence
from agentcall.orbit.usecases.operations import Operations
from agentcall.orbit.usecases.requeue import requeue
from agentcall.orbit.usecases.start import start

log = logging.getLogger("orbit.workers")
HELLO_TIMEOUT = 10.0
MAX_CONCURRENT_MESSAGES = 256


class Close(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class WorkerEndpoint:
    def __init__(
        self, ops: Operations, hub: Hub, lease_ttl_ms: int, watch: TokenWatch | None = None
    ) -> None:
        self.ops = ops
        self.hub = hub
        self.lease_ttl_ms = lease_ttl_ms
        self.watch = watch  # ends sessions whose token is revoked or expires

    async def handle(self, websocket: WebSocket) -> None:
        principal = await self._authenticate(websocket)
        if principal is None:
            return
        offered = websocket.scope.get("subprotocols", [])
        if PROTOCOL not in offered and BATCH_PROTOCOL not in offered:
            await websocket.accept()
            await websocket.close(4426, f"offer the subprotocol {PROTOCOL}")
            return
        batching = BATCH_PROTOCOL in offered
        await websocket.accept(subprotocol=BATCH_PROTOCOL if batching else PROTOCOL)
        session = _Session(self, websocket, principal, batching)
        try:
            await session.run()
        except Close as close:
            log.info("worker connection refused", extra={"code": close.code, "why": close.reason})
            await close_quietly(websocket, close.code, close.reason)
        except WebSocketDisconnect:
            pass

    async def _authenticate(self, websocket: WebSocket) -> Principal | None:
        try:
            principal = await self.ops.authenticate(secret_of(websocket))
            principal.require(Permission.WORK)
            return principal
        except Unauthenticated as exc:
            await deny(websocket, 401, "UNAUTHENTICATED", exc.message)
        except PermissionDenied as exc:
            await deny(websocket, 403, "PERMISSION_DENIED", exc.message)
        return None


class _Session:
    def __init__(
        self, endpoint: WorkerEndpoint, websocket: WebSocket, principal: Principal, batching: bool
    ) -> None:
        self.endpoint = endpoint
        self.hub = endpoint.hub
        self.kernel = endpoint.hub.kernel
        self.websocket = websocket
        self.principal = principal
        self._send_lock = asyncio.Lock()
        self.batching = batching
        self._frames = FrameWriter(websocket.send_text)
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_MESSAGES)
        self.link: Link | None = None

    async def send(self, message: dict[str, JsonValue], *, linger: bool = True) -> None:
        if self.batching:
            await self._frames(dumps(message), linger=linger)
            return
        async with self._send_lock:
            await self.websocket.send_text(dumps(message))

    async def send_many(self, messages: list[dict[str, JsonValue]]) -> None:
        """Several messages in order; with batch framing in as few frames as they fit."""
        if self.batching:
            await self._frames.many([dumps(message) for message in messages])
            return
        async with self._send_lock:
            for message in messages:
                await self.websocket.send_text(dumps(message))

    async def run(self) -> None:
        hello = await self._hello()
        peer = Peer(
            new_id(),
            self.principal.token_id,
            self.principal.namespace_id,
            frozenset(hello.queues),
            hello.worker,
        )
        statuses, now = await heartbeat.rebind(self.hub, peer, hello.attempts)
        link = Link(
            peer,
            hello.handlers,
            hello.queues,
            hello.capacity,
            self.send,
            urgent=partial(self.send, linger=False),
            send_many=self.send_many,
        )
        self.link = link
        held = {str(s["attempt_id"]) for s in statuses if s["status"] != "lost"}
        await self.send(self._hello_ok(peer, statuses, now))
        lease.open_link(self.hub, link, held)
        self._watch(link)
        log.info(
            "worker connected",
            extra={
                "connection_id": peer.connection_id,
                "worker": hello.worker.name,
                "capacity": hello.capacity,
            },
        )
        try:
            await self._pump()
        finally:
            if self.endpoint.watch is not None:
                self.endpoint.watch.remove(peer.connection_id)
            await lease.close_link(self.hub, link)
            log.info("worker disconnected", extra={"connection_id": peer.connection_id})

    def _watch(self, link: Link) -> None:
        """From now on a revoked or expired token ends this session (`TokenWatch`): no lease
        is granted to it any more, and it is closed with 4401."""
        if self.endpoint.watch is None:
            return

        def stop() -> None:
            link.open = False

        async def end() -> None:
            await close_quietly(self.websocket, 4401, "the token expired or was revoked")

        watched = Watched(self.principal.token_id, self.principal.expires_at, stop, end)
        self.endpoint.watch.add(link.peer.connection_id, watched)

    async def _hello(self) -> Hello:
        try:
            text = await asyncio.wait_for(self._receive(), HELLO_TIMEOUT)
        except TimeoutError:
            raise Close(4408, "no hello within 10 s") from None
        try:
            hello = parse_message(text)
        except (InvalidArgument, ProtocolError) as exc:
            raise Close(4400, close_reason(exc.message)) from None
        if not isinstance(hello, Hello):
            raise Close(4400, "the first message must be hello")
        outside = [q for q in hello.queues if q not in self.principal.queue_ids]
        if outside:
            raise Close(4403, close_reason(f"queue {outside[0]} is outside the token's scope"))
        return hello

    def _hello_ok(
        self, peer: Peer, statuses: list[dict[str, JsonValue]], now: datetime
    ) -> dict[str, JsonValue]:
        ttl = self.endpoint.lease_ttl_ms
        attempts: list[JsonValue] = [
            {"attempt_id": s["attempt_id"], "status": "lost" if s["status"] == "lost" else "ok"}
            for s in statuses
        ]
        return {
            "type": "hello_ok",
            "protocol": PROTOCOL,
            "connection_id": peer.connection_id,
            "server_time": format_time(now),
            "lease_ttl_ms": ttl,
            "heartbeat_interval_ms": max(1, ttl // 3),
            "max_message_bytes": 1_048_576,
            "attempts": attempts,
        }

    async def _pump(self) -> None:
        pending: set[asyncio.Task[None]] = set()
        try:
            while True:
                text = await self._receive()
                try:
                    values = read_frame(text, self.batching)
                except InvalidArgument as exc:
                    values, problem = [], exc.message
                    await self._slots.acquire()
                    self._spawn(pending, self._refuse(text, problem))
                for value in values:
                    await self._slots.acquire()
                    self._spawn(pending, self._handle(value))
        finally:
            for task in pending:
                task.cancel()

    async def _receive(self) -> str:
        """The next text frame; a binary frame closes the connection with 4400."""
        message = await self.websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
        text = message.get("text")
        if not isinstance(text, str):
            raise Close(4400, "send each message as a text frame of UTF-8 JSON, not binary")
        return text

    @staticmethod
    def _spawn(pending: set[asyncio.Task[None]], work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        pending.add(task)
        task.add_done_callback(pending.discard)

    async def _answer(self, work: Coroutine[Any, Any, None]) -> None:
        """Settles the answer to one message: a Close closes the connection, a connection
        gone meanwhile is let go (the worker resends), a defect is logged (and counted) and
        closes with 1011; the message's slot is released in every case. (A plain coroutine:
        an async context manager cost a few µs more per message, two messages per task.)"""
        try:
            await work
        except Close as close:
            await close_quietly(self.websocket, close.code, close.reason)
        except GONE:  # the connection closed while answering: the worker resends
            log.debug("answer not delivered", exc_info=True)
        except Exception:  # a defect: logged (and counted), the connection closed
            log.exception("worker message failed")
            await close_quietly(self.websocket, 1011, "internal error; reconnect")
        finally:
            self._slots.release()

    async def _refuse(self, text: str, problem: str) -> None:
        await self._answer(self._invalid(msg_id_of(text), problem))

    async def _handle(self, value: JsonValue) -> None:
        await self._answer(self._reply(value))

    async def _reply(self, value: JsonValue) -> None:
        try:
            message = parse_value(value)
        except (InvalidArgument, ProtocolError) as exc:
            await self._invalid(msg_id_in(value), exc.message)
            return
        await self.send(await self._apply(message))

    async def _apply(self, message: ClientMessage) -> dict[str, JsonValue]:
        if isinstance(message, Hello):
            raise Close(4400, "hello may be sent only once per connection")
        if isinstance(message, Heartbeat):
            return await self._heartbeat(message)
        if isinstance(message, Flow):
            assert self.link is not None
            lease.set_credit(self.hub, self.link, message.capacity)
            return Ack(True, {"capacity": message.capacity}).body(message.msg_id)
        ack = await self._step(message)
        if ack.ended:
            self.hub.finished(ack.ended, *_ending(message, ack))
            self.hub.ended(ack.ended)
        if ack.wake:
            self.hub.notify(ack.wake)
        return ack.body(message.msg_id)

    async def _step(self, message: Started | Result | Release | Evidence) -> Ack:
        hub, peer = self.hub, self._peer()
        try:
            if isinstance(message, Started):
                return await start(hub, peer, message.ref)
            if isinstance(message, Result):
                return await finish(hub, peer, message)
            if isinstance(message, Release):
                return await requeue(hub, peer, message)
            return await record_evidence(hub, peer, message)
        except Exception as exc:
            return _failed(exc, type(message).__name__)

    async def _heartbeat(self, message: Heartbeat) -> dict[str, JsonValue]:
        peer = self._peer()
        if self.link is not None:
            self.link.seen_at = datetime.now(UTC)
        try:
            statuses = await heartbeat.heartbeat(self.hub, peer, message)
        except Exception as exc:
            return _failed(exc, "Heartbeat").body(message.msg_id)
        return Ack(True, {"attempts": list(statuses)}).body(message.msg_id)

    async def _invalid(self, msg_id: str | None, problem: str) -> None:
        if msg_id is None:
            raise Close(4400, close_reason(problem))
        await self.send(Ack(False, code="INVALID_MESSAGE", message=problem).body(msg_id))

    def _peer(self) -> Peer:
        assert self.link is not None
        return self.link.peer


def _ending(message: ClientMessage, ack: Ack) -> tuple[str, str]:
    """(outcome, error code) of an ending message, for the metrics: the task's state after
    it, or the refusal code; the worker's error code of a result."""
    outcome = str(ack.fields.get("task_state", "")) if ack.ok else str(ack.code)
    error = message.error if isinstance(message, Result) else None
    return outcome or "UNKNOWN", "" if error is None else error.code


def _failed(exc: Exception, kind: str) -> Ack:
    """A message that could not be applied: the database failed (UNAVAILABLE, the worker
    resends it), or the server has a defect: logged with its traceback (counted in
    orbit_log_messages_total) and the connection closed with 1011 (reconnect with backoff)."""
    if is_database_failure(exc):
        log.warning(
            "worker message not applied: the database failed",
            extra={"type": kind, "error": type(exc).__name__},
        )
        return Ack(False, code="UNAVAILABLE", message="the database is unavailable; resend")
    log.exception("worker message failed", extra={"type": kind})
    raise Close(1011, "internal error; reconnect") from exc
