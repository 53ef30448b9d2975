"""Cell crashes and stops: new boot id, no live calls, recordings left as orphans."""

from __future__ import annotations

import asyncio
import hashlib
import wave
from pathlib import Path
from typing import Any

import pytest

from agentcall.cell.client import (
    AlreadyDialledError,
    CallNotFoundError,
    CellClient,
    EventType,
    UploadTarget,
)
from tests.support.services import S3Settings

from .harness import CellProcess
from .helpers import Watch, agent, plan, presign, unique

pytestmark = pytest.mark.integration


@pytest.mark.s3
async def test_sigkill_gives_new_boot_and_orphan_partial_recording(
    fresh_cell: CellProcess, s3_client: Any, s3_settings: S3Settings, object_key: str
) -> None:
    """The crash path: after a SIGKILL the cell has a new boot id and no calls, never
    redials, and lists the partial recording so that the D can upload it."""
    async with CellClient(fresh_cell.url) as cell:
        before = await cell.info()
        watch = await Watch.open(cell)
        p = plan(unique("long"), agent_config=agent(silence_timeout_ms=None))
        await cell.originate(p)
        await watch.until(p.call_id, EventType.TRANSCRIPT)
        await asyncio.sleep(0.1)  # about 10 simulated seconds of audio on disk
        await watch.aclose()
        fresh_cell.kill()
        fresh_cell.start()  # same data dir, same port
        after = await cell.info()
        assert after.boot_id != before.boot_id
        assert after.calls_in_progress == 0 and await cell.list_calls() == []
        with pytest.raises(CallNotFoundError):
            await cell.get_call(p.call_id)
        with pytest.raises(AlreadyDialledError):
            await cell.originate(p)  # never redialled, whatever the boot
        assert [e["call_id"] for e in fresh_cell.originate_log()] == [p.call_id]
        [orphan] = await cell.orphans()
        assert (orphan.call_id, orphan.boot_id, orphan.partial) == (p.call_id, before.boot_id, True)
        path = Path(orphan.path)
        assert orphan.size_bytes == path.stat().st_size
        assert orphan.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        with wave.open(str(path), "rb") as w:
            assert w.getnframes() * 1000 // 8000 == orphan.duration_ms > 0
        restarted = cell.events(after=watch.stream.last_seq, boot_id=before.boot_id)
        first = await anext(restarted)
        await restarted.aclose()
        assert first.type == EventType.CELL_RESTARTED
        assert first.data == {"previous_boot_id": before.boot_id, "boot_id": after.boot_id}
        target = UploadTarget("upload-1", presign(s3_client, s3_settings.bucket, object_key))
        result = await cell.upload_recording(p.call_id, target)
        assert result.status == "uploaded" and result.sha256 == orphan.sha256
        body = s3_client.get_object(Bucket=s3_settings.bucket, Key=object_key)["Body"].read()
        assert len(body) == orphan.size_bytes
        assert await cell.orphans() == [] and not path.exists()  # settled: removed


async def test_sigterm_hangs_up_and_finishes_recordings(fresh_cell: CellProcess) -> None:
    async with CellClient(fresh_cell.url) as cell:
        watch = await Watch.open(cell)
        p = plan(unique("long"), agent_config=agent(silence_timeout_ms=None))
        await cell.originate(p)
        await watch.until(p.call_id, EventType.TRANSCRIPT)
        await watch.aclose()
        assert await asyncio.to_thread(fresh_cell.stop) == 0
        fresh_cell.start()
        [orphan] = await cell.orphans()
        assert orphan.call_id == p.call_id and not orphan.partial  # closed cleanly
        assert orphan.duration_ms is not None and orphan.duration_ms > 0
        await cell.delete_orphan(p.call_id)
        assert await cell.orphans() == [] and not Path(orphan.path).exists()
