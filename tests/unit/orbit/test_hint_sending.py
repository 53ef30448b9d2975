"""When a process's wake-up hints leave (docs/orbit/scaling.md §1): the first ready queue of a
loop turn at once, the others named in the same turn at its end, in one datagram per peer."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from agentcall.orbit.domain.peers import decode
from agentcall.orbit.execution.peers import HintSender

pytestmark = pytest.mark.unit

Q1, Q2, Q3 = "1" * 32, "2" * 32, "3" * 32
PEERS = (("127.0.0.1", 1), ("127.0.0.1", 2))


class _Transport:
    def __init__(self) -> None:
        self.sent: list[tuple[tuple[str, ...], tuple[str, int]]] = []

    def is_closing(self) -> bool:
        return False

    def sendto(self, data: bytes, address: tuple[str, int]) -> None:
        self.sent.append((decode(data), address))


def _hints() -> tuple[HintSender, _Transport]:
    hints = HintSender()
    transport = _Transport()
    hints.transport = cast(Any, transport)
    hints.peers = PEERS
    return hints, transport


async def test_the_first_hint_of_a_turn_leaves_at_once() -> None:
    hints, transport = _hints()
    hints.announce((Q1,))
    assert transport.sent == [((Q1,), PEERS[0]), ((Q1,), PEERS[1])]
    await asyncio.sleep(0)  # the turn ends: nothing more was named, nothing more is sent
    assert len(transport.sent) == 2


async def test_the_rest_of_a_turn_goes_in_one_datagram_per_peer_at_its_end() -> None:
    hints, transport = _hints()
    hints.announce((Q1,))
    hints.announce((Q2,))
    hints.announce((Q3, Q1))  # Q1 again: its new work may have committed after the first
    assert len(transport.sent) == 2
    await asyncio.sleep(0)
    assert transport.sent[2:] == [((Q1, Q2, Q3), PEERS[0]), ((Q1, Q2, Q3), PEERS[1])]
    hints.announce((Q2,))  # a new turn: at once again
    assert transport.sent[4:] == [((Q2,), PEERS[0]), ((Q2,), PEERS[1])]


async def test_no_peer_or_no_queue_sends_nothing() -> None:
    hints, transport = _hints()
    hints.announce(())
    hints.peers = ()
    hints.announce((Q1,))
    await asyncio.sleep(0)
    assert transport.sent == []
