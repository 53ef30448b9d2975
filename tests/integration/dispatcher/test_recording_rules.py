"""Every recording rule (D-REC-1, D-REC-2, D-RES-1/2) on the real SeaweedFS and a SQLite file.

The recording loop runs for real: presigned PUTs from boto3, verification by HEAD +
SHA-256 of the stored object, the deadline sweeper, the call.result in the outbox. Only
the cell is a fake behind the product's ``CellPort``; it PUTs real bytes to the presigned
URL with httpx, as the cell does, so SeaweedFS enforces signature and expiry.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentcall.dispatcher import contracts
from agentcall.dispatcher.cell.adapter import event_detail
from agentcall.dispatcher.cell.fake import FakeCell, Upload
from agentcall.dispatcher.cell.port import CellEvent, CellRejected, CellUnavailable, CellUpload
from agentcall.dispatcher.domain.admission import Accept, decide
from agentcall.dispatcher.domain.results import CallEnd
from agentcall.dispatcher.domain.states import ExecutionState
from agentcall.dispatcher.finalize.result import Ending, end_and_finalize
from agentcall.dispatcher.recording import transaction as lifecycle
from agentcall.dispatcher.recording.service import RecordingService
from agentcall.dispatcher.recording.storage import S3Store, StorageConfig
from agentcall.dispatcher.recording.transaction import Route
from agentcall.dispatcher.settings import Secret
from agentcall.dispatcher.store import executions, outbox
from agentcall.dispatcher.store import recordings as recording_store
from agentcall.dispatcher.store.db import Database
from tests.integration.dispatcher.rows import accept_execution
from tests.support import dispatcher_factories as f
from tests.support.services import s3_settings

pytestmark = [pytest.mark.integration, pytest.mark.s3]

ROUTE = Route(f.D_ID, f"d.{f.D_ID}.out")
WAV = os.urandom(16_044)
WAV_SHA = hashlib.sha256(WAV).hexdigest()
MEDIA = {
    "format": "wav",
    "channels": 1,
    "sample_rate_hz": 8000,
    "duration_ms": 1000,
    "size_bytes": len(WAV),
    "checksum_sha256": WAV_SHA,
}


def utcnow() -> datetime:
    return datetime.now(UTC)


def storage_config(secret: str | None = None) -> StorageConfig:
    s3 = s3_settings()
    return StorageConfig(
        bucket=s3.bucket,
        region=s3.region,
        endpoint=s3.endpoint,
        access_key=s3.access_key,
        secret_key=Secret(secret or s3.secret_key),
        key_prefix=f"it-{uuid.uuid4().hex[:10]}",
    )


Behaviour = Upload


def answer(
    call_id: str, upload_id: str, status: str, code: str | None = None, *, asks: bool = True
) -> CellUpload:
    """The cell's answer; an ``expired`` one asks for a renewal unless ``asks`` is False
    (what the cell does when its grant expired before its PUT began, D-NOTE-7)."""
    started = status != "expired"
    renewal = status == "expired" and asks
    return CellUpload(
        call_id, upload_id, status, code, started, None, len(WAV), WAV_SHA, status, renewal
    )


@dataclass
class Rig:
    db: Database
    cell: FakeCell
    service: RecordingService
    storage: StorageConfig
    execution_id: str = "exec-1"
    loop: asyncio.Task[None] | None = None
    again: Callable[[Behaviour, Rig], Awaitable[Rig]] | None = None

    async def stop(self) -> None:
        """The D process dies: its recording loop stops, the state database stays."""
        assert self.loop is not None
        self.loop.cancel()
        await asyncio.gather(self.loop, return_exceptions=True)

    async def restart(self, behaviour: Behaviour) -> Rig:
        """A new D process on the same state database and bucket, with a new cell answer."""
        assert self.again is not None
        return await self.again(behaviour, self)

    async def cell_event(self, kind: str, data: dict[str, Any]) -> None:
        """A cell event for this call, applied as the call supervisor applies it."""
        detail = event_detail(kind, data)  # read as the D's cell adapter reads it
        event = CellEvent(1, "boot-1", kind, self.execution_id, utcnow(), detail)
        closed = await self.db.write(lifecycle.apply_events, [event], utcnow(), ROUTE)
        await self.service.after_close(closed)
        self.service.wake()

    async def end_call(
        self, recording: dict[str, Any] | None = MEDIA, expected: bool = True
    ) -> None:
        now = utcnow()
        end = CallEnd(now - timedelta(seconds=5), now, "answered", None, opt_out=True)
        ending = Ending(end, recording_expected=expected, recording=recording)
        finalized = await self.db.write(
            end_and_finalize,
            self.execution_id,
            ending,
            dispatcher_id=ROUTE.dispatcher_id,
            routing_key=ROUTE.routing_key,
            now=now,
            open_recording=self.service.opener,
        )
        assert finalized is not expected  # an expected recording holds the call.result back
        execution = await self.db.read(executions.get, self.execution_id)
        assert execution.state is ExecutionState.ENDED  # D-CMD-4: occupancy released already
        self.service.wake()

    async def result(self, timeout: float = 15.0) -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            execution = await self.db.read(executions.get, self.execution_id)
            if execution.state is ExecutionState.FINALIZED:
                rows = await self.db.read(outbox.pending, 100)
                bodies = [json.loads(r.body) for r in rows if r.event_type == "call.result"]
                assert len(bodies) == 1, "D-RES-1: exactly one call.result"
                contracts.validate(contracts.Kind.CALL_RESULT, bodies[0])
                assert bodies[0]["event_id"] == execution.call_result_event_id
                payload: dict[str, Any] = bodies[0]["payload"]
                assert payload["outcome"] == "answered"  # D-RES-2: the call, not the upload
                return payload
            await asyncio.sleep(0.05)
        rec = await self.db.read(recording_store.get, self.execution_id)
        raise AssertionError(f"no call.result within {timeout}s; recording={rec}")


@pytest.fixture
async def rig_factory(
    tmp_path: Path, s3_client: Any
) -> AsyncIterator[Callable[..., Awaitable[Rig]]]:
    tasks: list[asyncio.Task[None]] = []
    dbs: list[Database] = []

    async def make(
        behaviour: Behaviour,
        *,
        authorization_s: float = 60,
        deadline_s: float = 60,
        secret: str | None = None,
        reuse: Rig | None = None,
    ) -> Rig:
        if reuse is None:
            db = await Database.open(tmp_path / f"d-{len(dbs)}.sqlite")
            dbs.append(db)
            await db.write(_accept)
            cfg = storage_config(secret)
        else:
            db, cfg = reuse.db, reuse.storage
        cell = FakeCell(upload=behaviour)
        service = RecordingService(
            db,
            cell,
            S3Store(cfg),
            route=ROUTE,
            key_prefix=cfg.key_prefix,
            authorization_s=authorization_s,
            deadline_s=deadline_s,
            sweep_s=0.1,
            clock=utcnow,
            on_outbox=lambda: None,
            retry_s=0.1,
        )
        tasks.append(asyncio.create_task(service.run()))

        async def again(next_behaviour: Behaviour, old: Rig) -> Rig:
            return await make(
                next_behaviour,
                authorization_s=authorization_s,
                deadline_s=deadline_s,
                reuse=old,
            )

        return Rig(db, cell, service, cfg, loop=tasks[-1], again=again)

    yield make
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for db in dbs:
        await db.close()


def _accept(conn: Any) -> None:
    result = decide(f.command(), f.view(), f.sip(), f.quota(), f.occupancy(), f.NOW)
    assert isinstance(result, Accept)
    accept_execution(
        conn,
        result.plan,
        execution_id="exec-1",
        call_id="exec-1",
        result_event_id="cmd-result-1",
        call_result_event_id="call-result-exec-1",
        now=utcnow(),
    )
    executions.move(conn, "exec-1", ExecutionState.DIALING, utcnow(), cell_boot_id="boot-1")


def stored(s3: Any, bucket: str, key: str) -> bytes | None:
    try:
        body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None
    return body


# --- behaviours of the fake cell --------------------------------------------------------


def putting(body: bytes, ask: bool = True) -> Behaviour:
    """PUT ``body`` to the URL the D authorized (what a real cell does with its file)."""

    async def run(cell: FakeCell, call_id: str, upload_id: str, _: dict[str, str]) -> CellUpload:
        url = cell.last_url
        assert url is not None
        response = await cell.put(url, body)
        if response.status_code == 403 and b"expired" in response.content.lower():
            return answer(call_id, upload_id, "expired", "upload_authorization_expired", asks=ask)
        if response.status_code in (401, 403):
            return answer(call_id, upload_id, "failed", "upload_authorization_failed")
        return answer(call_id, upload_id, "uploaded" if response.is_success else "failed")

    return run


async def make_rig(make: Callable[..., Awaitable[Rig]], behaviour: Behaviour, **kw: Any) -> Rig:
    return await make(behaviour, **kw)


# --- the rules ----------------------------------------------------------------------------


async def test_uploaded_with_bucket_key_size_sha256_d_rec_2(
    rig_factory: Any, s3_client: Any
) -> None:
    rig = await make_rig(rig_factory, putting(WAV))
    await rig.end_call()
    payload = await rig.result()
    rec = payload["recording"]
    assert rec["status"] == "uploaded"
    assert (rec["size_bytes"], rec["checksum_sha256"]) == (len(WAV), WAV_SHA)
    assert rec["bucket"] == rig.storage.bucket
    assert rec["object_key"] == f"{rig.storage.key_prefix}/tenant-1/task-a/exec-1.wav"
    assert (rec["upload_id"], rec["recording_id"]) == ("upload-exec-1", "rec-exec-1")
    assert stored(s3_client, rec["bucket"], rec["object_key"]) == WAV
    assert payload["opt_out"] is True
    assert rig.cell.puts == 1 and rig.cell.acked == ["exec-1"]  # one PUT; then the cell forgets


async def test_explicit_put_failure_is_unavailable_at_once_d_rec_2(
    rig_factory: Any, s3_client: Any
) -> None:
    """A wrong signature is refused by the storage server: unavailable immediately."""
    rig = await make_rig(rig_factory, putting(WAV), secret="not-the-secret", deadline_s=3600)
    await rig.end_call()
    payload = await rig.result(timeout=10)
    rec = payload["recording"]
    assert (rec["status"], rec["error_code"]) == ("unavailable", "upload_authorization_failed")
    assert rec["bucket"] is None and rec["object_key"] is None and rec["size_bytes"] is None
    assert rig.cell.puts == 1  # D-REC-1: a started PUT is never retried
    assert rig.cell.deleted == ["exec-1"]  # the D no longer needs the file


async def test_put_failed_reported_by_the_cell_is_unavailable_at_once_d_rec_2(
    rig_factory: Any,
) -> None:
    async def fails(cell: FakeCell, call_id: str, upload_id: str, _: dict[str, str]) -> CellUpload:
        return answer(call_id, upload_id, "failed", "upload_failed")

    rig = await make_rig(rig_factory, fails, deadline_s=3600)
    await rig.end_call()
    rec = (await rig.result(timeout=10))["recording"]
    assert (rec["status"], rec["error_code"]) == ("unavailable", "upload_failed")
    assert rig.cell.requests == ["upload-exec-1"]


async def test_expired_authorization_is_renewed_on_request_for_the_same_key_d_note_7(
    rig_factory: Any, s3_client: Any
) -> None:
    """The first URL expires unused and the cell asks for a renewal; the D authorizes the
    same upload_id/object_key again before the deadline and the second PUT lands."""
    put = putting(WAV)
    calls = 0

    async def slow_first(
        cell: FakeCell, call_id: str, upload_id: str, headers: dict[str, str]
    ) -> CellUpload:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(2.2)  # the 1 s authorization expires before the PUT
        return await put(cell, call_id, upload_id, headers)

    rig = await make_rig(rig_factory, slow_first, authorization_s=1, deadline_s=30)
    await rig.end_call()
    rec = (await rig.result(timeout=20))["recording"]
    assert rec["status"] == "uploaded"
    assert rig.cell.requests == ["upload-exec-1", "upload-exec-1"]  # same upload_id twice
    recording = await rig.db.read(recording_store.get, "exec-1")
    assert recording is not None and recording.authorizations == 2
    assert not recording.renewal_requested  # the request was answered
    assert stored(s3_client, rig.storage.bucket, rec["object_key"]) == WAV


async def test_expiry_without_the_cells_request_is_never_renewed_d_note_7(
    rig_factory: Any,
) -> None:
    """An expired grant the cell does not ask to renew stays expired: one authorization,
    closed ``upload_authorization_expired`` at the deadline."""

    async def expired_silently(
        cell: FakeCell, call_id: str, upload_id: str, _: dict[str, str]
    ) -> CellUpload:
        return answer(call_id, upload_id, "expired", "upload_authorization_expired", asks=False)

    rig = await make_rig(rig_factory, expired_silently, authorization_s=1, deadline_s=3)
    await rig.end_call()
    rec = (await rig.result(timeout=10))["recording"]
    assert (rec["status"], rec["error_code"]) == ("unavailable", "upload_authorization_expired")
    assert rig.cell.requests == ["upload-exec-1"]
    recording = await rig.db.read(recording_store.get, "exec-1")
    assert recording is not None and recording.authorizations == 1


async def test_no_renewal_of_its_own_across_a_restart_only_on_request_d_note_7(
    rig_factory: Any, tmp_path: Path
) -> None:
    """The D dies with a grant issued and unanswered: the next D process hands the same
    grant over again and issues none of its own; when the cell then asks (that grant
    expired before its PUT began), it is answered once, for the same upload_id/object_key."""
    hang = asyncio.Event()

    async def never_answers(
        cell: FakeCell, call_id: str, upload_id: str, _: dict[str, str]
    ) -> CellUpload:
        await hang.wait()
        raise AssertionError("unreachable")

    first = await make_rig(rig_factory, never_answers, authorization_s=2, deadline_s=30)
    await first.end_call()
    for _ in range(100):
        if first.cell.requests:
            break
        await asyncio.sleep(0.05)
    issued = first.cell.last_url
    await first.stop()  # the process dies with the grant handed over, no answer
    answers = 0
    put = putting(WAV)

    async def asks_then_puts(
        cell: FakeCell, call_id: str, upload_id: str, headers: dict[str, str]
    ) -> CellUpload:
        nonlocal answers
        answers += 1
        if answers == 1:
            assert cell.last_url == issued, "the same grant, not a new one"
            return answer(call_id, upload_id, "expired", "upload_authorization_expired")
        return await put(cell, call_id, upload_id, headers)

    second = await first.restart(asks_then_puts)
    payload = await second.result(timeout=15)
    assert payload["recording"]["status"] == "uploaded"
    assert second.cell.requests == ["upload-exec-1", "upload-exec-1"]
    recording = await second.db.read(recording_store.get, "exec-1")
    assert recording is not None and recording.authorizations == 2  # the one renewal asked
    assert recording.grant_url is None


async def test_deadline_without_a_file_is_deadline_exceeded_d_rec_2(rig_factory: Any) -> None:
    """The cell never reports the file: at ended_at + window the recording closes."""
    rig = await make_rig(rig_factory, putting(WAV), deadline_s=1.0)
    started = asyncio.get_running_loop().time()
    await rig.end_call(recording=None)
    rec = (await rig.result(timeout=10))["recording"]
    assert (rec["status"], rec["error_code"]) == ("unavailable", "deadline_exceeded")
    assert asyncio.get_running_loop().time() - started >= 0.9
    assert rig.cell.requests == []


async def test_hung_put_request_is_closed_by_the_deadline_as_timeout_d_rec_2(
    rig_factory: Any,
) -> None:
    async def hangs(cell: FakeCell, call_id: str, upload_id: str, _: dict[str, str]) -> CellUpload:
        await asyncio.sleep(60)
        raise CellUnavailable("never answered")

    rig = await make_rig(rig_factory, hangs, deadline_s=3)
    await rig.end_call()
    rec = (await rig.result(timeout=10))["recording"]
    assert (rec["status"], rec["error_code"]) == ("unavailable", "upload_timeout")


async def test_checksum_mismatch_d_rec_2(rig_factory: Any, s3_client: Any) -> None:
    """The bytes in the bucket are not the recording the cell reported."""
    # Flip the last byte: replacing it by a constant left the bytes unchanged whenever
    # the random recording already ended in that constant (1 run in 256).
    corrupted = WAV[:-1] + bytes([WAV[-1] ^ 0xFF])
    assert corrupted != WAV
    rig = await make_rig(rig_factory, putting(corrupted), deadline_s=3600)
    await rig.end_call()
    rec = (await rig.result(timeout=10))["recording"]
    assert (rec["status"], rec["error_code"]) == ("unavailable", "checksum_mismatch")
    assert rec["checksum_sha256"] is None


async def test_refused_repost_waits_for_the_first_put_and_verifies_d_rec_1(
    rig_factory: Any, s3_client: Any
) -> None:
    """After a D restart the cell refuses a second PUT (upload_not_allowed): the D never
    PUTs again; it finds the object of the first PUT in the bucket and verifies it."""
    cfg = storage_config()

    async def already_started(
        cell: FakeCell, call_id: str, upload_id: str, _: dict[str, str]
    ) -> CellUpload:
        raise CellRejected("upload_not_allowed", "an upload was already started")

    rig = await make_rig(rig_factory, already_started, deadline_s=3600)
    key = f"{rig.storage.key_prefix}/tenant-1/task-a/exec-1.wav"
    s3_client.put_object(Bucket=cfg.bucket, Key=key, Body=WAV)  # the first PUT, before the crash
    await rig.end_call()
    rec = (await rig.result(timeout=10))["recording"]
    assert rec["status"] == "uploaded" and rec["object_key"] == key
    assert rig.cell.requests == ["upload-exec-1"]


async def test_not_created_is_sent_at_once_d_res_2(rig_factory: Any) -> None:
    rig = await make_rig(rig_factory, putting(WAV))
    now = utcnow()
    ending = Ending(CallEnd(now, now, "no_answer", "ring_timeout"), recording_expected=False)
    assert await rig.db.write(
        end_and_finalize,
        "exec-1",
        ending,
        dispatcher_id=ROUTE.dispatcher_id,
        routing_key=ROUTE.routing_key,
        now=now,
        open_recording=rig.service.opener,
    )
    rows = await rig.db.read(outbox.pending, 10)
    body = json.loads(rows[0].body)
    contracts.validate(contracts.Kind.CALL_RESULT, body)
    rec = body["payload"]["recording"]
    assert (rec["status"], rec["reason_code"]) == ("not_created", "no_answer")
    assert rec["upload_id"] is None and rec["object_key"] is None
    assert await rig.db.read(recording_store.get, "exec-1") is None
    assert rig.cell.requests == []


async def not_found(cell: FakeCell, call_id: str, upload_id: str, _: dict[str, str]) -> CellUpload:
    raise CellRejected("recording_not_found", "no recording for that call")


async def test_file_gone_after_an_earlier_upload_is_verified_in_the_bucket_d_rec_1(
    rig_factory: Any, s3_client: Any
) -> None:
    """A D restart re-sends the request; the cell already uploaded the orphan and deleted
    its copy (recording_not_found): the object in the bucket proves the upload."""
    rig = await make_rig(rig_factory, not_found, deadline_s=3600)
    key = f"{rig.storage.key_prefix}/tenant-1/task-a/exec-1.wav"
    s3_client.put_object(Bucket=rig.storage.bucket, Key=key, Body=WAV)
    await rig.end_call()
    rec = (await rig.result(timeout=10))["recording"]
    assert rec["status"] == "uploaded" and rec["checksum_sha256"] == WAV_SHA


async def test_file_gone_and_nothing_in_the_bucket_is_unavailable_at_once_d_rec_2(
    rig_factory: Any,
) -> None:
    rig = await make_rig(rig_factory, not_found, deadline_s=3600)
    await rig.end_call()
    rec = (await rig.result(timeout=10))["recording"]
    assert (rec["status"], rec["error_code"]) == ("unavailable", "upload_failed")
