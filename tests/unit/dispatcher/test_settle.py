"""Settling deliveries after the commit in few frames (D-MQ-4 ACK after commit, D-MQ-5)."""

from __future__ import annotations

from typing import Any

import aiormq
import pytest

from agentcall.dispatcher.mq.settle import ChannelAcks, Settle, ack_plan

# (name, ACK tags, other unsettled tags, expected multiple-ACK tag, expected single ACKs)
PLANS = [
    ("D-MQ-4 everything decided: one multiple ACK", [1, 2, 3], [], 3, []),
    ("D-MQ-4 a later batch is not covered", [1, 2, 3], [4, 5], 3, []),
    ("D-MQ-4 an undecided tag below blocks what lies above it", [1, 2, 4, 5], [3], 2, [4, 5]),
    ("D-MQ-4 undecided first: singles only", [2, 3], [1], None, [2, 3]),
    ("one ACK is a plain ACK", [7], [], None, [7]),
    ("one below the gap is a plain ACK", [1, 3, 4], [2], None, [1, 3, 4]),
    ("unordered input", [5, 1, 4, 2], [3], 2, [4, 5]),
    ("nothing to ACK", [], [1, 2], None, []),
]


@pytest.mark.parametrize(
    ("name", "acks", "others", "upto", "singles"), PLANS, ids=[p[0] for p in PLANS]
)
def test_ack_plan(
    name: str, acks: list[int], others: list[int], upto: int | None, singles: list[int]
) -> None:
    assert ack_plan(acks, others) == (upto, singles)


def covered(frames: list[tuple[Any, ...]], received: set[int]) -> dict[int, str]:
    """How the broker settles each received tag, replaying the frames in order."""
    fate: dict[int, str] = {}
    for kind, tag, flag in frames:
        if kind == "ack" and flag:  # multiple: every tag up to ``tag`` not yet settled
            fate.update({t: "ack" for t in received if t <= tag and t not in fate})
        elif kind == "ack":
            fate.setdefault(tag, "ack")
        else:
            fate.setdefault(tag, "requeue" if flag else "dead_letter")
    return fate


class FakeChannel:
    """Records the settle frames an aiormq channel would send."""

    def __init__(self, fail: bool = False) -> None:
        self.frames: list[tuple[Any, ...]] = []
        self.fail = fail

    async def basic_ack(self, delivery_tag: int, multiple: bool = False, wait: bool = True) -> None:
        assert wait is False
        if self.fail:
            raise aiormq.exceptions.ChannelInvalidStateError("closed")
        self.frames.append(("ack", delivery_tag, multiple))

    async def basic_nack(
        self, delivery_tag: int, multiple: bool = False, requeue: bool = True, wait: bool = True
    ) -> None:
        assert wait is False and multiple is False
        self.frames.append(("nack", delivery_tag, requeue))


def channel_acks(channel: FakeChannel, tags: range) -> ChannelAcks:
    acks = ChannelAcks(channel)
    for tag in tags:
        acks.received(tag)
    return acks


async def test_batch_acked_in_one_frame_later_batch_untouched_d_mq_4() -> None:
    channel = FakeChannel()
    acks = channel_acks(channel, range(1, 9))
    await acks.settle([(t, Settle.ACK) for t in range(1, 5)])  # tags 5..8: not committed
    assert channel.frames == [("ack", 4, True)]
    assert covered(channel.frames, set(range(1, 9))) == {1: "ack", 2: "ack", 3: "ack", 4: "ack"}
    assert acks.unsettled == frozenset(range(5, 9))
    await acks.settle([(t, Settle.ACK) for t in range(5, 9)])
    assert channel.frames[-1] == ("ack", 8, True)
    assert acks.unsettled == frozenset()


async def test_requeue_and_dead_letter_never_covered_by_a_multiple_ack_d_mq_5() -> None:
    channel = FakeChannel()
    acks = channel_acks(channel, range(1, 7))
    await acks.settle(
        [
            (1, Settle.ACK),
            (2, Settle.REQUEUE),
            (3, Settle.ACK),
            (4, Settle.DEAD_LETTER),
            (5, Settle.ACK),
        ]
    )
    # nacks go first, so the multiple ACK that follows may span them
    assert channel.frames[:2] == [("nack", 2, True), ("nack", 4, False)]
    fate = covered(channel.frames, set(range(1, 7)))
    assert fate == {1: "ack", 2: "requeue", 3: "ack", 4: "dead_letter", 5: "ack"}
    assert 6 not in fate, "an undecided delivery is never ACKed"


async def test_out_of_order_batches_of_one_channel_d_mq_4() -> None:
    """The second batch commits first (tags 3, 4): nothing of the first may be ACKed."""
    channel = FakeChannel()
    acks = channel_acks(channel, range(1, 5))
    await acks.settle([(3, Settle.ACK), (4, Settle.ACK)])
    assert covered(channel.frames, set(range(1, 5))) == {3: "ack", 4: "ack"}
    await acks.settle([(1, Settle.ACK), (2, Settle.ACK)])
    assert covered(channel.frames, set(range(1, 5))) == dict.fromkeys(range(1, 5), "ack")


async def test_closed_channel_is_not_an_error() -> None:
    """The broker redelivers what a dead channel did not settle (inbox dedupe, D-CMD-1)."""
    acks = channel_acks(FakeChannel(fail=True), range(1, 3))
    await acks.settle([(1, Settle.ACK), (2, Settle.ACK)])
    assert acks.unsettled == frozenset()
