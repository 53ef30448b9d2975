"""Waiting for a condition, polled: `wait_for` in synchronous tests, `wait_until` in asynchronous
ones. Both fail with an AssertionError naming what was awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    check: Callable[[], T | None],
    timeout: float = 15.0,
    what: str = "condition",
    step: float = 0.05,
) -> T:
    """The first true answer of ``check``, polled every ``step`` s for ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last={last!r}")
        time.sleep(step)


async def wait_until(
    check: Callable[[], Awaitable[bool]], timeout: float, what: str, step: float = 0.05
) -> None:
    """Return once ``check`` answers True, polled every ``step`` s for ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
