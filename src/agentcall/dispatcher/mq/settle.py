"""Settling task-queue deliveries once their decisions are committed (D-MQ-4, D-MQ-5).

Every consumer channel has one :class:`ChannelAcks`: the delivery tags it received and
has not settled yet. After a batch's transaction committed, :meth:`ChannelAcks.settle`
sends, per channel and in this order:

1. every requeue (``nack(requeue=true)``) and dead-letter (``nack(requeue=false)``) on
   its own;
2. the ACKs: one ``basic.ack(multiple=true)`` up to the highest ACK tag that lies below
   every other tag still unsettled on the channel (see :func:`ack_plan`), then one plain
   ACK per tag above it.

A multiple ACK therefore never covers a delivery whose decision is not committed yet
(it belongs to a later batch) nor one that is to be requeued or dead-lettered: every tag
it covers is either ACKed by this call or was settled before (the broker handles the
frames of a channel in order). Planning and sending happen under the channel's lock, so
two batches of the same channel never interleave their frames.

Frames are queued without waiting for the socket to drain: an AMQP ACK has no answer
anyway. If the channel is gone, the broker redelivers what was not settled and the inbox
deduplicates it (D-CMD-1).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Collection, Iterable
from enum import StrEnum
from typing import Protocol

import aiormq

from agentcall.dispatcher.logs import log

LOG = logging.getLogger("dispatcher.settle")


class Settle(StrEnum):
    """How a delivery is settled once its decision is committed."""

    ACK = "ack"
    DEAD_LETTER = "dead_letter"
    REQUEUE = "requeue"


def ack_plan(acks: Collection[int], others: Collection[int]) -> tuple[int | None, list[int]]:
    """``(upto, singles)`` for ACKing the tags ``acks`` of one channel, whose other
    unsettled tags are ``others`` (undecided, or decided by a batch still to settle).

    ``upto`` (or None) is the tag of one ``basic.ack(multiple=true)``: the highest ACK
    tag below the lowest of ``others``, when it covers at least two ACK tags; ``singles``
    are the remaining ACK tags, to be ACKed one by one, ascending.
    """
    floor = min(others, default=None)
    below = sorted(t for t in acks if floor is None or t < floor)
    above = sorted(t for t in acks if floor is not None and t > floor)
    if len(below) < 2:
        return None, [*below, *above]
    return below[-1], above


class SettleChannel(Protocol):
    """What settling needs of an aiormq channel."""

    def basic_ack(
        self, delivery_tag: int, multiple: bool = ..., wait: bool = ...
    ) -> Awaitable[None]:
        """ACK one delivery, or every one up to the tag (``multiple``)."""

    def basic_nack(
        self,
        delivery_tag: int,
        multiple: bool = ...,
        requeue: bool = ...,
        wait: bool = ...,
    ) -> Awaitable[None]:
        """Requeue or dead-letter (``requeue=False``) a delivery."""


class ChannelAcks:
    """The unsettled delivery tags of one consumer channel, settled after commits."""

    def __init__(self, channel: SettleChannel) -> None:
        self.channel = channel
        self._unsettled: set[int] = set()
        self._lock = asyncio.Lock()
        self.frames = 0  # settle frames sent (for tests and /status)

    @property
    def unsettled(self) -> frozenset[int]:
        return frozenset(self._unsettled)

    def received(self, tag: int) -> None:
        self._unsettled.add(tag)

    async def settle(self, settles: Iterable[tuple[int, Settle]]) -> None:
        """Send the settlements of committed decisions (see the module docstring)."""
        items = list(settles)
        async with self._lock:
            self._unsettled.difference_update(tag for tag, _ in items)
            # The nacks below go first, so they are no obstacle to the multiple ACK.
            acks = [tag for tag, how in items if how is Settle.ACK]
            upto, singles = ack_plan(acks, self._unsettled)
            try:
                for tag, how in items:
                    if how is not Settle.ACK:
                        await self._send(tag, how)
                if upto is not None:
                    await self._send(upto, Settle.ACK, multiple=True)
                for tag in singles:
                    await self._send(tag, Settle.ACK)
            except (aiormq.exceptions.AMQPError, ConnectionError, RuntimeError) as exc:
                # The channel is gone: the broker redelivers and the inbox dedupes (D-CMD-1).
                log(LOG, logging.DEBUG, "settle.failed", error=repr(exc))

    async def _send(self, tag: int, how: Settle, multiple: bool = False) -> None:
        self.frames += 1
        if how is Settle.ACK:
            await self.channel.basic_ack(tag, multiple=multiple, wait=False)
        else:
            await self.channel.basic_nack(tag, requeue=how is Settle.REQUEUE, wait=False)
