"""The Orbit worker's one reconnect policy (`sdk/worker/link.ReconnectPolicy`): exponential
with full jitter, capped; the round comes from `next_server` (0 again after a welcomed
session, so one success resets it). Both retry loops of the worker use it: reconnecting a
session and re-sending a request the server answered UNAVAILABLE."""

from __future__ import annotations

import pytest

from agentcall.orbit.sdk.worker.link import ReconnectPolicy, next_server

POLICY = ReconnectPolicy(base_s=0.1, cap_s=10.0)


@pytest.mark.parametrize(
    ("round_", "jitter", "expected"),
    [
        (0, 0.0, 0.0),  # full jitter: the first retry may go at once …
        (0, 0.5, 0.05),
        (0, 0.999999, 0.1),  # … or wait up to the base
        (3, 0.5, 0.4),  # ceiling 0.8
        (6, 1.0, 6.4),
        (7, 1.0, 10.0),  # 12.8 → capped at 10
        (10_000, 0.25, 2.5),  # a server away for days: still capped, no overflow
        (2, -3.0, 0.0),  # a jitter source out of [0, 1) is clamped
        (2, 9.0, 0.4),
    ],
)
def test_delay_is_capped_full_jitter_by_round(round_: int, jitter: float, expected: float) -> None:
    assert POLICY.delay(round_, jitter) == pytest.approx(expected, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize(
    ("failures", "expected_delay"),
    [
        (0, 0.1),  # a welcomed session ended: the count was reset, the shortest wait
        (1, 0.2),  # one server: every failure in a row doubles the ceiling
        (2, 0.4),
        (9, 10.0),
    ],
)
def test_one_success_resets_the_backoff(failures: int, expected_delay: float) -> None:
    _, round_ = next_server(1, 0, failures)
    assert POLICY.delay(round_, 0.999999) == pytest.approx(expected_delay, rel=1e-5)


@pytest.mark.parametrize(("base", "cap"), [(0.0, 1.0), (0.1, 0.0), (-1.0, -1.0)])
def test_a_policy_without_positive_bounds_is_refused(base: float, cap: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        ReconnectPolicy(base, cap)


def test_a_negative_round_is_refused() -> None:
    with pytest.raises(ValueError, match="from 0"):
        POLICY.delay(-1, 0.5)
