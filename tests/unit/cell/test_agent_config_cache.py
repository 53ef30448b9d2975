"""Reading each distinct agent config once: same results, refusals never cached (D-CFG-2)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from agentcall.cell.agent.config import AgentConfigCache, parse_agent_config
from agentcall.cell.calls.plan import canonical_json, parse_plan, plan_digest
from agentcall.cell.domain.errors import InvalidPlanError
from tests.support.agent_configs import ASR_ONLY, FULL_AI, full_ai

from .plans import plan_body


def _old_digest(body: dict[str, Any]) -> str:
    """The digest as first defined: the whole kept body encoded in one go."""
    kept = {k: v for k, v in body.items() if k not in ("recording_upload", "tags")}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _with_llm(**fields: Any) -> dict[str, Any]:
    config = copy.deepcopy(FULL_AI)
    config["llm"].update(fields)
    return config


@pytest.mark.parametrize(
    "body",
    [
        plan_body(),
        plan_body(agent=copy.deepcopy(ASR_ONLY)),
        plan_body(tags={"task_id": "t"}, recording_upload={"upload_id": "u", "url": "https://x"}),
        plan_body(callee="15000000000", agent=_with_llm(model="模型-v1", temperature=1e-7)),
        plan_body(agent={**FULL_AI, "prompt": {"text": 'quote " and \\ and \n and é'}}),
    ],
)
def test_plan_digest_is_unchanged_when_assembled_from_the_agent_text(body: dict[str, Any]) -> None:
    assert plan_digest(body, canonical_json(body["agent"])) == _old_digest(body)
    assert plan_digest(body) == _old_digest(body)
    assert parse_plan(body, AgentConfigCache()).digest == _old_digest(body)


def test_cache_returns_what_an_uncached_read_returns() -> None:
    cache = AgentConfigCache()
    first = cache.parse(FULL_AI, canonical_json(FULL_AI))
    again = cache.parse(copy.deepcopy(FULL_AI), canonical_json(FULL_AI))
    assert first == again == parse_agent_config(FULL_AI)
    assert again is first and len(cache) == 1


def test_plans_sharing_a_config_read_it_once_with_equal_results() -> None:
    cache = AgentConfigCache()
    plans = [parse_plan(plan_body(call_id=f"exec-{i}"), cache) for i in range(3)]
    assert len(cache) == 1
    assert all(p.agent == parse_agent_config(FULL_AI) for p in plans)
    other = parse_plan(plan_body(call_id="exec-asr", agent=copy.deepcopy(ASR_ONLY)), cache)
    assert len(cache) == 2 and other.agent == parse_agent_config(ASR_ONLY)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (full_ai(max_turns=0), "agent.conversation.max_turns"),
        ({**FULL_AI, "mode": "chatty"}, "agent.mode"),
        (None, "agent"),
    ],
)
def test_invalid_config_is_refused_every_time_and_never_cached(
    config: dict[str, Any] | None, field: str
) -> None:
    cache = AgentConfigCache()
    for _ in range(3):
        with pytest.raises(InvalidPlanError) as info:
            parse_plan(plan_body(agent=config), cache)
        assert info.value.field == field
    assert len(cache) == 0


def test_a_cached_config_does_not_admit_an_equal_looking_invalid_one() -> None:
    """256 == 256.0 in Python, but only the integer is a valid max_tokens."""
    cache = AgentConfigCache()
    parse_plan(plan_body(agent=_with_llm(max_tokens=256)), cache)
    for _ in range(2):
        with pytest.raises(InvalidPlanError) as info:
            parse_plan(plan_body(agent=_with_llm(max_tokens=256.0)), cache)
        assert info.value.field == "agent.llm.max_tokens"
    assert len(cache) == 1


def test_cache_is_bounded_and_keeps_the_most_recently_used() -> None:
    cache = AgentConfigCache(capacity=2)
    configs = [_with_llm(max_tokens=n) for n in (1, 2, 3)]
    keys = [canonical_json(c) for c in configs]
    first = cache.parse(configs[0], keys[0])
    cache.parse(configs[1], keys[1])
    assert cache.parse(configs[0], keys[0]) is first  # 0 is now the most recent
    cache.parse(configs[2], keys[2])  # evicts 1
    assert len(cache) == 2
    assert cache.parse(configs[0], keys[0]) is first
    assert cache.parse(configs[1], keys[1]) == parse_agent_config(configs[1])


def test_a_value_without_json_text_is_read_without_the_cache() -> None:
    cache = AgentConfigCache()
    with pytest.raises(InvalidPlanError):
        cache.parse(object(), None)
    assert cache.parse(FULL_AI, None) == parse_agent_config(FULL_AI)
    assert len(cache) == 0


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        AgentConfigCache(capacity=0)
