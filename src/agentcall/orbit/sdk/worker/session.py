"""One WebSocket connection of a worker: handshake, hello/hello_ok, message pump and the
heartbeat loop. A refused token, scope or protocol stops the worker (WorkerStopped); anything
else ends the session and the worker reconnects with backoff."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.typing import Subprotocol

from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.protocol.framing import BATCH_PROTOCOL, PROTOCOL, FrameWriter
from agentcall.orbit.sdk.worker.errors import WorkerStopped
from agentcall.orbit.sdk.worker.link import LinkDown, Outbox
from agentcall.orbit.sdk.worker.wire import decode

log = logging.getLogger("orbit.worker")
MAX_MESSAGE_BYTES = 1_048_576
HELLO_TIMEOUT = 10.0
FATAL_CLOSE = {
    4400: "the server rejected a message as invalid (upgrade or fix the worker)",
    4401: "the token expired or was revoked",
    4403: "a queue is outside the token's scope, or the token lacks tasks:work",
    4426: "the server does not support protocol orbit.worker.v1",
}


class SessionEnded(Exception):
    """The connection ended for a reason worth a reconnect."""


class Host(Protocol):
    """What a session needs of its worker (`agentcall.orbit.sdk.worker.runtime.Worker`): the hello
    it sends, the outbox its messages go through, and where server messages are delivered."""

    @property
    def outbox(self) -> Outbox: ...

    def hello(self) -> dict[str, JsonValue]: ...

    def heartbeat_refs(self) -> list[JsonValue]: ...

    def on_lease(self, message: dict[str, Any]) -> None: ...

    def on_cancel(self, attempt_id: str, reason: str) -> None: ...

    def on_attempt_status(self, attempt_id: str, status: str) -> None: ...


class Session:
    def __init__(self, worker: Host, url: str, token: str) -> None:
        self.worker = worker
        self.url = url
        self.token = token
        self.welcomed = False

    async def serve(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            async with connect(
                self.url,
                additional_headers=headers,
                subprotocols=[Subprotocol(BATCH_PROTOCOL), Subprotocol(PROTOCOL)],
                max_size=MAX_MESSAGE_BYTES,
                compression=None,
                open_timeout=10,
                proxy=None,
            ) as ws:
                await self._run(ws)
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                body = (exc.response.body or b"").decode("utf-8", "replace")[:300]
                raise WorkerStopped(f"server refused the worker: HTTP {status} {body}") from exc
            raise SessionEnded(f"handshake refused: HTTP {status}") from exc
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd else None
            if code in FATAL_CLOSE:
                reason = exc.rcvd.reason if exc.rcvd else ""
                raise WorkerStopped(f"{FATAL_CLOSE[code]} (close {code}: {reason})") from exc
            raise SessionEnded(f"connection closed ({code})") from exc
        except InvalidURI as exc:
            raise WorkerStopped(f"invalid ORBIT_URL: {exc}") from exc
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise SessionEnded(f"cannot connect to {self.url}: {exc}") from exc

    async def _run(self, ws: ClientConnection) -> None:
        await ws.send(dumps(self.worker.hello()))
        welcome = decode(await asyncio.wait_for(_receive(ws), HELLO_TIMEOUT))
        if welcome.get("type") != "hello_ok":
            raise SessionEnded(f"expected hello_ok, got {welcome.get('type')}: {welcome}")
        self.welcomed = True
        log.info("connected", extra={"url": self.url, "connection_id": welcome["connection_id"]})
        for status in welcome.get("attempts", []):
            self.worker.on_attempt_status(status["attempt_id"], status["status"])
        batching = ws.subprotocol == BATCH_PROTOCOL
        await self.worker.outbox.connected(FrameWriter(ws.send) if batching else ws.send)
        interval = int(welcome["heartbeat_interval_ms"]) / 1000
        beats = asyncio.create_task(self._heartbeats(interval), name="orbit-worker-heartbeat")
        try:
            async for raw in ws:
                message = decode(raw)
                for one in message if batching and isinstance(message, list) else [message]:
                    self._dispatch(one)
        finally:
            beats.cancel()
        code = ws.close_code
        if code in FATAL_CLOSE:
            raise WorkerStopped(f"{FATAL_CLOSE[code]} (close {code}: {ws.close_reason})")
        raise SessionEnded(f"connection closed ({code})")

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "lease":
            self.worker.on_lease(message)
        elif kind == "ack":
            self.worker.outbox.acknowledge(message)
        elif kind == "cancel":
            self.worker.on_cancel(str(message.get("attempt_id")), str(message.get("reason")))
        elif kind == "error":
            log.error("server error", extra={"error": message.get("error")})
        else:
            log.warning("unknown message type ignored", extra={"type": kind})

    async def _heartbeats(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            refs = self.worker.heartbeat_refs()
            if not refs:
                continue
            message: dict[str, JsonValue] = {"type": "heartbeat", "attempts": refs}
            try:
                submit = self.worker.outbox.submit(message, resend=False)
                ack = await asyncio.wait_for(submit, interval * 2)
            except (LinkDown, TimeoutError):
                continue
            for status in ack.get("attempts", []):
                self.worker.on_attempt_status(status["attempt_id"], status["status"])


async def _receive(ws: ClientConnection) -> str | bytes:
    return await ws.recv()
