"""Reason codes the D sends, mirrored from ``contracts/dispatcher/common.schema.json``.

The schema is the one list (``$defs.execute_reject_reason`` / ``control_reject_reason``);
``tests/unit/dispatcher/test_reasons.py`` fails if these enums drift from it.
"""

from __future__ import annotations

from enum import StrEnum


class RejectReason(StrEnum):
    """Why a call.execute was rejected (D-CMD-2, D-CMD-3), in the order admission checks them."""

    TASK_UNKNOWN = "task_unknown"
    IDENTITY_MISMATCH = "identity_mismatch"
    TASK_BARRIER = "task_barrier"
    TASK_NOT_RUNNING = "task_not_running"
    COMMAND_EXPIRED = "command_expired"
    TASK_CONFIG_UNAVAILABLE = "task_config_unavailable"
    AGENT_AUTHORIZATION_EXPIRED = "agent_authorization_expired"
    SIP_CONFIG_UNAVAILABLE = "sip_config_unavailable"
    TARGET_NOT_ALLOWED = "target_not_allowed"
    OUTSIDE_SCHEDULE = "outside_schedule"
    TENANT_QUOTA_UNAVAILABLE = "tenant_quota_unavailable"
    TENANT_QUOTA_EXHAUSTED = "tenant_quota_exhausted"
    TASK_CONCURRENCY_EXHAUSTED = "task_concurrency_exhausted"
    NO_TRUNK_AVAILABLE = "no_trunk_available"
    INVALID_VALIDITY_WINDOW = "invalid_validity_window"


class ControlRejectReason(StrEnum):
    """Why a task.control was rejected (D-CTL-5, D-NOTE-1, D-NOTE-3)."""

    STATE_MISMATCH = "state_mismatch"
    TASK_UNAVAILABLE = "task_unavailable"
    COMMAND_EXPIRED = "command_expired"
    INVALID_VALIDITY_WINDOW = "invalid_validity_window"
