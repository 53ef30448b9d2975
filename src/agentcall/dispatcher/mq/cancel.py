"""Cancellation through the AMQP libraries."""

from __future__ import annotations

import asyncio


def raise_if_cancelling(exc: BaseException | None) -> None:
    """Re-raise a cancellation that a library turned into another error.

    aio-pika/aiormq may replace the CancelledError of a task being cancelled by a
    channel error; swallowing that would keep a loop alive through shutdown.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError from exc
