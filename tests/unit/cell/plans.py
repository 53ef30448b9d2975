"""Call plans as the Dispatcher sends them."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.agent_configs import FULL_AI


def plan_body(
    call_id: str = "exec-1", callee: str = "15003164745", **fields: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "call_id": call_id,
        "trunk": {
            "trunk_id": "trunk-mock",
            "dial_prefix": "9",
            "server_host": "sip.example.invalid",
            "server_port": 5060,
            "transport": None,
            "auth_mode": None,
        },
        "caller_id": "BD00000000",
        "callee": callee,
        "ring_timeout_ms": 30000,
        "max_duration_ms": 120000,
        "agent": copy.deepcopy(FULL_AI),
    }
    body.update(fields)
    return body
