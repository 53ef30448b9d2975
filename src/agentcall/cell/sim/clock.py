"""Simulated time: milliseconds of the simulation, played ``scale`` times real time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class SimClock:
    def __init__(self, scale: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        if scale <= 0:
            raise ValueError("time scale must be > 0")
        self.scale = scale
        self._monotonic = monotonic
        self._t0 = monotonic()

    def restart(self) -> None:
        self._t0 = self._monotonic()

    def now_ms(self) -> int:
        return int((self._monotonic() - self._t0) / self.scale * 1000)

    async def sleep_until(self, at_ms: int, stop: asyncio.Event) -> bool:
        """Sleep until simulated ``at_ms``; True if ``stop`` was set first."""
        delay = (at_ms - self.now_ms()) * self.scale / 1000
        if stop.is_set():
            return True
        if delay <= 0:
            return False
        try:
            await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            return False
        return True
