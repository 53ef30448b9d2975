"""What a handler receives besides its payload: task facts, a cooperative cancellation token
usable from async code and from threads, and evidence recording."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentcall.orbit.sdk.worker.errors import Cancelled
from agentcall.orbit.sdk.worker.wire import to_json_value


class CancellationToken:
    """Set by the runtime (in the event loop thread); read by handlers anywhere."""

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._async = asyncio.Event()
        self.reason: str | None = None

    def cancel(self, reason: str) -> None:
        if not self._flag.is_set():
            self.reason = reason
            self._flag.set()
            self._async.set()

    @property
    def cancelled(self) -> bool:
        return self._flag.is_set()

    async def wait(self) -> str | None:
        """Async handlers: returns the reason once cancelled."""
        await self._async.wait()
        return self.reason

    def wait_sync(self, timeout: float | None = None) -> bool:
        """Sync handlers: sleep up to `timeout` seconds, waking early on cancellation."""
        return self._flag.wait(timeout)


@dataclass(frozen=True, slots=True)
class TaskInfo:
    task_id: str
    queue_id: str
    handler: str
    handler_version: str
    payload_version: str
    recovery_safety: str
    attempt_count: int
    max_attempts: int
    deadline_at: str
    start_deadline_at: str | None
    business_key: str | None


@dataclass(frozen=True, slots=True)
class AttemptInfo:
    attempt_id: str
    number: int
    lease_token: str
    attempt_deadline_at: str
    traceparent: str | None = None  # the server's attempt span, while tracing is on


EvidenceSink = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class Context:
    """Passed as the first argument of every handler."""

    task: TaskInfo
    attempt: AttemptInfo
    cancel_token: CancellationToken
    _sink: EvidenceSink = field(repr=False)

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.cancelled

    def raise_if_cancelled(self) -> None:
        if self.cancel_token.cancelled:
            raise Cancelled(f"attempt cancelled: {self.cancel_token.reason}")

    def add_evidence(
        self,
        key: str,
        kind: str,
        *,
        name: str | None = None,
        uri: str | None = None,
        media_type: str | None = None,
        size_bytes: int | None = None,
        sha256: str | None = None,
        data: Any = None,
    ) -> None:
        """Record what the handler produced or touched (kind: artifact, reference, note).
        Sent to Orbit at once, so that it survives a crash of this process; safe to call
        from sync handlers (threads) and async handlers alike. Never put secrets here."""
        item: dict[str, Any] = {"key": key, "kind": kind}
        optional = {
            "name": name,
            "uri": uri,
            "media_type": media_type,
            "size_bytes": size_bytes,
            "sha256": sha256,
            "data": data,
        }
        item.update({k: to_json_value(v) for k, v in optional.items() if v is not None})
        self._sink(item)
