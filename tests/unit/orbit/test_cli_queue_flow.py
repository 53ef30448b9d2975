"""`orbit queue set` changes only the rules it is given (`changed_flow`), refuses a command
that changes nothing or a malformed option before any request, and says what to write."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.cli.queue_flow import _key_limit, changed_flow

pytestmark = pytest.mark.unit
NONE: dict[str, Any] = {
    "clear": False,
    "max_running_per_key": None,
    "no_max_running_per_key": False,
    "key_limit": (),
    "no_key_limits": False,
    "rate": None,
    "burst": None,
    "per_key": None,
    "no_rate": False,
    "fairness": None,
}
CURRENT = {
    "fairness": True,
    "max_running_per_key": 3,
    "rate": {"per_second": 10, "burst": 10, "per_key": False},
}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"max_running_per_key": 5}, {**CURRENT, "max_running_per_key": 5}),
        ({"no_max_running_per_key": True}, {"fairness": True, "rate": CURRENT["rate"]}),
        ({"fairness": False}, {**CURRENT, "fairness": False}),
        ({"rate": 50}, {**CURRENT, "rate": {"per_second": 50, "per_key": False}}),
        ({"burst": 99}, {**CURRENT, "rate": {"per_second": 10, "burst": 99, "per_key": False}}),
        ({"per_key": True}, {**CURRENT, "rate": {"per_second": 10, "burst": 10, "per_key": True}}),
        ({"no_rate": True}, {"fairness": True, "max_running_per_key": 3}),
        ({"clear": True, "rate": 7}, {"rate": {"per_second": 7}}),
        (
            {
                "key_limit": (
                    {"pattern": "bank-*", "max_running": 1},
                    {"pattern": "a=b", "max_running": 2},
                )
            },
            {
                **CURRENT,
                "key_limits": [
                    {"pattern": "bank-*", "max_running": 1},
                    {"pattern": "a=b", "max_running": 2},
                ],
            },
        ),
    ],
)
def test_only_the_rules_given_change(options: dict[str, Any], expected: dict[str, Any]) -> None:
    assert changed_flow(CURRENT, {**NONE, **options}) == expected


def test_a_key_limit_is_pattern_equals_number_split_at_the_last_equals_sign() -> None:
    assert _key_limit("a=b=2") == {"pattern": "a=b", "max_running": 2}


def test_a_burst_without_any_rate_is_refused() -> None:
    with pytest.raises(Exception, match="need --rate"):
        changed_flow({"fairness": False}, {**NONE, "burst": 5})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a rule to change"),
        (["--max-running-per-key", "0"], "--max-running-per-key"),
        (["--key-limit", "nolimit"], "write PATTERN=N"),
    ],
)
def test_queue_set_refuses_before_any_request(args: list[str], message: str) -> None:
    env = {"ORBIT_URL": "http://127.0.0.1:9", "ORBIT_TOKEN": "orb_x"}
    result = CliRunner().invoke(main, ["queue", "set", "1" * 32, *args], env=env)
    assert result.exit_code == 2, result.output
    assert message in result.output
