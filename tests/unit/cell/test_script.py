"""The simulation script: parsing, validation and first-match-wins callee matching."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcall.cell.agent.conversation import CalleeTurn
from agentcall.cell.agent.optout import DEFAULT_OPT_OUT_PHRASES
from agentcall.cell.domain.errors import ScriptError
from agentcall.cell.domain.model import Outcome
from agentcall.cell.sim.script import DEFAULT_BEHAVIOUR, load_script, parse_script

EXAMPLE = Path(__file__).parents[3] / "examples" / "cell-script.json"

SCRIPT: dict[str, Any] = {
    "version": 1,
    "rules": [
        {
            "name": "vip",
            "match": "15003164745",
            "outcome": "answered",
            "talk_ms": 9000,
            "turns": ["Hi", {"text": "Who is it?", "at_ms": 4000, "duration_ms": 900}],
        },
        {"match": {"glob": "1500*"}, "outcome": "busy"},
        {"match": {"regex": r"139\d{8}"}, "outcome": "failed", "reason_code": "sip_503"},
        {"match": {"exact": "BD1"}, "outcome": "rejected", "ring_ms": 10},
    ],
    "default": {"outcome": "no_answer"},
    "opt_out_phrases": ["leave me alone"],
    "time_scale": 0.01,
}


@pytest.mark.parametrize(
    ("callee", "rule", "outcome"),
    [
        ("15003164745", "vip", Outcome.ANSWERED),  # exact wins before the glob below it
        ("15001234567", "rules[1]", Outcome.BUSY),
        ("13912345678", "rules[2]", Outcome.FAILED),
        ("139123456789", "default", Outcome.NO_ANSWER),  # regex is a full match
        ("BD1", "rules[3]", Outcome.REJECTED),
        ("bd1", "default", Outcome.NO_ANSWER),  # case-sensitive
        ("", "default", Outcome.NO_ANSWER),
    ],
)
def test_first_matching_rule_wins(callee: str, rule: str, outcome: Outcome) -> None:
    name, behaviour = parse_script(SCRIPT).behaviour_for(callee)
    assert (name, behaviour.outcome) == (rule, outcome)


def test_rule_fields_and_outcome_defaults() -> None:
    script = parse_script(SCRIPT)
    vip = script.rules[0].behaviour
    assert vip.turns == (CalleeTurn("Hi"), CalleeTurn("Who is it?", 4000, 900))
    assert (vip.ring_ms, vip.talk_ms, vip.recording) == (2000, 9000, True)
    assert script.rules[1].behaviour.ring_ms == 500  # busy default
    assert script.rules[2].behaviour.reason_code == "sip_503"
    assert script.rules[3].behaviour.ring_ms == 10
    assert script.default.ring_ms is None  # no_answer rings until the ring timeout
    assert script.opt_out_phrases == ("leave me alone",)
    assert script.time_scale == 0.01


def test_empty_script_answers_everyone_with_defaults() -> None:
    script = parse_script({})
    assert script.behaviour_for("123") == ("default", DEFAULT_BEHAVIOUR)
    assert script.opt_out_phrases == DEFAULT_OPT_OUT_PHRASES


def _rule(**fields: Any) -> dict[str, Any]:
    return {"rules": [{"match": "1", "outcome": "answered", **fields}]}


@pytest.mark.parametrize(
    ("script", "field"),
    [
        ([], "body"),
        ({"rulez": []}, "rulez"),
        ({"version": 2}, "version"),
        (_rule(outcome="maybe"), "rules[0].outcome"),
        (_rule(ring_ms=-1), "rules[0].ring_ms"),
        (_rule(talk_ms="long"), "rules[0].talk_ms"),
        (_rule(recording="yes"), "rules[0].recording"),
        (_rule(turns=[{"txt": "hi"}]), "rules[0].turns[0].txt"),
        (_rule(turns=[{"text": "hi", "at_ms": -5}]), "rules[0].turns[0].at_ms"),
        (_rule(colour="red"), "rules[0].colour"),
        ({"rules": [{"match": "1", "outcome": "busy", "turns": ["hi"]}]}, "rules[0].turns"),
        ({"rules": [{"match": {"regex": "("}, "outcome": "busy"}]}, "rules[0].match.regex"),
        ({"rules": [{"match": {"like": "1%"}, "outcome": "busy"}]}, "rules[0].match.like"),
        ({"rules": [{"match": {}, "outcome": "busy"}]}, "rules[0].match"),
        ({"rules": [{"outcome": "busy"}]}, "rules[0].match"),
        ({"default": {"outcome": "busy", "match": "1"}}, "default.match"),
        ({"opt_out_phrases": ["ok", ""]}, "opt_out_phrases"),
        ({"time_scale": 0}, "time_scale"),
    ],
)
def test_invalid_script_names_the_field(script: Any, field: str) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(script)
    assert info.value.field == field


def test_load_script_reports_json_position(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"rules": [\n  oops]}')
    with pytest.raises(ScriptError, match="line 2"):
        load_script(path)


def test_load_missing_script(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path / "absent.json")


def test_shipped_example_script_is_valid() -> None:
    script = load_script(EXAMPLE)
    assert script.rules, "the example shows rules"
    outcomes = {rule.behaviour.outcome for rule in script.rules}
    assert outcomes == set(Outcome)
    assert json.loads(EXAMPLE.read_text())["default"]
