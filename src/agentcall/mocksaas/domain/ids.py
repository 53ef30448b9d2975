"""Identifier rules of the contract (D-ID-1)."""

from __future__ import annotations

import re
import uuid

from agentcall.mocksaas.errors import InvalidRequest

TASK_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# tenant ids/keys are opaque to the contract; keep them printable and bounded
TENANT_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def is_dispatcher_id(value: str) -> bool:
    """A lowercase canonical UUID v4."""
    try:
        parsed = uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return False
    return parsed.version == 4 and str(parsed) == value


def check_dispatcher_id(value: object, field: str = "dispatcher_id") -> str:
    if not isinstance(value, str) or not is_dispatcher_id(value):
        raise InvalidRequest(field, "must be a lowercase canonical UUID v4")
    return value


def check_task_id(value: object, field: str = "task_id") -> str:
    if not isinstance(value, str) or not TASK_ID_RE.match(value):
        raise InvalidRequest(field, "must match [A-Za-z0-9_-]{1,128}")
    return value


def check_tenant(value: object, field: str) -> str:
    if not isinstance(value, str) or not TENANT_RE.match(value):
        raise InvalidRequest(field, "must match [A-Za-z0-9_.:-]{1,128}")
    return value


def new_dispatcher_id() -> str:
    return str(uuid.uuid4())
