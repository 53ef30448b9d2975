"""Strict reading of SaaS bodies into frozen domain data (D-CFG-1..3, D-CMD-1).

Each function validates the raw bytes against its contract schema, then checks what the
schema cannot: identities against the request, trunk tables one-to-one, referenced
media profiles, real IANA zones, ``start < end`` windows, agent version ids. Any
failure raises :class:`SaasInvalid` naming the field; nothing is defaulted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from agentcall.dispatcher import contracts
from agentcall.dispatcher.domain.model import (
    Agent,
    ExecuteCommand,
    Schedule,
    SipSnapshot,
    TaskConfig,
    TenantQuota,
    Trunk,
    Window,
)
from agentcall.dispatcher.domain.schedule import parse_hhmm, zone
from agentcall.dispatcher.domain.states import TaskStatus
from agentcall.dispatcher.saas.client import SaasInvalid

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _decode(resource: str, kind: str, raw: bytes) -> dict[str, Any]:
    try:
        body = contracts.decode(kind, raw)
    except contracts.ContractError as exc:
        raise SaasInvalid(resource, 200, "schema_violation", str(exc)) from exc
    assert isinstance(body, dict)
    return body


def _check(resource: str, ok: bool, message: str) -> None:
    if not ok:
        raise SaasInvalid(resource, 200, "identity_or_consistency", message)


def canonical_digest(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def applied_config_digest(body: Mapping[str, Any]) -> str:
    """The digest of the trunk/media configuration a cell applies from a SIP snapshot —
    the same formula as the cell's ``GET /v1/info`` ``config_sha256`` (D-NOTE-9)::

        sha256(canonical {"cell_id": artifact.cell_id, "trunks": artifact.trunks,
                          "trunk_details": trunk_details,
                          "media_profiles": artifact.media_profiles})
    """
    artifact = body["artifact"]
    return canonical_digest(
        {
            "cell_id": artifact["cell_id"],
            "trunks": artifact["trunks"],
            "trunk_details": body["trunk_details"],
            "media_profiles": artifact["media_profiles"],
        }
    )


def parse_schedule(resource: str, obj: Mapping[str, Any]) -> Schedule:
    try:
        zone(obj["time_zone"])
    except (KeyError, ValueError) as exc:
        raise SaasInvalid(resource, 200, "invalid_time_zone", "schedule.time_zone unknown") from exc
    weekly = tuple(_windows(resource, day, obj["weekly_windows"][day]) for day in DAYS)
    starts, ends = obj.get("starts_at"), obj.get("ends_at")
    return Schedule(
        time_zone=obj["time_zone"],
        weekly=weekly,
        starts_at=datetime.fromisoformat(starts) if starts else None,
        ends_at=datetime.fromisoformat(ends) if ends else None,
        excluded_dates=frozenset(date.fromisoformat(d) for d in obj.get("excluded_dates", ())),
    )


def _windows(resource: str, day: str, items: list[dict[str, str]]) -> tuple[Window, ...]:
    windows = tuple(Window(parse_hhmm(w["start"]), parse_hhmm(w["end"])) for w in items)
    for window in windows:
        _check(resource, window.start_min < window.end_min, f"schedule {day}: start >= end")
    return windows


def parse_sip(raw: bytes, dispatcher_id: str) -> SipSnapshot:
    body = _decode("sip", contracts.Kind.SIP_CONFIG, raw)
    _check("sip", body["dispatcher_id"] == dispatcher_id, "dispatcher_id is not this D")
    artifact = body["artifact"]
    listed = {t["trunk_id"]: t for t in artifact["trunks"]}
    details = {d["trunk_id"]: d for d in body["trunk_details"]}
    _check("sip", len(listed) == len(artifact["trunks"]), "artifact.trunks has a duplicate id")
    _check("sip", len(details) == len(body["trunk_details"]), "trunk_details has a duplicate id")
    _check("sip", set(listed) == set(details), "trunk_details do not match artifact.trunks 1:1")
    profiles = artifact["media_profiles"]
    trunks = {tid: _trunk(listed[tid], details[tid], profiles) for tid in listed}
    return SipSnapshot(
        dispatcher_id=dispatcher_id,
        revision=body["revision"],
        snapshot_sha256=body["snapshot_sha256"],
        mode=artifact["mode"],
        allowed_targets=frozenset(artifact["allowed_targets"]),
        trunks=trunks,
        cell_id=artifact["cell_id"],
        config_sha256=applied_config_digest(body),
    )


def _trunk(listed: dict[str, Any], detail: dict[str, Any], profiles: dict[str, Any]) -> Trunk:
    media_id = listed["media_profile_id"]
    _check("sip", media_id in profiles, f"trunk {listed['trunk_id']}: media profile missing")
    offered = set(listed["caller_profile_ids"])
    caller_ids = {
        p["caller_profile_id"]: p["caller_id"]
        for p in detail["caller_profiles"]
        if p["caller_profile_id"] in offered
    }
    return Trunk(
        trunk_id=listed["trunk_id"],
        enabled=listed["enabled"],
        caller_ids=caller_ids,
        dial_prefix=listed["dial_prefix"],
        media_profile_id=media_id,
        max_concurrent_calls=detail["max_concurrent_calls"],
        transport=detail["transport"],
        auth_mode=detail["auth_mode"],
        registration_required=detail["registration_required"],
        schedule=parse_schedule("sip", detail["schedule"]),
        server_host=detail["server_host"],
        server_port=detail["server_port"],
        media_profile=dict(profiles[media_id]),
    )


def parse_task(raw: bytes, dispatcher_id: str, task_id: str) -> TaskConfig:
    body = _decode("task", contracts.Kind.TASK_CONFIG, raw)
    _check("task", body["dispatcher_id"] == dispatcher_id, "dispatcher_id is not this D")
    _check("task", body["task_id"] == task_id, "task_id differs from the request")
    agent = body["agent"]
    config = agent["config"]
    _check(
        "task",
        agent["agent_version_id"] == config["agent_version_id"],
        "agent.agent_version_id differs from agent.config.agent_version_id",
    )
    return TaskConfig(
        dispatcher_id=dispatcher_id,
        task_id=task_id,
        tenant_id=body["tenant_id"],
        tenant_key=body["tenant_key"],
        task_revision=body["task_revision"],
        status=TaskStatus(body["status"]),
        max_concurrent_calls=body["max_concurrent_calls"],
        ring_timeout_ms=body["ring_timeout_ms"],
        max_call_duration_ms=body["max_call_duration_ms"],
        route_policy_id=body["route_policy_id"],
        caller_profile_id=body["caller_profile_id"],
        allowed_trunk_ids=tuple(body["allowed_trunk_ids"]),
        schedule=parse_schedule("task", body["schedule"]),
        agent=Agent(
            agent_version_id=agent["agent_version_id"],
            authorization_id=agent["authorization_id"],
            authorization_expires_at=datetime.fromisoformat(agent["authorization_expires_at"]),
            mode=config["mode"],
            max_duration_ms=config["conversation"]["max_duration_ms"],
            config_json=json.dumps(
                config, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ),
            content_sha256=canonical_digest(config),
        ),
        name=body.get("name", ""),
    )


def parse_quota(raw: bytes, dispatcher_id: str, tenant_id: str, tenant_key: str) -> TenantQuota:
    body = _decode("quota", contracts.Kind.TENANT_QUOTA, raw)
    _check("quota", body["dispatcher_id"] == dispatcher_id, "dispatcher_id is not this D")
    _check("quota", body["tenant_id"] == tenant_id, "tenant_id differs from the request")
    _check("quota", body["tenant_key"] == tenant_key, "tenant_key differs from the task")
    return TenantQuota(
        tenant_id=tenant_id,
        tenant_key=tenant_key,
        quota_revision=body["quota_revision"],
        max_concurrent_calls=body["max_concurrent_calls"],
        valid_until=datetime.fromisoformat(body["valid_until"]),
    )


def parse_command(body: Mapping[str, Any]) -> ExecuteCommand:
    """A call.execute body already validated by ``contracts.decode``."""
    return ExecuteCommand(
        command_id=body["command_id"],
        dispatcher_id=body["dispatcher_id"],
        tenant_id=body["tenant_id"],
        tenant_key=body["tenant_key"],
        trace_id=body["trace_id"],
        issued_at=datetime.fromisoformat(body["issued_at"]),
        not_after=datetime.fromisoformat(body["not_after"]),
        task_id=body["payload"]["task_id"],
        callee=body["payload"]["callee"],
    )
