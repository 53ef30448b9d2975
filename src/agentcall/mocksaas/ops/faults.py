"""Admin: arm, list and clear injected faults."""

from __future__ import annotations

from typing import Any

from agentcall.mocksaas.domain.faults import (
    ConfigFault,
    ConfigResource,
    DiscoveryFault,
    Fault,
    FaultScope,
)
from agentcall.mocksaas.ops.fields import choice, get_int, only, opt_str
from agentcall.mocksaas.runtime import Runtime
from agentcall.mocksaas.store import dispatchers, faults


def _public(f: Fault) -> dict[str, Any]:
    return {
        "fault_id": f.fault_id,
        "scope": f.scope.value,
        "kind": f.kind,
        "resource": f.resource.value if f.resource else None,
        "target": f.target,
        "remaining": f.remaining,
        "delay_ms": f.delay_ms,
    }


async def arm_discovery(rt: Runtime, d: str, body: dict[str, Any]) -> dict[str, Any]:
    only(body, {"kind", "count", "delay_ms"})
    kind = choice(body, "kind", [k.value for k in DiscoveryFault], None)
    fault = Fault(
        0,
        FaultScope.DISCOVERY,
        kind,
        get_int(body, "count", 1, 1, 10_000),
        delay_ms=get_int(body, "delay_ms", 0, 0, 120_000),
    )
    await rt.db.run(dispatchers.get, d)
    return _public(await rt.db.run(faults.arm, d, fault))


async def arm_config(rt: Runtime, d: str, body: dict[str, Any]) -> dict[str, Any]:
    only(body, {"resource", "target", "kind", "count", "delay_ms"})
    resource = ConfigResource(choice(body, "resource", [r.value for r in ConfigResource], None))
    kind = choice(body, "kind", [k.value for k in ConfigFault], None)
    fault = Fault(
        0,
        FaultScope.CONFIG,
        kind,
        get_int(body, "count", 1, 1, 10_000),
        resource,
        opt_str(body, "target"),
        get_int(body, "delay_ms", 0, 0, 120_000),
    )
    await rt.db.run(dispatchers.get, d)
    return _public(await rt.db.run(faults.arm, d, fault))


async def list_for(rt: Runtime, d: str) -> dict[str, Any]:
    await rt.db.run(dispatchers.get, d)
    return {"faults": await rt.db.run(faults.list_for, d)}


async def clear(rt: Runtime, d: str) -> dict[str, Any]:
    await rt.db.run(dispatchers.get, d)
    return {"cleared": await rt.db.run(faults.clear, d)}
