"""One PUT of a recording to a presigned URL, at most once, with an explicit outcome.

- ``uploaded``: the server answered 2xx (size and SHA-256 of what was sent);
- ``expired``: the authorization had expired — answered 403 "expired" by the server,
  or expired more than ``skew_s`` ago by the cell's clock (``--upload-expiry-skew-s``,
  default ``EXPIRY_SKEW_S``; then no PUT is sent at all); nothing was stored. When no
  PUT began, the answer (and its ``call.upload`` event) carries
  ``renewal_requested: true``: the cell's explicit request for a new authorization of
  the same upload_id; the D renews only on it (D-NOTE-7);
- ``failed``: anything else (authorization refused, HTTP error, timeout, network),
  with the contract's error code. The cell never retries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from agentcall.cell.calls.plan import UploadTarget
from agentcall.cell.domain.events import iso
from agentcall.cell.recording.store import RecordingStore, UploadState, UploadStatus

ERROR_EXPIRED = "upload_authorization_expired"
ERROR_AUTH = "upload_authorization_failed"
ERROR_FAILED = "upload_failed"
ERROR_TIMEOUT = "upload_timeout"
EXPIRY_SKEW_S = 60.0  # the storage server enforces expiry; the cell only skips dead URLs
S3_CODE = re.compile(rb"<Code>([A-Za-z0-9.]{1,64})</Code>")


def presigned_expiry(url: str) -> datetime | None:
    """When a presigned URL stops working (SigV4 X-Amz-Date + X-Amz-Expires, or the
    epoch ``Expires`` of SigV2/OSS); None when the URL does not say."""
    query = {k.lower(): v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    try:
        if "x-amz-date" in query and "x-amz-expires" in query:
            signed = datetime.strptime(query["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
            return signed + timedelta(seconds=int(query["x-amz-expires"]))
        if "expires" in query:
            return datetime.fromtimestamp(int(query["expires"]), tz=UTC)
    except ValueError:
        return None
    return None


def locally_expired(expiry: datetime | None, now: datetime, skew_s: float = EXPIRY_SKEW_S) -> bool:
    """True when the URL is dead even allowing ``skew_s`` of clock skew with the storage
    server (0: dead from its expiry on, by the cell's clock)."""
    return expiry is not None and expiry + timedelta(seconds=skew_s) <= now


def classify(status: int, body: bytes) -> tuple[UploadStatus, str | None, str]:
    """(status, error_code, message) for an HTTP answer to the PUT."""
    if 200 <= status < 300:
        return UploadStatus.UPLOADED, None, f"HTTP {status}"
    match = S3_CODE.search(body[:4096])
    code = match.group(1).decode() if match else ""
    message = f"HTTP {status}" + (f" {code}" if code else "")
    if status == 403 and b"expired" in body[:4096].lower():
        return UploadStatus.EXPIRED, ERROR_EXPIRED, message
    if status in (401, 403):
        return UploadStatus.FAILED, ERROR_AUTH, message
    return UploadStatus.FAILED, ERROR_FAILED, message


@dataclass(frozen=True)
class UploadResult:
    call_id: str
    state: UploadState
    size_bytes: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        s = self.state
        return {
            "call_id": self.call_id,
            "upload_id": s.upload_id,
            "status": s.status.value,
            "put_started": s.put_started,
            "http_status": s.http_status,
            "error_code": s.error_code,
            "message": s.message,
            "expires_at": s.expires_at,
            "etag": s.etag,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "started_at": s.started_at,
            "finished_at": s.finished_at,
            "renewal_requested": s.status is UploadStatus.EXPIRED and not s.put_started,
        }


def expired_before_put(started: UploadState, expiry: datetime, now: datetime) -> UploadState:
    return UploadState(
        upload_id=started.upload_id,
        status=UploadStatus.EXPIRED,
        started_at=started.started_at,
        put_started=False,
        finished_at=iso(now),
        error_code=ERROR_EXPIRED,
        message="authorization expired before the PUT; nothing was sent",
        expires_at=iso(expiry),
    )


async def put_once(
    client: httpx.AsyncClient,
    path: Path,
    target: UploadTarget,
    started: UploadState,
    expiry: datetime | None,
    now: Callable[[], datetime],
) -> UploadState:
    """PUT the file once; never raises for transport or HTTP failures."""
    data = path.read_bytes()
    done = replace(started, put_started=True, expires_at=iso(expiry) if expiry else None)
    try:
        response = await client.put(target.url, content=data, headers=dict(target.headers))
    except httpx.TimeoutException as exc:
        return replace(
            done,
            status=UploadStatus.FAILED,
            finished_at=iso(now()),
            error_code=ERROR_TIMEOUT,
            message=f"PUT timed out ({type(exc).__name__}); outcome unknown",
        )
    except httpx.HTTPError as exc:
        return replace(
            done,
            status=UploadStatus.FAILED,
            put_started=not isinstance(exc, httpx.ConnectError),
            finished_at=iso(now()),
            error_code=ERROR_FAILED,
            message=f"PUT failed: {type(exc).__name__}",
        )
    status, code, message = classify(response.status_code, response.content)
    return replace(
        done,
        status=status,
        finished_at=iso(now()),
        http_status=response.status_code,
        error_code=code,
        message=message,
        etag=response.headers.get("etag"),
    )


async def upload_recording(
    store: RecordingStore,
    client: httpx.AsyncClient,
    call_id: str,
    target: UploadTarget,
    now: Callable[[], datetime],
    skew_s: float = EXPIRY_SKEW_S,
) -> UploadResult:
    """The whole upload of one recording: durable start, one PUT (or none), settle."""
    at = now()
    meta = store.begin_upload(call_id, target.upload_id, iso(at))  # refuses a second PUT
    assert meta.upload is not None
    expiry = presigned_expiry(target.url)
    if expiry is not None and locally_expired(expiry, at, skew_s):
        state = expired_before_put(meta.upload, expiry, at)
    else:
        state = await put_once(client, store.wav_path(call_id), target, meta.upload, expiry, now)
    meta = store.settle_upload(call_id, state)
    return UploadResult(call_id, state, meta.size_bytes or 0, meta.sha256 or "")
