"""Recording uploads to the real SeaweedFS S3 through presigned PUT URLs (D-REC-1, D-REC-2)."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.auth
import pytest

from agentcall.cell.client import (
    CellClient,
    EventType,
    RecordingNotFoundError,
    UploadNotAllowedError,
    UploadTarget,
)
from tests.support.services import S3Settings

from .helpers import Watch, plan, presign, unique

pytestmark = [pytest.mark.integration, pytest.mark.s3]


async def _recorded_call(cell: CellClient, **kw: Any) -> tuple[str, Any]:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("answer"), **kw))
    events = await watch.settled(call.call_id)
    await watch.aclose()
    return call.call_id, events[-1].recording()


async def test_upload_puts_the_recording_once_d_rec_1(
    cell: CellClient, s3_client: Any, s3_settings: S3Settings, object_key: str
) -> None:
    """D-REC-1: one PUT per recording/upload_id; a second request never PUTs again."""
    call_id, recording = await _recorded_call(cell)
    target = UploadTarget("upload-1", presign(s3_client, s3_settings.bucket, object_key))
    result = await cell.upload_recording(call_id, target)
    assert (result.status, result.http_status, result.error_code) == ("uploaded", 200, None)
    assert (result.size_bytes, result.sha256) == (recording.size_bytes, recording.sha256)
    body = s3_client.get_object(Bucket=s3_settings.bucket, Key=object_key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == recording.sha256
    with pytest.raises(UploadNotAllowedError):
        await cell.upload_recording(call_id, target)
    with pytest.raises(UploadNotAllowedError):
        await cell.upload_recording(call_id, UploadTarget("upload-2", target.url))


async def test_expired_authorization_is_reported_then_reauthorized_d_rec_1(
    cell: CellClient, s3_client: Any, s3_settings: S3Settings, object_key: str
) -> None:
    """D-REC-1: an authorization that expired before the PUT may be re-issued for the
    same upload_id; the server's 403 says expired and nothing was stored."""
    call_id, recording = await _recorded_call(cell)
    watch = await Watch.open(cell)
    expired = UploadTarget(
        "upload-1", presign(s3_client, s3_settings.bucket, object_key, expires_s=1)
    )
    await asyncio.sleep(1.1)
    result = await cell.upload_recording(call_id, expired)
    assert (result.status, result.http_status) == ("expired", 403)
    assert result.error_code == "upload_authorization_expired" and result.put_started
    assert result.expires_at is not None and result.expires_at <= datetime.now(UTC)
    event = (await watch.until(call_id, EventType.UPLOAD))[-1]
    await watch.aclose()
    assert event.data["status"] == "expired"
    fresh = UploadTarget("upload-1", presign(s3_client, s3_settings.bucket, object_key))
    again = await cell.upload_recording(call_id, fresh)
    assert again.status == "uploaded" and again.sha256 == recording.sha256


async def test_long_dead_authorization_is_not_even_tried(
    cell: CellClient,
    s3_client: Any,
    s3_settings: S3Settings,
    object_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call_id, _ = await _recorded_call(cell)
    an_hour_ago = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: an_hour_ago)
    target = UploadTarget("upload-1", presign(s3_client, s3_settings.bucket, object_key))
    result = await cell.upload_recording(call_id, target)
    assert (result.status, result.put_started, result.http_status) == ("expired", False, None)


async def test_refused_signature_is_an_explicit_failure_d_rec_2(
    cell: CellClient, s3_client: Any, s3_settings: S3Settings, object_key: str
) -> None:
    """D-REC-2: an explicit PUT failure is final (never retried) with its error code."""
    call_id, _ = await _recorded_call(cell)
    url = presign(s3_client, s3_settings.bucket, object_key).replace(
        "X-Amz-Signature=", "X-Amz-Signature=0"
    )
    result = await cell.upload_recording(call_id, UploadTarget("upload-1", url))
    assert (result.status, result.error_code) == ("failed", "upload_authorization_failed")
    assert result.message == "HTTP 403 SignatureDoesNotMatch"
    good = UploadTarget("upload-1", presign(s3_client, s3_settings.bucket, object_key))
    with pytest.raises(UploadNotAllowedError):
        await cell.upload_recording(call_id, good)


async def test_plan_can_carry_the_upload_target(
    cell: CellClient, s3_client: Any, s3_settings: S3Settings, object_key: str
) -> None:
    target = UploadTarget("upload-1", presign(s3_client, s3_settings.bucket, object_key))
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("answer"), upload=target))
    events = await watch.until(call.call_id, EventType.UPLOAD)
    await watch.aclose()
    recording = next(e for e in events if e.type == EventType.RECORDING_READY).recording()
    assert events[-1].data["status"] == "uploaded"
    head = s3_client.head_object(Bucket=s3_settings.bucket, Key=object_key)
    assert head["ContentLength"] == recording.size_bytes


async def test_no_recording_no_upload(
    cell: CellClient, s3_client: Any, s3_settings: S3Settings
) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("busy")))
    await watch.settled(call.call_id)
    await watch.aclose()
    target = UploadTarget(
        "upload-1", presign(s3_client, s3_settings.bucket, "cell-tests/never.wav")
    )
    with pytest.raises(RecordingNotFoundError):
        await cell.upload_recording(call.call_id, target)
