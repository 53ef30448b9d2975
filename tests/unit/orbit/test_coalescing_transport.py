"""`CoalescingTransport`: a held write goes out with the next one or at the next loop turn;
bytes and their order never change; close, EOF and protocol changes send what is held, abort
drops it (table-driven over call sequences, against a recording transport)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest

from agentcall.orbit.api.transport import CoalescingTransport

pytestmark = pytest.mark.unit


class Recording(asyncio.Transport):
    """The real transport: what reached it, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.calls.append(("write", bytes(data)))

    def close(self) -> None:
        self.closing = True
        self.calls.append(("close", None))

    def abort(self) -> None:
        self.closing = True
        self.calls.append(("abort", None))

    def write_eof(self) -> None:
        self.calls.append(("eof", None))

    def is_closing(self) -> bool:
        return self.closing

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.calls.append(("protocol", None))

    def get_write_buffer_size(self) -> int:
        return 5


class Loop:
    """Just `call_soon`: callbacks run when the test says the loop turns."""

    def __init__(self) -> None:
        self.soon: list[Callable[[], None]] = []

    def call_soon(self, callback: Callable[[], None]) -> None:
        self.soon.append(callback)

    def turn(self) -> None:
        ready, self.soon = self.soon, []
        for callback in ready:
            callback()


def run(steps: list[str]) -> tuple[list[tuple[str, Any]], CoalescingTransport, Loop]:
    inner, loop = Recording(), Loop()
    transport = CoalescingTransport(inner, cast(asyncio.AbstractEventLoop, loop))
    actions: dict[str, Callable[[], object]] = {
        "turn": loop.turn,
        "close": transport.close,
        "abort": transport.abort,
        "eof": transport.write_eof,
        "flush": transport.flush,
        "protocol": lambda: transport.set_protocol(asyncio.Protocol()),
        "lost": lambda: setattr(inner, "closing", True),
    }
    for step in steps:
        if step.startswith("w:"):
            transport.write(step[2:].encode())
        else:
            actions[step]()
    return inner.calls, transport, loop


W = "write"


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (["w:head", "w:body"], [(W, b"headbody")]),  # one response: one write, at once
        (["w:head", "w:body", "turn"], [(W, b"headbody")]),
        (["w:head"], []),  # held until the loop turns
        (["w:head", "turn"], [(W, b"head")]),
        (["w:a", "w:b", "w:c"], [(W, b"ab")]),
        (["w:a", "w:b", "w:c", "turn"], [(W, b"ab"), (W, b"c")]),
        (["w:a", "w:b", "w:c", "w:d", "turn"], [(W, b"ab"), (W, b"cd")]),
        (["w:a", "turn", "w:b", "turn"], [(W, b"a"), (W, b"b")]),
        (["w:a", "w:b", "turn", "w:c", "w:d"], [(W, b"ab"), (W, b"cd")]),
        (["w:a", "close"], [(W, b"a"), ("close", None)]),
        (["w:a", "close", "turn"], [(W, b"a"), ("close", None)]),
        (["w:a", "eof"], [(W, b"a"), ("eof", None)]),
        (["w:a", "protocol"], [(W, b"a"), ("protocol", None)]),
        (["w:a", "abort", "turn"], [("abort", None)]),  # abort drops, as the transport's own
        (["w:a", "lost", "turn"], []),  # nothing is written to a closing transport
        (["w:a", "flush", "w:b", "w:c"], [(W, b"a"), (W, b"bc")]),
        (["close"], [("close", None)]),
    ],
)
def test_writes_reach_the_transport_in_order(steps: list[str], expected: list[Any]) -> None:
    calls, _, _ = run(steps)
    assert calls == expected
    sent = b"".join(data for kind, data in calls if kind == W)
    written = "".join(step[2:] for step in steps if step.startswith("w:")).encode()
    assert written.startswith(sent)


def test_one_flush_scheduled_at_a_time_and_buffer_size_counts_held_bytes() -> None:
    calls, transport, loop = run(["w:abc", "w:d", "w:ef"])
    assert len(loop.soon) == 1  # the first hold scheduled it; the second reuses it
    assert transport.get_write_buffer_size() == 5 + 2
    loop.turn()
    assert calls == [(W, b"abcd"), (W, b"ef")]
    assert transport.get_write_buffer_size() == 5
