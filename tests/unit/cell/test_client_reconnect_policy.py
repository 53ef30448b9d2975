"""The cell client's reconnect policy (`cell/client/_reconnect.py`): the event stream's wait
after a lost or refused connection, capped exponential with equal jitter by the failures in
a row (reset by every hello)."""

from __future__ import annotations

import pytest

from agentcall.cell.client import ReconnectPolicy

POLICY = ReconnectPolicy(base_s=0.1, cap_s=5.0)


@pytest.mark.parametrize(
    ("failures", "jitter", "expected"),
    [
        (1, 0.0, 0.05),  # half of the base …
        (1, 0.999999, 0.1),  # … up to all of it
        (2, 0.5, 0.15),  # ceiling 0.2
        (6, 1.0, 3.2),
        (7, 0.0, 2.5),  # 6.4 → capped at 5
        (7, 1.0, 5.0),
        (100_000, 0.0, 2.5),  # a cell away for days: capped, no overflow
        (1, -2.0, 0.05),  # a jitter source out of [0, 1) is clamped
        (1, 3.0, 0.1),
    ],
)
def test_delay_by_failures_in_a_row(failures: int, jitter: float, expected: float) -> None:
    assert POLICY.delay(failures, jitter) == pytest.approx(expected, rel=1e-5)


def test_the_default_is_the_stream_policy() -> None:
    assert ReconnectPolicy() == POLICY


@pytest.mark.parametrize(("base", "cap"), [(0.0, 1.0), (1.0, 0.0), (-0.1, 5.0)])
def test_a_policy_without_positive_bounds_is_refused(base: float, cap: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        ReconnectPolicy(base, cap)


@pytest.mark.parametrize("failures", [0, -3])
def test_failures_count_from_one(failures: int) -> None:
    with pytest.raises(ValueError, match="from 1"):
        POLICY.delay(failures, 0.5)
