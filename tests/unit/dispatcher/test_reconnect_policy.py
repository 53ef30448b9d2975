"""The Dispatcher's one reconnect policy (domain/reconnect.py): capped exponential delays with
equal jitter, by the failures in a row. Every retry loop of the D uses it: the AMQP link, the
control-queue consumer, the outbox relay, the control lanes and the SaaS read retries."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.domain.reconnect import AMQP_LINK, ReconnectPolicy

POLICY = ReconnectPolicy(base_s=0.2, cap_s=5.0)


@pytest.mark.parametrize(
    ("failures", "jitter", "expected"),
    [
        (1, 0.0, 0.1),  # the first failure: half of the base …
        (1, 0.999999, 0.2),  # … up to all of it
        (2, 0.0, 0.2),  # the ceiling doubles per failure in a row
        (3, 0.5, 0.6),  # ceiling 0.8: between 0.4 and 0.8
        (5, 1.0, 3.2),
        (6, 0.0, 2.5),  # 0.2 * 32 = 6.4 → capped at 5.0
        (6, 1.0, 5.0),
        (10_000, 0.0, 2.5),  # a broker down for days: still capped, no overflow
        (1, -1.0, 0.1),  # a jitter source out of [0, 1) is clamped
        (1, 7.0, 0.2),
    ],
)
def test_delay_grows_by_failures_in_a_row_capped_and_jittered(
    failures: int, jitter: float, expected: float
) -> None:
    assert POLICY.delay(failures, jitter) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("failures", range(1, 40))
def test_jitter_spreads_every_delay_between_half_and_all_of_its_ceiling(failures: int) -> None:
    low, high = POLICY.delay(failures, 0.0), POLICY.delay(failures, 0.999999)
    assert low == pytest.approx(high / 2, rel=1e-5)
    assert 0.1 <= low < high <= 5.0


def test_a_success_resets_the_count_so_the_next_loss_waits_the_shortest_delay() -> None:
    """The loops count from zero after one success: failure 1 always waits the base."""
    assert AMQP_LINK.delay(1, 0.999999) == pytest.approx(AMQP_LINK.base_s, rel=1e-5)
    assert AMQP_LINK.delay(1, 0.0) < AMQP_LINK.delay(30, 0.0) == AMQP_LINK.cap_s / 2


@pytest.mark.parametrize(("base", "cap"), [(0.0, 1.0), (1.0, 0.0), (-1.0, 5.0), (0.5, -2.0)])
def test_a_policy_without_positive_bounds_is_refused(base: float, cap: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        ReconnectPolicy(base, cap)


@pytest.mark.parametrize("failures", [0, -1])
def test_failures_count_from_one(failures: int) -> None:
    with pytest.raises(ValueError, match="from 1"):
        POLICY.delay(failures, 0.5)
