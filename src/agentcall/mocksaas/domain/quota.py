"""Tenant quota (D-CFG-3): the tenant's share on one D; 0 forbids new admission."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentcall.mocksaas.domain.timefmt import rfc3339
from agentcall.mocksaas.errors import TenantQuotaUnavailable

SCHEMA_VERSION = "config-read.v0.1"


@dataclass(frozen=True)
class Quota:
    """``max_concurrent_calls=None`` means "unavailable" (503)."""

    tenant_id: str
    tenant_key: str
    quota_revision: int
    max_concurrent_calls: int | None
    valid_for_s: int = 3600
    valid_until: datetime | None = None


def quota_body(dispatcher_id: str, quota: Quota | None, now: datetime) -> dict[str, Any]:
    """The 200 body, or :class:`TenantQuotaUnavailable` when missing, unavailable or expired."""
    if quota is None or quota.max_concurrent_calls is None:
        raise TenantQuotaUnavailable("No valid tenant allocation is available for this dispatcher.")
    until = quota.valid_until or now + timedelta(seconds=quota.valid_for_s)
    if until <= now:
        raise TenantQuotaUnavailable("The tenant allocation for this dispatcher has expired.")
    return {
        "schema_version": SCHEMA_VERSION,
        "resource": "tenant_quota",
        "dispatcher_id": dispatcher_id,
        "tenant_id": quota.tenant_id,
        "tenant_key": quota.tenant_key,
        "quota_revision": quota.quota_revision,
        "max_concurrent_calls": quota.max_concurrent_calls,
        "valid_until": rfc3339(until),
    }
