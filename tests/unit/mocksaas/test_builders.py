"""Bodies the Mock SaaS emits validate against contracts/dispatcher (D-CFG-1..3, D-CMD-1)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentcall.mocksaas.contracts import Contracts
from agentcall.mocksaas.domain.commands import (
    Envelope,
    call_execute,
    generated_callees,
    task_control,
)
from agentcall.mocksaas.domain.quota import Quota, quota_body
from agentcall.mocksaas.domain.sip import SipOptions, adopt_snapshot, build_sip_snapshot
from agentcall.mocksaas.domain.task_config import (
    AgentMode,
    TaskIdentity,
    TaskSpec,
    build_task_config,
)
from agentcall.mocksaas.domain.tasks import ControlAction
from agentcall.mocksaas.errors import TenantQuotaUnavailable
from tests.unit.mocksaas.conftest import NOW, D

IDENT = TaskIdentity(D, "task-a", "tenant-id-a", "tenant-a")
ENV = Envelope(D, "tenant-id-a", "tenant-a")


@pytest.mark.parametrize(
    "opts",
    [
        SipOptions(),
        SipOptions(
            time_zone="Europe/Paris", allowed_targets=("15003164745",), max_concurrent_calls=2
        ),
        SipOptions(max_concurrent_calls=None, mode="real", extra_trunk_ids=("trunk-b",)),
        SipOptions(caller_id="BD12345", enabled=False),
    ],
)
def test_d_cfg_1_default_sip_snapshot_is_valid(contracts: Contracts, opts: SipOptions) -> None:
    body = build_sip_snapshot(D, 3, opts, NOW)
    assert contracts.violations("config-read.sip_config", body) == []
    trunks = {t["trunk_id"] for t in body["artifact"]["trunks"]}
    assert trunks == {t["trunk_id"] for t in body["trunk_details"]}
    assert body["artifact"]["mode"] == opts.mode


def test_d_cfg_1_open_24x7_in_the_configured_zone() -> None:
    body = build_sip_snapshot(D, 1, SipOptions(time_zone="UTC"), NOW)
    schedule = body["trunk_details"][0]["schedule"]
    assert schedule["time_zone"] == "UTC"
    assert all(
        w == [{"start": "00:00", "end": "24:00"}] for w in schedule["weekly_windows"].values()
    )


def test_adopted_snapshot_gets_identity_and_revision() -> None:
    body = adopt_snapshot(D, 7, {"dispatcher_id": "other", "revision": 1, "x": 1})
    assert body["dispatcher_id"] == D and body["revision"] == 7 and body["x"] == 1


@pytest.mark.parametrize("mode", list(AgentMode))
def test_d_cfg_2_task_config_modes_valid(contracts: Contracts, mode: AgentMode) -> None:
    body = build_task_config(IDENT, "running", 2, TaskSpec(mode=mode))
    assert contracts.violations("config-read.task_config", body) == []
    config = body["agent"]["config"]
    assert body["agent"]["agent_version_id"] == config["agent_version_id"]
    has_ai = {"llm", "prompt", "tts"} <= set(config)
    assert has_ai is (mode is AgentMode.FULL_AI)


def test_d_cfg_2_asr_only_has_no_invented_ai_fields() -> None:
    config = build_task_config(IDENT, "running", 1, TaskSpec(mode=AgentMode.ASR_ONLY))
    assert not {"llm", "prompt", "tts"} & set(config["agent"]["config"])
    assert "opening" not in config["agent"]["config"]["conversation"]


def test_d_cfg_2_version_id_follows_content() -> None:
    a = build_task_config(IDENT, "running", 1, TaskSpec())["agent"]["agent_version_id"]
    b = build_task_config(IDENT, "running", 1, TaskSpec())["agent"]["agent_version_id"]
    asr = build_task_config(IDENT, "running", 1, TaskSpec(mode=AgentMode.ASR_ONLY))
    assert a == b != asr["agent"]["agent_version_id"]


def test_d_cfg_2_explicit_inner_version_mismatch_is_kept_for_tests() -> None:
    spec = TaskSpec(
        agent_version_id="outer",
        agent_config={
            **build_task_config(IDENT, "running", 1, TaskSpec())["agent"]["config"],
            "agent_version_id": "inner",
        },
    )
    agent = build_task_config(IDENT, "running", 1, spec)["agent"]
    assert (agent["agent_version_id"], agent["config"]["agent_version_id"]) == ("outer", "inner")


def test_task_spec_json_round_trip() -> None:
    spec = TaskSpec(mode=AgentMode.ASR_ONLY, allowed_trunk_ids=("a", "b"), max_concurrent_calls=3)
    assert TaskSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("calls", [0, 1, 3])
def test_d_cfg_3_quota_body_valid_including_zero(contracts: Contracts, calls: int) -> None:
    body = quota_body(D, Quota("tenant-id-a", "tenant-a", 2, calls, 60), NOW)
    assert contracts.violations("config-read.tenant_quota", body) == []
    assert body["max_concurrent_calls"] == calls
    assert body["valid_until"] == "2026-09-21T08:01:00.000Z"


@pytest.mark.parametrize(
    "quota",
    [
        None,
        Quota("t", "t", 1, None),
        Quota("t", "t", 1, 3, valid_until=NOW),
        Quota("t", "t", 1, 3, valid_until=NOW - timedelta(seconds=1)),
    ],
)
def test_d_cfg_3_missing_unavailable_or_expired_quota_is_503(quota: Quota | None) -> None:
    with pytest.raises(TenantQuotaUnavailable):
        quota_body(D, quota, NOW)


def test_d_cmd_1_call_execute_valid(contracts: Contracts) -> None:
    body = call_execute(
        ENV, "task-a", "15000000001", command_id="c-1", now=NOW, not_after=timedelta(minutes=15)
    )
    assert contracts.violations("command-next.call_execute", body) == []
    assert body["payload"] == {"task_id": "task-a", "callee": "15000000001"}
    assert body["not_after"] == "2026-09-21T08:15:00.000Z"


@pytest.mark.parametrize("action", list(ControlAction))
@pytest.mark.parametrize("policy", ["drain", "hangup"])
def test_d_ctl_1_task_control_valid(
    contracts: Contracts, action: ControlAction, policy: str
) -> None:
    body = task_control(ENV, "task-a", action, now=NOW, active_call_policy=policy)
    assert contracts.violations("command-next.task_control", body) == []
    assert "command_id" not in body
    assert ("active_call_policy" in body["payload"]) is (action is not ControlAction.RESUME)


@pytest.mark.parametrize(
    ("count", "start", "first", "last"),
    [(1, 0, "15000000000", "15000000000"), (3, 10, "15000000010", "15000000012")],
)
def test_generated_callees(count: int, start: int, first: str, last: str) -> None:
    callees = generated_callees(count, start)
    assert (len(callees), callees[0], callees[-1]) == (count, first, last)
