"""Orbit worker SDK: serve tasks over the worker protocol (docs/orbit/worker-protocol.md).

    from agentcall.orbit.sdk.worker import Context, HandlerFailed, Registry

    registry = Registry()

    @registry.handler("file.convert", "v1")
    async def convert(ctx: Context, payload: dict) -> dict:
        ctx.add_evidence("out", "artifact", uri="s3://bucket/out.pdf")
        return {"pages": 12}

Run it with `orbit worker --app mymodule:registry --queue QUEUE_ID` (ORBIT_URL, ORBIT_TOKEN).
"""

from __future__ import annotations

from agentcall.orbit.sdk.worker.context import AttemptInfo, CancellationToken, Context, TaskInfo
from agentcall.orbit.sdk.worker.errors import (
    Cancelled,
    HandlerFailed,
    NeedsReview,
    RegistryError,
    WorkerSdkError,
    WorkerStopped,
)
from agentcall.orbit.sdk.worker.registry import Registry, load_registry
from agentcall.orbit.sdk.worker.runtime import Worker, WorkerConfig

__all__ = [
    "AttemptInfo",
    "CancellationToken",
    "Cancelled",
    "Context",
    "HandlerFailed",
    "NeedsReview",
    "Registry",
    "RegistryError",
    "TaskInfo",
    "Worker",
    "WorkerConfig",
    "WorkerSdkError",
    "WorkerStopped",
    "load_registry",
]
