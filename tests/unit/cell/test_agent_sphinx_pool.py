"""The pocketsphinx decoder pool: bounded, reused, never loses a decoder."""

from __future__ import annotations

import asyncio

import pytest

from agentcall.cell.agent.providers_errors import ProviderConfigError, ProviderError
from agentcall.cell.agent.providers_sphinx import DecoderPool


class Factory:
    def __init__(self, fail: bool = False) -> None:
        self.made = 0
        self.fail = fail

    def __call__(self) -> str:
        if self.fail:
            raise RuntimeError("model missing")
        self.made += 1
        return f"decoder-{self.made}"


@pytest.mark.parametrize(("size", "count", "created"), [(2, 1, 1), (2, 5, 2), (3, 0, 0)])
def test_preload_loads_up_to_count_within_size(size: int, count: int, created: int) -> None:
    factory = Factory()
    pool = DecoderPool(size, factory)
    pool.preload(count)
    pool.preload(count)  # idempotent
    assert pool.created == factory.made == created


async def test_acquire_reuses_released_decoders_and_waits_when_all_are_busy() -> None:
    factory = Factory()
    pool = DecoderPool(1, factory)
    first = await pool.acquire()
    waiter = asyncio.ensure_future(pool.acquire())
    await asyncio.sleep(0.12)
    assert not waiter.done()  # the only decoder is busy
    pool.release(first)
    assert await asyncio.wait_for(waiter, 1.0) == first
    assert factory.made == 1


async def test_a_failed_load_frees_its_slot() -> None:
    pool = DecoderPool(1, Factory(fail=True))
    with pytest.raises(RuntimeError):
        await pool.acquire()
    assert pool.created == 0


def test_pool_size_must_be_positive() -> None:
    with pytest.raises(ProviderConfigError, match="max_decoders"):
        DecoderPool(0)


class Closable:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


async def test_closing_the_pool_ends_idle_decoders_now_and_busy_ones_on_return() -> None:
    pool = DecoderPool(2, Closable)
    busy = await pool.acquire()
    idle = await pool.acquire()
    pool.release(idle)
    pool.close()
    assert idle.closed and not busy.closed
    pool.release(busy)
    assert busy.closed and pool.created == 0
    with pytest.raises(ProviderError, match="stopped"):
        await pool.acquire()
