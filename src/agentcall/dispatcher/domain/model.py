"""Frozen, validated views of the SaaS configuration and of incoming commands.

Built by the adapters (``agentcall.dispatcher.saas.parse``) only after schema validation, so every
value here is well-formed; the decisions in this package take them as plain data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime

from agentcall.dispatcher.domain.states import Barrier, TaskStatus


@dataclass(frozen=True)
class Window:
    """Daily window ``[start, end)`` in minutes after local midnight (end may be 1440)."""

    start_min: int
    end_min: int


@dataclass(frozen=True)
class Schedule:
    """Weekly windows in an IANA zone; ``weekly[0]`` is Monday. Empty day = no calls."""

    time_zone: str
    weekly: tuple[tuple[Window, ...], ...]
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    excluded_dates: frozenset[date] = frozenset()


@dataclass(frozen=True)
class Trunk:
    """One trunk of the approved SIP snapshot (artifact entry joined with its details)."""

    trunk_id: str
    enabled: bool
    caller_ids: Mapping[str, str]
    dial_prefix: str
    media_profile_id: str
    max_concurrent_calls: int | None
    transport: str | None
    auth_mode: str | None
    registration_required: bool | None
    schedule: Schedule
    server_host: str = ""
    server_port: int = 5060
    media_profile: Mapping[str, object] = field(default_factory=dict)

    def spec(self) -> dict[str, object]:
        """What the cell needs to dial on this trunk (pinned in the execution plan)."""
        return {
            "trunk_id": self.trunk_id,
            "dial_prefix": self.dial_prefix,
            "server_host": self.server_host,
            "server_port": self.server_port,
            "transport": self.transport,
            "auth_mode": self.auth_mode,
            "registration_required": self.registration_required,
            "media_profile": dict(self.media_profile),
        }

    @property
    def fully_known(self) -> bool:
        """D-CFG-1: a null transport/auth/registration/limit is unknown: unusable for real calls."""
        return None not in (
            self.transport,
            self.auth_mode,
            self.registration_required,
            self.max_concurrent_calls,
        )


@dataclass(frozen=True)
class SipSnapshot:
    """The one approved SIP snapshot for this D, verified (D-CFG-1)."""

    dispatcher_id: str
    revision: int
    snapshot_sha256: str
    mode: str
    allowed_targets: frozenset[str]
    trunks: Mapping[str, Trunk]
    cell_id: str = "cell"
    config_sha256: str = ""  # the D's own digest of what the cell must apply (D-NOTE-9)


@dataclass(frozen=True)
class Agent:
    """Agent version pinned by a task; ``config_json`` is the canonical immutable content."""

    agent_version_id: str
    authorization_id: str
    authorization_expires_at: datetime
    mode: str
    max_duration_ms: int
    config_json: str
    content_sha256: str


@dataclass(frozen=True)
class TaskConfig:
    """A verified task GET (D-CFG-2)."""

    dispatcher_id: str
    task_id: str
    tenant_id: str
    tenant_key: str
    task_revision: int
    status: TaskStatus
    max_concurrent_calls: int
    ring_timeout_ms: int
    max_call_duration_ms: int
    route_policy_id: str
    caller_profile_id: str
    allowed_trunk_ids: tuple[str, ...]
    schedule: Schedule
    agent: Agent
    name: str = ""


@dataclass(frozen=True)
class TenantQuota:
    """A verified tenant quota GET (D-CFG-3)."""

    tenant_id: str
    tenant_key: str
    quota_revision: int
    max_concurrent_calls: int
    valid_until: datetime


@dataclass(frozen=True)
class LocalTask:
    """What discovery and controls persisted about a task (tasks table)."""

    task_id: str
    tenant_id: str
    tenant_key: str
    status: TaskStatus
    task_revision: int
    barrier: Barrier = Barrier.NONE
    seen_revision: int = 0  # the highest revision seen anywhere (D-NOTE-1)


@dataclass(frozen=True)
class ExecuteCommand:
    """A schema-valid call.execute envelope (D-CMD-1)."""

    command_id: str
    dispatcher_id: str
    tenant_id: str
    tenant_key: str
    trace_id: str
    issued_at: datetime
    not_after: datetime
    task_id: str
    callee: str


@dataclass(frozen=True)
class Occupancy:
    """Calls holding capacity now (derived from executions, D-CMD-4)."""

    tenant: int = 0
    task: int = 0
    trunks: Mapping[str, int] = field(default_factory=dict)

    def on_trunk(self, trunk_id: str) -> int:
        return self.trunks.get(trunk_id, 0)
