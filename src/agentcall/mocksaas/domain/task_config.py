"""Task config builder (D-CFG-2): ``full_ai`` or ``asr_only`` from a small spec.

The admin stores a :class:`TaskSpec`; the GET body is derived from it, the task
identity, status and revision, so equal specs always give equal bodies.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

from agentcall.mocksaas.domain.timefmt import FAR_FUTURE, canonical_sha256, open_all_week

SCHEMA_VERSION = "config-read.v0.1"


class AgentMode(enum.StrEnum):
    FULL_AI = "full_ai"
    ASR_ONLY = "asr_only"


@dataclass(frozen=True)
class TaskSpec:
    """Everything of a task config that is not identity, status or revision."""

    mode: AgentMode = AgentMode.FULL_AI
    name: str | None = None
    group_id: str | None = None
    max_concurrent_calls: int = 10
    ring_timeout_ms: int = 30_000
    max_call_duration_ms: int = 120_000
    route_policy_id: str = "route-mock"
    caller_profile_id: str = "caller-profile-mock"
    allowed_trunk_ids: tuple[str, ...] = ("trunk-mock",)
    time_zone: str = "Asia/Shanghai"
    schedule: dict[str, Any] | None = None
    authorization_id: str = "auth-mock"
    authorization_expires_at: str = FAR_FUTURE
    agent_version_id: str | None = None
    agent_config: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["mode"] = self.mode.value
        data["allowed_trunk_ids"] = list(self.allowed_trunk_ids)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskSpec:
        values = dict(data)
        values["mode"] = AgentMode(values.get("mode", AgentMode.FULL_AI.value))
        if "allowed_trunk_ids" in values:
            values["allowed_trunk_ids"] = tuple(values["allowed_trunk_ids"])
        return cls(**values)


_ASR: dict[str, Any] = {
    "provider_ref": "mock",
    "model": "mock-asr-v1",
    "language": "zh-CN",
    "input": {
        "encoding": "pcm_s16le",
        "sample_rate_hz": 16000,
        "channels": 1,
        "sample_width_bytes": 2,
    },
    "interim": True,
    "timeout_ms": 5000,
}
_CONVERSATION: dict[str, Any] = {
    "allow_interrupt": True,
    "silence_timeout_ms": 3000,
    "max_duration_ms": 120_000,
    "max_turns": 20,
    "sentence_max_chars": 80,
    "max_pending_audio_chunks": 32,
}


def default_agent_config(mode: AgentMode) -> dict[str, Any]:
    """Deterministic agent config for ``mode`` using the built-in ``mock`` providers."""
    if mode is AgentMode.ASR_ONLY:
        return {
            "immutable": True,
            "mode": "asr_only",
            "asr": dict(_ASR),
            "conversation": {**_CONVERSATION, "allow_interrupt": False},
        }
    return {
        "immutable": True,
        "mode": "full_ai",
        "llm": {
            "provider_ref": "mock",
            "model": "mock-chat-v1",
            "temperature": 0.2,
            "max_tokens": 256,
            "timeout_ms": 5000,
        },
        "prompt": {
            "text": "Mock prompt for an isolated test.",
            "allowed_variables": [],
            "max_bytes": 32768,
        },
        "tts": {
            "provider_ref": "mock",
            "model": "mock-tts-v1",
            "voice": "mock-neutral",
            "speed": 1.0,
            "format": {"encoding": "pcm_s16le", "sample_rate_hz": 16000, "channels": 1},
            "timeout_ms": 5000,
        },
        "asr": dict(_ASR),
        "conversation": {"opening": "", **_CONVERSATION},
    }


def build_agent(spec: TaskSpec) -> dict[str, Any]:
    """Agent block; the version id defaults to a digest of the content (immutable per id)."""
    config = dict(spec.agent_config) if spec.agent_config else default_agent_config(spec.mode)
    inner_version = config.pop("agent_version_id", None)
    version = spec.agent_version_id or f"agent-{spec.mode.value}-{canonical_sha256(config)[:12]}"
    config = {"agent_version_id": inner_version or version, **config}
    return {
        "agent_version_id": version,
        "authorization_id": spec.authorization_id,
        "authorization_expires_at": spec.authorization_expires_at,
        "config": config,
    }


def build_schedule(spec: TaskSpec) -> dict[str, Any]:
    if spec.schedule is not None:
        return dict(spec.schedule)
    return {
        "time_zone": spec.time_zone,
        "starts_at": None,
        "ends_at": None,
        "weekly_windows": open_all_week(),
        "excluded_dates": [],
    }


@dataclass(frozen=True)
class TaskIdentity:
    dispatcher_id: str
    task_id: str
    tenant_id: str
    tenant_key: str


def build_task_config(
    ident: TaskIdentity, status: str, revision: int, spec: TaskSpec
) -> dict[str, Any]:
    """Body of ``GET /internal/v1/dispatcher/task/:task_id``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "resource": "task_config",
        "dispatcher_id": ident.dispatcher_id,
        "tenant_id": ident.tenant_id,
        "tenant_key": ident.tenant_key,
        "task_id": ident.task_id,
        "task_revision": revision,
        "status": status,
        "name": spec.name if spec.name is not None else ident.task_id,
        "group_id": spec.group_id,
        "max_concurrent_calls": spec.max_concurrent_calls,
        "ring_timeout_ms": spec.ring_timeout_ms,
        "max_call_duration_ms": spec.max_call_duration_ms,
        "route_policy_id": spec.route_policy_id,
        "caller_profile_id": spec.caller_profile_id,
        "allowed_trunk_ids": list(spec.allowed_trunk_ids),
        "schedule": build_schedule(spec),
        "agent": build_agent(spec),
    }
