"""Publishing a round of messages on a confirm channel in one write (performance).

``aiormq.Channel.basic_publish`` costs a task, a timeout scope, the channel lock, a
queue hand-off and one socket write per message, which made the outbox relay the
largest CPU cost of the D. :func:`publish_round` does what ``basic_publish`` does for a
whole round under one hold of the channel lock — every message gets the next delivery
tag, a confirmation future in ``channel.confirmations`` and its ``message_id`` in
``channel.message_id_delivery_tag`` (so a mandatory return fails that very future with
``PublishError``), then all frames go to the connection's writer as one chunk — and
waits for the confirmations. aiormq itself settles the futures: a broker ACK, a nack
(``DeliveryError``), a return (``PublishError``, the channel is opened with
``on_return_raises``), a closed channel or connection (the error that closed it).

If the frames could not be queued (cancelled), nothing of the round reached the broker:
the tags and futures are taken back, as ``basic_publish`` does for one message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import aiormq
from aiormq.abc import ChannelFrame
from pamqp import commands as spec
from pamqp.body import ContentBody
from pamqp.frame import marshal
from pamqp.header import ContentHeader


@dataclass(frozen=True)
class Outgoing:
    """One persistent, mandatory message (``properties.message_id`` must be set)."""

    body: bytes
    routing_key: str
    properties: spec.Basic.Properties


def _payload(channel: aiormq.Channel, exchange: str, messages: Sequence[Outgoing]) -> bytes:
    """The frames of every message, marshalled once (the publish method frame is the same
    for every message of a routing key)."""
    number, size = channel.number, channel.max_content_size
    methods: dict[str, bytes] = {}
    parts: list[bytes] = []
    for message in messages:
        method = methods.get(message.routing_key)
        if method is None:
            frame = spec.Basic.Publish(
                exchange=exchange, routing_key=message.routing_key, mandatory=True
            )
            method = methods[message.routing_key] = marshal(frame, number)
        body = message.body
        parts.append(method)
        parts.append(
            marshal(ContentHeader(properties=message.properties, body_size=len(body)), number)
        )
        parts.extend(
            marshal(ContentBody(body[i : i + size]), number) for i in range(0, len(body), size)
        )
    return b"".join(parts)


def _forget(channel: aiormq.Channel, messages: Sequence[Outgoing], first: int) -> None:
    """Drop the return look-up entries of the round (those still pointing at its tags)."""
    lookup = channel.message_id_delivery_tag
    for tag, message in enumerate(messages, start=first):
        message_id = str(message.properties.message_id)
        if lookup.get(message_id) == tag:
            del lookup[message_id]


async def _send(
    channel: aiormq.Channel, exchange: str, messages: Sequence[Outgoing]
) -> tuple[int, list[asyncio.Future[object]]]:
    """Register a confirmation per message and queue every frame at once; returns the
    round's first delivery tag and its futures."""
    payload = _payload(channel, exchange, messages)
    futures: list[asyncio.Future[object]] = []
    async with channel.lock:
        first = channel.delivery_tag + 1
        for message in messages:
            channel.delivery_tag += 1
            future: asyncio.Future[object] = channel.create_future()
            channel.confirmations[channel.delivery_tag] = future
            channel.message_id_delivery_tag[str(message.properties.message_id)] = (
                channel.delivery_tag
            )
            futures.append(future)
        try:
            await channel.write_queue.put(ChannelFrame(payload=payload, should_close=False))
        except BaseException:
            _take_back(channel, messages, first, futures)
            raise
    return first, futures


def _take_back(
    channel: aiormq.Channel,
    messages: Sequence[Outgoing],
    first: int,
    futures: list[asyncio.Future[object]],
) -> None:
    """The round was not queued: its tags are reused, its futures cancelled."""
    channel.delivery_tag = first - 1
    for tag, future in enumerate(futures, start=first):
        channel.confirmations.pop(tag, None)
        future.cancel()
    _forget(channel, messages, first)


async def _settled(futures: Sequence[asyncio.Future[object]], timeout: float) -> None:
    """Wait until every future is done or ``timeout`` passed. Confirms mostly come as
    ``multiple`` ACKs, so a wait on one future usually finds the next ones done."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    for future in futures:
        remaining = deadline - loop.time()
        if future.done():
            continue
        if remaining <= 0:
            return
        await asyncio.wait((future,), timeout=remaining)


def _outcome(future: asyncio.Future[object]) -> str | None:
    """None for a positive confirm without return, else a short error text."""
    if not future.done():
        future.cancel()
        return "TimeoutError: no confirm in time"
    if future.cancelled():
        return "CancelledError: the channel went away"
    error = future.exception()
    if isinstance(error, aiormq.exceptions.PublishError):
        return "returned: no queue bound for the result route (mandatory)"
    if isinstance(error, aiormq.exceptions.DeliveryError):
        return "nacked by the broker"
    if error is not None:
        return f"{type(error).__name__}: {error}"[:200]
    if isinstance(future.result(), spec.Basic.Ack):
        return None
    return "returned: not confirmed"


async def publish_round(
    channel: aiormq.Channel, exchange: str, messages: Sequence[Outgoing], timeout: float
) -> list[str | None]:
    """Publish ``messages`` (persistent, mandatory) and wait up to ``timeout`` seconds
    for their confirms; per message None (confirmed, not returned) or an error text."""
    if not messages:
        return []
    first, futures = await _send(channel, exchange, messages)
    try:
        await _settled(futures, timeout)
    finally:
        outcomes = [_outcome(future) for future in futures]  # cancels the unconfirmed
        _forget(channel, messages, first)
    return outcomes
