"""Plans and event collection for the cell integration tests."""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

from agentcall.cell.client import CellClient, Event, EventType, Plan, Trunk, UploadTarget
from tests.unit.cell.agent_configs import FULL_AI


def agent(**conversation: Any) -> dict[str, Any]:
    config = copy.deepcopy(FULL_AI)
    for key, value in conversation.items():
        if value is None:
            config["conversation"].pop(key, None)
        else:
            config["conversation"][key] = value
    return config


def plan(
    callee: str,
    *,
    call_id: str | None = None,
    agent_config: dict[str, Any] | None = None,
    ring_timeout_ms: int = 30000,
    max_duration_ms: int = 120000,
    upload: UploadTarget | None = None,
) -> Plan:
    return Plan(
        call_id=call_id or f"exec-{uuid.uuid4().hex[:12]}",
        trunk=Trunk("trunk-mock", "9", "sip.example.invalid", 5060),
        caller_id="BD00000000",
        callee=callee,
        ring_timeout_ms=ring_timeout_ms,
        max_duration_ms=max_duration_ms,
        agent=agent_config or agent(),
        recording_upload=upload,
        tags={"task_id": "task-mock"},
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Watch:
    """Collects the events of calls from a stream opened before they start."""

    def __init__(self, cell: CellClient, after: int, boot_id: str) -> None:
        self.stream = cell.events(after=after, boot_id=boot_id)
        self.seen: list[Event] = []

    @classmethod
    async def open(cls, cell: CellClient) -> Watch:
        info = await cell.info()
        return cls(cell, info.last_seq, info.boot_id)

    async def until(self, call_id: str, type_: EventType, timeout_s: float = 15.0) -> list[Event]:
        """Events of ``call_id`` up to and including the first of ``type_``."""
        async with asyncio.timeout(timeout_s):
            for event in self.seen:
                if event.call_id == call_id and event.type == type_:
                    return [e for e in self.seen if e.call_id == call_id]
            async for event in self.stream:
                self.seen.append(event)
                if event.call_id == call_id and event.type == type_:
                    break
        return [e for e in self.seen if e.call_id == call_id]

    async def settled(self, call_id: str) -> list[Event]:
        """Events of a call until it ended and its recording (if any) is ready."""
        events = await self.until(call_id, EventType.ENDED)
        if events[-1].data.get("recording_expected"):
            events = await self.until(call_id, EventType.RECORDING_READY)
        return events

    async def aclose(self) -> None:
        await self.stream.aclose()


def presign(s3_client: Any, bucket: str, key: str, expires_s: int = 900) -> str:
    """A presigned PUT URL (botocore SigV4), as the D would issue."""
    url: str = s3_client.generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=expires_s
    )
    return url
