"""The command-to-dial clock of an accepted execution starts when its own delivery
arrived: accepted executions are matched to their deliveries through the batch's
decisions (invalid bodies have none; duplicates, holds and rejections have one each)."""

from __future__ import annotations

import pytest

from agentcall.dispatcher.admission.service import accepted_arrivals
from agentcall.dispatcher.admission.transaction import Invalid, Item, Outcome, Valid
from tests.support import dispatcher_factories as f

pytestmark = pytest.mark.unit

INVALID = Invalid("mq:q", "invalid_json", "not JSON", b"{")


def valid(n: int) -> Valid:
    return Valid(f.command(command_id=f"cmd-{n}"), "task-a")


CASES = [
    ("one accepted", [valid(1)], [("accepted", "accepted")], ["x1"], {"x1": 1.0}),
    (
        "an invalid body before it has no decision",
        [INVALID, valid(2)],
        [("accepted", "accepted")],
        ["x2"],
        {"x2": 2.0},
    ),
    (
        "duplicates, rejections and holds between accepted ones",
        [valid(1), valid(2), INVALID, valid(4), valid(5), valid(6)],
        [
            ("accepted", "accepted"),
            ("duplicate", "duplicate"),
            ("rejected", "target_not_allowed"),
            ("held", "sip"),
            ("accepted", "accepted"),
        ],
        ["x1", "x6"],
        {"x1": 1.0, "x6": 6.0},
    ),
    ("nothing accepted", [valid(1)], [("rejected", "command_expired")], [], {}),
]


@pytest.mark.parametrize(
    ("name", "items", "decisions", "accepted", "arrivals"), CASES, ids=[c[0] for c in CASES]
)
def test_each_accepted_execution_gets_its_own_deliverys_arrival(
    name: str,
    items: list[Item],
    decisions: list[tuple[str, str]],
    accepted: list[str],
    arrivals: dict[str, float],
) -> None:
    received = [float(n) for n in range(1, len(items) + 1)]
    outcome = Outcome(accepted=accepted, decisions=decisions)
    assert accepted_arrivals(received, items, outcome) == arrivals
