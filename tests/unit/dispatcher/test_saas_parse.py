"""Strict reading of SaaS config bodies (D-CFG-1, D-CFG-2, D-CFG-3)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcall.dispatcher.domain.states import TaskStatus
from agentcall.dispatcher.saas.client import SaasInvalid
from agentcall.dispatcher.saas.parse import parse_quota, parse_sip, parse_task

EXAMPLES = Path(__file__).resolve().parents[3] / "contracts" / "dispatcher" / "examples" / "valid"
D_ID = "c046b893-8628-4589-ae50-619d049248a6"


def load(kind: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((EXAMPLES / kind / name).read_text())
    return body


SIP = load("config-read.sip_config", "spec-v0.2-2.1-sip.json")
TASK = load("config-read.task_config", "spec-v0.2-2.2-full-ai.json")
ASR = load("config-read.task_config", "spec-v0.2-2.3-asr-only.json")
QUOTA = load("config-read.tenant_quota", "spec-v0.2-2.6.1-quota.json")


def raw(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def changed(body: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> bytes:
    copy_ = copy.deepcopy(body)
    edit(copy_)
    return raw(copy_)


def test_sip_example_reads_d_cfg_1() -> None:
    snapshot = parse_sip(raw(SIP), D_ID)
    trunk = snapshot.trunks["trunk-mock"]
    assert trunk.caller_ids == {"caller-profile-mock": "BD00000000"}  # raw, not cleaned
    assert trunk.max_concurrent_calls is None and not trunk.fully_known
    assert snapshot.allowed_targets == {"15003164745", "15830461047"}
    assert trunk.media_profile["payload_type"] == 8


def _extra_detail(b: dict[str, Any]) -> None:
    b["trunk_details"].append(copy.deepcopy(b["trunk_details"][0]) | {"trunk_id": "trunk-x"})


SIP_BAD = [
    (
        "D-CFG-1 other dispatcher",
        lambda b: b.update(dispatcher_id="11111111-1111-4111-8111-111111111111"),
    ),
    ("D-CFG-1 details not 1:1", _extra_detail),
    (
        "D-CFG-1 unknown media profile",
        lambda b: b["artifact"]["trunks"][0].update(media_profile_id="nope"),
    ),
    ("schema: extra field", lambda b: b.update(extra=True)),
    (
        "unknown time zone",
        lambda b: b["trunk_details"][0]["schedule"].update(time_zone="Mars/Base"),
    ),
    (
        "window start >= end",
        lambda b: b["trunk_details"][0]["schedule"]["weekly_windows"].update(
            monday=[{"start": "10:00", "end": "09:00"}]
        ),
    ),
]


@pytest.mark.parametrize(("name", "edit"), SIP_BAD, ids=[r[0] for r in SIP_BAD])
def test_sip_rejected(name: str, edit: Callable[[dict[str, Any]], None]) -> None:
    with pytest.raises(SaasInvalid):
        parse_sip(changed(SIP, edit), D_ID)


@pytest.mark.parametrize("body", [TASK, ASR], ids=["full_ai", "asr_only"])
def test_task_examples_read_d_cfg_2(body: dict[str, Any]) -> None:
    config = parse_task(raw(body), D_ID, "task-mock")
    assert config.status is TaskStatus.RUNNING
    assert config.agent.max_duration_ms == 120_000
    assert config.agent.mode == body["agent"]["config"]["mode"]
    assert len(config.agent.content_sha256) == 64


def test_asr_only_gets_no_invented_defaults_d_cfg_2() -> None:
    config = parse_task(raw(ASR), D_ID, "task-mock")
    assert "llm" not in json.loads(config.agent.config_json)


TASK_BAD = [
    ("D-CFG-2 version ids differ", lambda b: b["agent"].update(agent_version_id="other")),
    (
        "D-CFG-2 other dispatcher",
        lambda b: b.update(dispatcher_id="11111111-1111-4111-8111-111111111111"),
    ),
    ("D-CFG-2 other task", lambda b: b.update(task_id="task-other")),
    (
        "D-CFG-2 asr_only with llm",
        lambda b: (
            b["agent"]["config"].update(llm=TASK["agent"]["config"]["llm"])
            if b["agent"]["config"]["mode"] == "asr_only"
            else None
        ),
    ),
]


@pytest.mark.parametrize(("name", "edit"), TASK_BAD, ids=[r[0] for r in TASK_BAD])
def test_task_rejected(name: str, edit: Callable[[dict[str, Any]], None]) -> None:
    with pytest.raises(SaasInvalid):
        parse_task(changed(ASR, edit), D_ID, "task-mock")


def test_quota_identity_checked_d_cfg_3() -> None:
    quota = parse_quota(raw(QUOTA), D_ID, "tenant-id-mock", "tenant-mock")
    assert quota.max_concurrent_calls == 3
    with pytest.raises(SaasInvalid):
        parse_quota(raw(QUOTA), D_ID, "tenant-id-mock", "tenant-other")
    with pytest.raises(SaasInvalid):
        parse_quota(raw(QUOTA), D_ID, "tenant-other", "tenant-mock")
