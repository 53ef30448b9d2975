"""Flow-control settings and task fields (`agentcall.orbit.domain.flow_settings`): strict
parsing, defaults, bounds and the key-limit lookup."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.flow_settings import (
    DEFAULT_PRIORITY,
    TASK_FIELDS,
    FlowSettings,
    KeyLimit,
    RateLimit,
    parse_patch,
    parse_settings,
    parse_task_flow,
    settings_view,
)
from agentcall.orbit.domain.strictjson import read_json


def body(text: str):
    return read_json(text.encode())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", FlowSettings()),
        ('{"max_running_per_key":3}', FlowSettings(max_running_per_key=3)),
        ('{"rate":{"per_second":50}}', FlowSettings(rate=RateLimit(50, 50))),
        (
            '{"rate":{"per_second":5,"burst":10,"per_key":true},"fairness":true}',
            FlowSettings(rate=RateLimit(5, 10, True), fairness=True),
        ),
        (
            '{"key_limits":[{"pattern":"vip:*","max_running":9}]}',
            FlowSettings(key_limits=(KeyLimit("vip:*", 9),)),
        ),
    ],
)
def test_settings_parse_and_round_trip(text, expected) -> None:
    settings = parse_settings(body(text))
    assert settings == expected
    assert parse_settings(settings_view(settings)) == expected


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"max_running_per_key":0}', "flow.max_running_per_key"),
        ('{"max_running_per_key":null}', "flow.max_running_per_key"),
        ('{"Max_running_per_key":1}', "flow.Max_running_per_key"),
        ('{"rate":{"burst":3}}', "flow.rate.per_second"),
        ('{"rate":{"per_second":1.5}}', "flow.rate.per_second"),
        ('{"fairness":"yes"}', "flow.fairness"),
        ('{"key_limits":[{"pattern":"a"}]}', "flow.key_limits[0].max_running"),
    ],
)
def test_settings_refused(text, field) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_settings(body(text))
    assert caught.value.field == field


def test_patch_needs_a_canonical_revision() -> None:
    assert parse_patch(body('{"expected_revision":"1","flow":{}}')) == (1, FlowSettings())
    for text in ('{"expected_revision":1,"flow":{}}', '{"expected_revision":"01","flow":{}}', "{}"):
        with pytest.raises(InvalidArgument):
            parse_patch(body(text))


def test_key_limit_lookup_first_pattern_wins() -> None:
    flow = FlowSettings(3, (KeyLimit("vip:*", 9), KeyLimit("vip:a*", 1)))
    assert [flow.limit_for(k) for k in ("vip:ab", "other", None)] == [9, 3, None]
    assert not FlowSettings().active and flow.active


def reader(text: str) -> ObjectReader:
    return ObjectReader(body(text), TASK_FIELDS)


def test_task_fields_defaults_and_bounds() -> None:
    assert parse_task_flow(reader("{}")).priority == DEFAULT_PRIORITY
    flow = parse_task_flow(
        reader('{"priority":9,"concurrency_key":"c","fairness_key":"t","fairness_weight":4}')
    )
    assert (flow.priority, flow.concurrency_key, flow.fairness_key, flow.fairness_weight) == (
        9,
        "c",
        "t",
        4,
    )
    for text in (
        '{"priority":0}',
        '{"priority":10}',
        '{"priority":"5"}',
        '{"fairness_weight":0}',
        '{"concurrency_key":"a\\nb"}',
        '{"fairness_key":""}',
    ):
        with pytest.raises(InvalidArgument):
            parse_task_flow(reader(text))
