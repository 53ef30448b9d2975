"""The one validity window of every command, call.execute and task.control (D-NOTE-3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.dispatcher.domain.validity import Validity, expired, validity

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
S = timedelta(seconds=1)


@pytest.mark.parametrize(
    ("issued_at", "not_after", "skew_s", "expected"),
    [
        (NOW - 5 * S, NOW + 60 * S, 120, Validity.VALID),
        (NOW - 5 * S, NOW + S, 120, Validity.VALID),
        (NOW - 5 * S, NOW, 120, Validity.EXPIRED),  # the boundary instant is already too late
        (NOW - 5 * S, NOW - S, 120, Validity.EXPIRED),
        (NOW + 120 * S, NOW + 600 * S, 120, Validity.VALID),  # within the allowance
        (NOW + 121 * S, NOW + 600 * S, 120, Validity.INVALID_WINDOW),
        (NOW + 10 * S, NOW + 600 * S, 5, Validity.INVALID_WINDOW),  # a tighter allowance
        (NOW + 300 * S, NOW - S, 120, Validity.INVALID_WINDOW),  # the window check first
    ],
)
def test_validity_window_d_note_3(
    issued_at: datetime, not_after: datetime, skew_s: float, expected: Validity
) -> None:
    assert validity(issued_at, not_after, NOW, skew_s) is expected


def test_expiry_boundary_is_stated_once_d_note_3() -> None:
    """``now >= not_after``: commands and controls share this one function."""
    assert expired(NOW, NOW) and expired(NOW - S, NOW) and not expired(NOW + S, NOW)


def test_reason_codes_are_the_contract_codes() -> None:
    assert {Validity.EXPIRED.value, Validity.INVALID_WINDOW.value} == {
        "command_expired",
        "invalid_validity_window",
    }
