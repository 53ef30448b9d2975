"""The admission gate of the whole D (D-DISC-6, D-DISC-9).

Closed until discovery has read an empty page since start; closed again by any
discovery error until the next catch-up. While closed no task queue is consumed, so
commands wait in their queues instead of being rejected. Listeners are woken on change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class GateStatus:
    open: bool
    why_closed: dict[str, str]


class Gate:
    def __init__(self) -> None:
        self._closed: dict[str, str] = {"discovery": "no empty discovery page read since start"}
        self._listeners: list[Callable[[], None]] = []
        self.opened_at: datetime | None = None

    @property
    def open(self) -> bool:
        return not self._closed

    @property
    def reasons(self) -> dict[str, str]:
        return dict(self._closed)

    def status(self) -> GateStatus:
        return GateStatus(self.open, self.reasons)

    def close(self, name: str, why: str) -> None:
        if self._closed.get(name) != why:
            self._closed[name] = why
            self._notify()

    def lift(self, name: str, now: datetime) -> None:
        if name in self._closed:
            del self._closed[name]
            if self.open:
                self.opened_at = now
            self._notify()

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def _notify(self) -> None:
        for listener in self._listeners:
            listener()
