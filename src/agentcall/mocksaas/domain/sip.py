"""Default SIP snapshot builder (D-CFG-1): one trunk, open 24x7, mode ``mock``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentcall.mocksaas.domain.commands import generated_callees
from agentcall.mocksaas.domain.timefmt import canonical_sha256, open_all_week, rfc3339

SCHEMA_VERSION = "config-read.v0.1"
DEFAULT_TARGETS = 1000
"""``allowed_targets`` is a whitelist (an empty list allows nobody, D-NOTE-6): unless told
otherwise the mock approves the first 1,000 callees it generates (``15000000000`` …
``15000000999``), so ``calls --count`` and the usual test numbers can be dialled."""


@dataclass(frozen=True)
class SipOptions:
    """Knobs of the default snapshot; every field has a usable default."""

    time_zone: str = "Asia/Shanghai"
    allowed_targets: tuple[str, ...] = tuple(generated_callees(DEFAULT_TARGETS))
    max_concurrent_calls: int | None = 30
    trunk_id: str = "trunk-mock"
    caller_profile_id: str = "caller-profile-mock"
    caller_id: str = "BD00000000"
    mode: str = "mock"
    enabled: bool = True
    extra_trunk_ids: tuple[str, ...] = field(default=())


def _trunk(trunk_id: str, opts: SipOptions) -> dict[str, Any]:
    return {
        "trunk_id": trunk_id,
        "provider_id": "provider-mock",
        "egress_pool_id": "egress-mock",
        "codec": "PCMA",
        "caller_profile_ids": [opts.caller_profile_id],
        "dial_prefix": "",
        "enabled": opts.enabled,
        "sip_endpoint_ref": f"sip-endpoint-{trunk_id}",
        "credential_ref": None,
        "media_profile_id": "pcma-8k",
    }


def _trunk_detail(trunk_id: str, opts: SipOptions) -> dict[str, Any]:
    return {
        "trunk_id": trunk_id,
        "server_host": "sip.example.invalid",
        "server_port": 5060,
        "transport": "udp",
        "auth_mode": "none",
        "registration_required": False,
        "max_concurrent_calls": opts.max_concurrent_calls,
        "caller_profiles": [
            {"caller_profile_id": opts.caller_profile_id, "caller_id": opts.caller_id}
        ],
        "schedule": {"time_zone": opts.time_zone, "weekly_windows": open_all_week()},
    }


def build_sip_snapshot(
    dispatcher_id: str, revision: int, opts: SipOptions, now: datetime
) -> dict[str, Any]:
    """The approved snapshot served on ``GET /internal/v1/dispatcher/sip``."""
    trunk_ids = (opts.trunk_id, *opts.extra_trunk_ids)
    artifact: dict[str, Any] = {
        "artifact_id": "artifact-cell-mock-1",
        "source_release": "mock-release-1",
        "source_digest": canonical_sha256({"release": "mock-release-1"}),
        "approval_reference": f"mock-approval-{revision}",
        "cell_id": "cell-mock",
        "revision": revision,
        "config_sha256": "",
        "mode": opts.mode,
        "allowed_targets": list(opts.allowed_targets),
        "trunks": [_trunk(t, opts) for t in trunk_ids],
        "media_profiles": {
            "pcma-8k": {"format": "alaw", "sample_rate_hz": 8000, "channels": 1, "payload_type": 8}
        },
        "load_evidence": None,
    }
    artifact["config_sha256"] = canonical_sha256({**artifact, "config_sha256": None})
    details = [_trunk_detail(t, opts) for t in trunk_ids]
    return {
        "schema_version": SCHEMA_VERSION,
        "resource": "sip_config",
        "dispatcher_id": dispatcher_id,
        "revision": revision,
        "snapshot_sha256": canonical_sha256({"artifact": artifact, "trunk_details": details}),
        "approved_at": rfc3339(now),
        "artifact": artifact,
        "trunk_details": details,
    }


def adopt_snapshot(dispatcher_id: str, revision: int, snapshot: dict[str, Any]) -> dict[str, Any]:
    """An admin-provided snapshot: identity and revision are set by the Mock SaaS."""
    return {**snapshot, "dispatcher_id": dispatcher_id, "revision": revision}
