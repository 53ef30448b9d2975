"""Small pieces of the WebSocket edge: the bearer secret of the upgrade request, refusing the
upgrade with the Task API error body, close reasons and best-effort closing."""

from __future__ import annotations

import json

from starlette.websockets import WebSocket, WebSocketDisconnect

from agentcall.orbit.api.http import envelope
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.tokens import bearer_secret

# what sending on a WebSocket that closed meanwhile raises (Starlette's disconnect, the server's
# ClientDisconnected, an OSError, or RuntimeError for a send after the close was sent)
GONE: tuple[type[BaseException], ...] = (WebSocketDisconnect, OSError, RuntimeError)


def secret_of(websocket: WebSocket) -> str:
    values = websocket.headers.getlist("authorization")
    return bearer_secret(values[0] if len(values) == 1 else None)


def msg_id_of(text: str) -> str | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # any text: malformed, or nested beyond the stack
        return None
    return msg_id_in(value)


def msg_id_in(value: object) -> str | None:
    """The `msg_id` of a decoded message, when it has a usable one."""
    msg_id = value.get("msg_id") if isinstance(value, dict) else None
    return msg_id if isinstance(msg_id, str) and 0 < len(msg_id) <= 64 else None


def close_reason(text: str) -> str:
    """Close reasons are limited to 123 bytes."""
    return text.encode("utf-8")[:120].decode("utf-8", "ignore")


async def deny(websocket: WebSocket, status: int, code: str, message: str) -> None:
    try:
        await websocket.send_denial_response(
            envelope(new_id(), status, error={"code": code, "message": message})
        )
    except RuntimeError:  # the server lacks the denial extension: refuse the upgrade plainly
        await websocket.close(1008, close_reason(message))


async def close_quietly(websocket: WebSocket, code: int, reason: str) -> None:
    try:
        await websocket.close(code, reason)
    except GONE:  # already closed
        return
