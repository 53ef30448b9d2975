"""Batch framing of orbit.worker.v1 (worker-protocol.md §2.1): frames of one message or a JSON
array of 1-256 messages; the writer puts the messages of one event-loop turn in one frame."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.protocol.frames import read_frame
from agentcall.orbit.protocol.framing import MAX_BATCH, MAX_FRAME_CHARS, FrameWriter, frame_chunks

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("texts", "frames"),
    [
        (['{"a":1}'], ['{"a":1}']),
        (['{"a":1}', '{"b":2}'], ['[{"a":1},{"b":2}]']),
        (["{}"] * (MAX_BATCH + 1), ["[" + ",".join(["{}"] * MAX_BATCH) + "]", "{}"]),
        (["x" * MAX_FRAME_CHARS, "y"], ["x" * MAX_FRAME_CHARS, "y"]),
        ([], []),
    ],
)
def test_frame_chunks(texts: list[str], frames: list[str]) -> None:
    assert frame_chunks(texts) == frames


@pytest.mark.parametrize(
    ("text", "batching", "messages"),
    [
        ('{"type":"flow"}', True, [{"type": "flow"}]),
        ('[{"type":"flow"},{"type":"heartbeat"}]', True, [{"type": "flow"}, {"type": "heartbeat"}]),
        ('[{"type":"flow"}]', False, [[{"type": "flow"}]]),  # v1 framing: one (invalid) value
        ("null", True, [None]),
    ],
)
def test_read_frame(text: str, batching: bool, messages: list[object]) -> None:
    assert read_frame(text, batching) == messages


@pytest.mark.parametrize("text", ["[]", "[" + ",".join(["{}"] * (MAX_BATCH + 1)) + "]", "[1,"])
def test_read_frame_refuses_bad_batches(text: str) -> None:
    with pytest.raises(InvalidArgument):
        read_frame(text, True)


async def test_messages_of_one_turn_share_a_frame_and_later_ones_follow() -> None:
    frames: list[str] = []

    async def send(frame: str) -> None:
        frames.append(frame)

    writer = FrameWriter(send)
    await asyncio.gather(*(writer(json.dumps({"n": n})) for n in range(3)))
    await writer('{"n":3}')
    assert [json.loads(f) for f in frames] == [[{"n": 0}, {"n": 1}, {"n": 2}], {"n": 3}]


async def test_a_failed_write_fails_every_sender_of_the_frame_and_the_next_frame_is_new() -> None:
    calls: list[str] = []

    async def send(frame: str) -> None:
        calls.append(frame)
        if len(calls) == 1:
            raise ConnectionError("gone")

    writer = FrameWriter(send)
    outcomes = await asyncio.gather(writer("1"), writer("2"), return_exceptions=True)
    assert [type(o) for o in outcomes] == [ConnectionError, ConnectionError]
    await writer("3")
    assert calls == ["[1,2]", "3"]


async def test_a_message_sent_without_linger_is_written_before_the_turn_goes_on() -> None:
    frames: list[str] = []

    async def send(frame: str) -> None:
        frames.append(frame)

    writer = FrameWriter(send)
    urgent = asyncio.ensure_future(writer('{"lease":1}', linger=False))
    await asyncio.sleep(0)  # one step of the task: with a linger it would still be waiting
    assert frames == ['{"lease":1}']
    await urgent
    await asyncio.gather(writer("1"), writer("2", linger=False))  # joins the gathering frame
    assert frames[1:] == ["[1,2]"]


async def test_several_messages_at_once_join_the_turn_s_frame_in_their_order() -> None:
    frames: list[str] = []

    async def send(frame: str) -> None:
        frames.append(frame)

    writer = FrameWriter(send)
    await asyncio.gather(writer("1"), writer.many(["2", "3"]), writer("4"))
    await writer.many(["5", "6"])
    await writer.many([])  # nothing to send: no frame
    assert frames == ["[1,2,3,4]", "[5,6]"]
