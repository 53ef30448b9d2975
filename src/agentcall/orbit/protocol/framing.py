"""Batch framing of `orbit.worker.v1` (worker-protocol.md §2.1), shared by the worker SDK and the
server: when both sides agreed on the WebSocket subprotocol `orbit.worker.v1.batch`, a text
frame carries one message object or a JSON array of 1-256 message objects, each processed in
order exactly as if it had come in its own frame. The messages themselves, their acks, fencing
and resend rules do not change. `FrameWriter` puts the messages sent during one event-loop
turn into one frame: fewer frames, system calls and wake-ups per task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

PROTOCOL = "orbit.worker.v1"
BATCH_PROTOCOL = "orbit.worker.v1.batch"
MAX_BATCH = 256
MAX_FRAME_CHARS = 512 * 1024  # a batch frame stays far below max_message_bytes (1 MiB)
Send = Callable[[str], Awaitable[None]]


def frame_chunks(texts: list[str]) -> list[str]:
    """Messages (JSON texts) as frames: a lone message as itself, several as JSON arrays of at
    most MAX_BATCH messages and about MAX_FRAME_CHARS characters."""
    frames: list[str] = []
    chunk: list[str] = []
    size = 0
    for text in texts:
        if chunk and (len(chunk) == MAX_BATCH or size + len(text) > MAX_FRAME_CHARS):
            frames.append(_frame(chunk))
            chunk, size = [], 0
        chunk.append(text)
        size += len(text) + 1
    if chunk:
        frames.append(_frame(chunk))
    return frames


def _frame(chunk: list[str]) -> str:
    return chunk[0] if len(chunk) == 1 else "[" + ",".join(chunk) + "]"


class FrameWriter:
    """`await writer(text)` returns once the frame holding `text` was written (or raises what
    writing it raised). The first message of a turn waits one loop iteration so that the other
    messages of the same turn join its frame; `linger=False` skips that wait for a message that
    must not wait behind the rest of the turn (an eager lease: the submit's HTTP answer would
    be written first), still joining a frame already gathering. `writer.many(texts)` is the
    same for several messages at once (the leases of one dispatch round), in their order."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._texts: list[str] = []
        self._written: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, text: str, *, linger: bool = True) -> None:
        await self.many([text], linger=linger)

    async def many(self, texts: list[str], *, linger: bool = True) -> None:
        if not texts:
            return
        gathering = bool(self._texts)
        self._texts.extend(texts)
        if gathering:
            assert self._written is not None
            await asyncio.shield(self._written)
            return
        written = self._written = asyncio.get_running_loop().create_future()
        try:
            if linger:
                await asyncio.sleep(0)
            async with self._lock:
                taken, self._texts = self._texts, []
                for frame in frame_chunks(taken):
                    await self._send(frame)
        except asyncio.CancelledError:
            self._fail(written, ConnectionError("frame not written: its writer was cancelled"))
            raise
        except Exception as exc:
            self._fail(written, exc)
            raise
        written.set_result(None)

    def _fail(self, written: asyncio.Future[None], exc: BaseException) -> None:
        if self._written is written:  # the batch was not taken yet: nobody will write it
            self._texts = []
        written.set_exception(exc)
        written.exception()  # retrieved: only the waiting senders re-raise it
