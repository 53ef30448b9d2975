"""O-API-1 with the token cache (`agentcall.orbit.store.token_cache`): records live at most the TTL,
unknown secrets are never cached, the size is bounded (the setting is validated in
`test_settings.py`)."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.tokens import Permission, TokenRecord
from agentcall.orbit.store.token_cache import TokenCache

pytestmark = pytest.mark.unit

RECORD = TokenRecord("t" * 32, "n" * 32, frozenset(Permission), frozenset(), None, None)


@pytest.mark.parametrize(
    ("loaded", "now", "hit"),
    [
        (100.0, 100.0, True),
        (100.0, 100.99, True),
        (100.0, 101.0, False),
        (100.0, 250.0, False),
        (100.0, 99.0, False),
    ],  # a clock going backwards never extends a record's life
)
def test_o_api_1_a_record_lives_less_than_the_ttl(loaded: float, now: float, hit: bool) -> None:
    cache = TokenCache(ttl_s=1.0)
    cache.put("h", RECORD, loaded)
    assert (cache.get("h", now) is RECORD) is hit


def test_o_api_1_unknown_secrets_are_never_cached() -> None:
    cache = TokenCache(ttl_s=1.0)
    cache.put("unknown", None, 0.0)
    assert cache.get("unknown", 0.0) is None and len(cache) == 0


def test_ttl_zero_turns_the_cache_off() -> None:
    cache = TokenCache(ttl_s=0)
    cache.put("h", RECORD, 0.0)
    assert cache.get("h", 0.0) is None


def test_the_cache_is_bounded() -> None:
    cache = TokenCache(ttl_s=10.0, max_entries=3)
    for index in range(3):
        cache.put(f"old{index}", RECORD, 0.0)
    cache.put("fresh", RECORD, 5.0)  # full of live records: starts over
    assert len(cache) == 1 and cache.get("fresh", 5.0) is RECORD
    cache.put("a", RECORD, 5.0)
    cache.put("b", RECORD, 5.0)
    cache.put("c", RECORD, 20.0)  # the others expired: only they are dropped
    assert len(cache) == 1 and cache.get("c", 20.0) is RECORD
