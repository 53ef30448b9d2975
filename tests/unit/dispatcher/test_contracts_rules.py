"""Spec rules enforced by the contract schemas, as parametrized tables.

Rules: D-ID-1, D-ID-3, D-CFG-1..4, D-DISC-1, D-DISC-2, D-DISC-9, D-CMD-1,
D-CMD-3, D-CTL-1, D-CTL-5, D-RES-1, D-RES-2, D-REC-2.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from agentcall.dispatcher import contracts
from agentcall.dispatcher.contracts import ContractError, Kind

ROOT = contracts.contracts_dir()
VALID = ROOT / "examples" / "valid"


def _valid(kind: str, name: str) -> Any:
    return json.loads((VALID / kind / name).read_text(encoding="utf-8"))


def _passes(kind: str, body: object) -> bool:
    try:
        contracts.validate(kind, body)
    except ContractError:
        return False
    return True


def _page(cursor: object = "5", **task: object) -> dict[str, Any]:
    item = {"task_id": "task-a", "tenant_id": "t", "tenant_key": "t", "status": "running"}
    item |= {"task_revision": 1} | task
    return {
        "schema_version": "task-discovery.v0.3-proposal",
        "dispatcher_id": "c046b893-8628-4589-ae50-619d049248a6",
        "tasks": [item],
        "next_cursor": cursor,
    }


@pytest.mark.parametrize(
    ("dispatcher_id", "ok"),
    [
        ("c046b893-8628-4589-ae50-619d049248a6", True),
        ("00000000-0000-4000-8000-000000000000", True),
        ("C046B893-8628-4589-AE50-619D049248A6", False),
        ("c046b893-8628-1589-ae50-619d049248a6", False),
        ("c046b893-8628-4589-ce50-619d049248a6", False),
        ("c046b8938628458 9ae50619d049248a6", False),
        ("{c046b893-8628-4589-ae50-619d049248a6}", False),
    ],
)
def test_d_id_1_dispatcher_id_is_lowercase_canonical_uuid_v4(dispatcher_id: str, ok: bool) -> None:
    assert _passes(Kind.DISCOVERY_PAGE, _page() | {"dispatcher_id": dispatcher_id}) is ok


@pytest.mark.parametrize(
    ("task_id", "ok"),
    [
        ("a", True),
        ("Task_A-9", True),
        ("x" * 128, True),
        ("", False),
        ("x" * 129, False),
        ("task.a", False),
        ("task*", False),
        ("task#", False),
        ("task a", False),
        ("任务", False),
    ],
)
def test_d_id_1_task_id_ascii_without_separators(task_id: str, ok: bool) -> None:
    assert _passes(Kind.DISCOVERY_PAGE, _page(task_id=task_id)) is ok


def test_d_id_3_decode_accepts_exactly_the_limit_and_rejects_one_byte_more() -> None:
    raw = json.dumps(_page()).encode()
    padded = raw[:-1] + b" " * (contracts.MAX_BODY_BYTES - len(raw)) + b"}"
    assert len(padded) == contracts.MAX_BODY_BYTES
    assert contracts.decode(Kind.DISCOVERY_PAGE, padded) == _page()
    with pytest.raises(ContractError) as caught:
        contracts.decode(Kind.DISCOVERY_PAGE, padded + b" ")
    assert (caught.value.path, caught.value.keyword) == ("$", "maxBytes")


@pytest.mark.parametrize(
    ("cursor", "keyword"),
    [
        ("0", None),
        ("1", None),
        ("18446744073709551615", None),
        ("007", "pattern"),
        ("00", "pattern"),
        ("-1", "pattern"),
        ("1e3", "pattern"),
        ("", "pattern"),
        (" 1", "pattern"),
        ("123456789012345678901", "pattern"),
        ("18446744073709551616", "uint64"),
        ("99999999999999999999", "uint64"),
        (5, "type"),
    ],
)
def test_d_disc_1_cursor_is_canonical_uint64(cursor: object, keyword: str | None) -> None:
    if keyword is None:
        contracts.validate(Kind.DISCOVERY_PAGE, _page(cursor))
        return
    with pytest.raises(ContractError) as caught:
        contracts.validate(Kind.DISCOVERY_PAGE, _page(cursor))
    assert (caught.value.path, caught.value.keyword) == ("$.next_cursor", keyword)


@pytest.mark.parametrize(
    ("status", "ok"),
    [(s, True) for s in ("running", "paused", "stopped", "finished", "removed")]
    + [(s, False) for s in ("assigned", "updated", "deleted", "RUNNING")],
)
def test_d_disc_2_page_status_enum(status: str, ok: bool) -> None:
    assert _passes(Kind.DISCOVERY_PAGE, _page(status=status)) is ok


def test_d_disc_2_page_items_have_exactly_five_fields_and_at_most_256() -> None:
    item = contracts.schema(Kind.DISCOVERY_PAGE)["properties"]["tasks"]
    assert item["maxItems"] == 256
    assert _passes(Kind.DISCOVERY_PAGE, _page() | {"tasks": []})
    body = _page()
    del body["tasks"][0]["tenant_key"]
    assert not _passes(Kind.DISCOVERY_PAGE, body)


@pytest.mark.parametrize(
    ("code", "ok"),
    [(c, True) for c in ("invalid_cursor", "unauthorized", "dispatcher_not_authorized")]
    + [("service_unavailable", True), ("cursor_expired", False), ("resource_not_found", False)],
)
def test_d_disc_9_error_codes_without_410(code: str, ok: bool) -> None:
    body = _valid(Kind.DISCOVERY_ERROR, "v0.3-invalid_cursor.json")
    body["error"]["code"] = code
    assert _passes(Kind.DISCOVERY_ERROR, body) is ok


def test_d_cfg_1_sip_nulls_mean_unknown_and_raw_caller_id_validates() -> None:
    body = _valid(Kind.SIP_CONFIG, "spec-v0.2-2.1-sip.json")
    detail = body["trunk_details"][0]
    assert [detail[k] for k in ("transport", "auth_mode", "registration_required")] == [None] * 3
    assert detail["max_concurrent_calls"] is None
    assert detail["caller_profiles"][0]["caller_id"].startswith("BD")
    contracts.validate(Kind.SIP_CONFIG, body)
    detail |= {"transport": "udp", "auth_mode": "digest", "registration_required": True}
    detail["max_concurrent_calls"] = 10
    contracts.validate(Kind.SIP_CONFIG, body)


@pytest.mark.parametrize("field", ["llm", "prompt", "tts"])
def test_d_cfg_2_asr_only_rejects_and_full_ai_requires_llm_prompt_tts(field: str) -> None:
    full = _valid(Kind.TASK_CONFIG, "spec-v0.2-2.2-full-ai.json")
    asr_only = _valid(Kind.TASK_CONFIG, "spec-v0.2-2.3-asr-only.json")
    asr_only["agent"]["config"][field] = copy.deepcopy(full["agent"]["config"][field])
    with pytest.raises(ContractError, match=field) as caught:
        contracts.validate(Kind.TASK_CONFIG, asr_only)
    assert (caught.value.path, caught.value.keyword) == ("$.agent.config", "additionalProperties")
    del full["agent"]["config"][field]
    with pytest.raises(ContractError) as caught:
        contracts.validate(Kind.TASK_CONFIG, full)
    assert (caught.value.path, caught.value.keyword) == ("$.agent.config", "required")


@pytest.mark.parametrize(("quota", "ok"), [(0, True), (3, True), (-1, False), (1.5, False)])
def test_d_cfg_3_tenant_quota_zero_is_valid_and_forbids_nothing_in_schema(
    quota: object, ok: bool
) -> None:
    body = _valid(Kind.TENANT_QUOTA, "spec-v0.2-2.6.1-quota.json") | {"max_concurrent_calls": quota}
    assert _passes(Kind.TENANT_QUOTA, body) is ok


def test_d_cfg_4_config_error_codes() -> None:
    codes = contracts.schema(Kind.CONFIG_ERROR)["properties"]["error"]["properties"]["code"]
    assert {"resource_not_found", "tenant_quota_unavailable"} <= set(codes["enum"])


def test_d_cmd_1_call_execute_payload_is_only_task_id_and_callee() -> None:
    payload = contracts.schema(Kind.CALL_EXECUTE)["properties"]["payload"]
    assert set(payload["properties"]) == set(payload["required"]) == {"task_id", "callee"}
    assert "command_id" in contracts.schema(Kind.CALL_EXECUTE)["required"]


PROPOSED_EXECUTE_REASONS = {
    "identity_mismatch",
    "task_not_running",
    "task_barrier",
    "task_unknown",
    "task_config_unavailable",
    "command_expired",
    "target_not_allowed",
    "outside_schedule",
    "agent_authorization_expired",
    "tenant_quota_unavailable",
    "tenant_quota_exhausted",
    "task_concurrency_exhausted",
    "no_trunk_available",
    "sip_config_unavailable",
    "invalid_validity_window",
}
CONTROL_REASONS = {
    "state_mismatch",
    "task_unavailable",
    "command_expired",
    "invalid_validity_window",
}


def test_d_cmd_3_reason_codes_have_one_source_documented_in_readme() -> None:
    assert contracts.execute_reject_reasons() == PROPOSED_EXECUTE_REASONS
    assert contracts.control_reject_reasons() == CONTROL_REASONS
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = "`call.execute` (`command-next.execute_result`):", "`task.control`"
    readme = text.split(start)[1].split(end)[0]
    documented = set(re.findall(r"^\| (?:accepted|rejected) \| `([a-z_]+)` \|", readme, re.M))
    assert documented == PROPOSED_EXECUTE_REASONS | {"accepted"}
    controls = text.split("`task.control` (`command-next.control_result`):")[1].split("##")[0]
    listed = set(re.findall(r"^\| (?:applied|rejected) \| `([a-z_]+)` \|", controls, re.M))
    assert listed == CONTROL_REASONS | {"applied"}


@pytest.mark.parametrize("reason", sorted(PROPOSED_EXECUTE_REASONS))
def test_d_cmd_3_every_reject_reason_validates_without_execution_id(reason: str) -> None:
    body = _valid(Kind.EXECUTE_RESULT, "rejected-command-expired.json")
    body["payload"]["reason_code"] = reason
    contracts.validate(Kind.EXECUTE_RESULT, body)
    body["payload"]["execution_id"] = "execution-x"
    assert not _passes(Kind.EXECUTE_RESULT, body)


@pytest.mark.parametrize("action", ["pause", "resume", "stop"])
@pytest.mark.parametrize("policy", [None, "drain", "hangup"])
def test_d_ctl_1_active_call_policy_only_and_always_on_pause_and_stop(
    action: str, policy: str | None
) -> None:
    body = _valid(Kind.TASK_CONTROL, "spec-v0.2-3.3-resume.json")
    body["payload"]["action"] = action
    if policy is not None:
        body["payload"]["active_call_policy"] = policy
    assert _passes(Kind.TASK_CONTROL, body) is ((action == "resume") == (policy is None))


@pytest.mark.parametrize("action", ["pause", "resume", "stop"])
@pytest.mark.parametrize("state", ["running", "paused", "stopped"])
def test_d_ctl_1_applied_receipt_state_follows_the_action(action: str, state: str) -> None:
    body = _valid(Kind.CONTROL_RESULT, "spec-v0.2-3.6-pause-applied.json")
    body["payload"] |= {"action": action, "task_state": state}
    expected = {"pause": "paused", "resume": "running", "stop": "stopped"}[action]
    assert _passes(Kind.CONTROL_RESULT, body) is (state == expected)


@pytest.mark.parametrize("reason", ["state_mismatch", "task_unavailable"])
@pytest.mark.parametrize("state", ["running", "paused", "stopped", "closed"])
def test_d_ctl_5_rejected_receipts(reason: str, state: str) -> None:
    body = _valid(Kind.CONTROL_RESULT, "rejected-resume-state-mismatch.json")
    body["payload"] |= {"reason_code": reason, "task_state": state}
    contracts.validate(Kind.CONTROL_RESULT, body)


def test_d_res_1_one_result_carries_outcome_transcript_opt_out_and_recording() -> None:
    payload = contracts.schema(Kind.CALL_RESULT)["properties"]["payload"]
    assert {"outcome", "transcript", "opt_out", "recording"} <= set(payload["required"])
    assert set(payload["properties"]["outcome"]["enum"]) == {
        "answered",
        "no_answer",
        "busy",
        "rejected",
        "failed",
        "canceled",
    }


NOT_CREATED_NULLS = [
    "recording_id",
    "upload_id",
    "bucket",
    "object_key",
    "format",
    "channels",
    "sample_rate_hz",
    "duration_ms",
    "size_bytes",
    "checksum_sha256",
]


@pytest.mark.parametrize("field", NOT_CREATED_NULLS)
def test_d_res_2_not_created_has_every_asset_field_null(field: str) -> None:
    body = _valid(Kind.CALL_RESULT, "spec-v0.2-4.3-not-created.json")
    assert body["payload"]["outcome"] == "no_answer"
    body["payload"]["recording"][field] = "x"
    with pytest.raises(ContractError) as caught:
        contracts.validate(Kind.CALL_RESULT, body)
    assert caught.value.path == f"$.payload.recording.{field}"


REC_ERRORS = [
    "upload_authorization_failed",
    "upload_authorization_expired",
    "upload_failed",
    "upload_timeout",
    "deadline_exceeded",
    "checksum_mismatch",
]


@pytest.mark.parametrize(("code", "ok"), [(c, True) for c in REC_ERRORS] + [("lost", False)])
def test_d_rec_2_unavailable_error_code_enum(code: str, ok: bool) -> None:
    body = _valid(Kind.CALL_RESULT, "spec-v0.2-4.2-unavailable.json")
    body["payload"]["recording"]["error_code"] = code
    assert _passes(Kind.CALL_RESULT, body) is ok


@pytest.mark.parametrize("field", ["bucket", "object_key", "size_bytes", "checksum_sha256"])
def test_d_rec_2_uploaded_needs_and_unavailable_forbids_the_asset(field: str) -> None:
    uploaded = _valid(Kind.CALL_RESULT, "spec-v0.2-4.1-uploaded.json")
    unavailable = _valid(Kind.CALL_RESULT, "spec-v0.2-4.2-unavailable.json")
    unavailable["payload"]["recording"][field] = uploaded["payload"]["recording"][field]
    assert not _passes(Kind.CALL_RESULT, unavailable)
    uploaded["payload"]["recording"][field] = None
    assert not _passes(Kind.CALL_RESULT, uploaded)
