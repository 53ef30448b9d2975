"""`orbit worker --loop`: uvloop when installed (auto), the standard loop on request."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from agentcall.orbit.sdk.worker.cli import loop_factory

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("name", "expected"), [("auto", uvloop.Loop), ("uvloop", uvloop.Loop), ("asyncio", None)]
)
def test_loop_choice(name: str, expected: type | None) -> None:
    factory = loop_factory(name)
    if expected is None:
        assert factory is None
        return
    assert factory is not None
    loop = factory()
    try:
        assert isinstance(loop, expected) and isinstance(loop, asyncio.AbstractEventLoop)
    finally:
        loop.close()
