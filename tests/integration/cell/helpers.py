"""Plans, event collection and ``cell serve --mode sip`` for the cell integration tests."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from agentcall.cell.client import CellClient, Event, EventType, Plan, Trunk, UploadTarget
from tests.support.agent_configs import FULL_AI


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


@contextlib.contextmanager
def serve_sip(tmp_path: Path, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``cell serve --mode sip`` on any free port with ``env`` added; yields its URL."""
    data = tmp_path / "data"
    log = tmp_path / "cell.log"
    cell = Path(sys.executable).with_name("cell")
    cmd = [str(cell), "serve", "--mode", "sip", "--http-port", "0", "--data-dir", str(data)]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, env={**os.environ, **(env or {})})
    url_file = data / "cell.url"
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            if url_file.exists():
                url = url_file.read_text().strip()
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(15)
