"""The cell asks for a renewal only when its grant expired before its PUT began (D-NOTE-7):
the answer (and its ``call.upload`` event) say so; the Dispatcher's client reads it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentcall.cell.client import UploadResult as ClientResult
from agentcall.cell.recording.store import UploadState, UploadStatus
from agentcall.cell.runtime.uploads import UploadResult, expired_before_put

NOW = datetime(2026, 3, 2, tzinfo=UTC)
STARTED = UploadState("upload-1", UploadStatus.STARTED, "2026-03-02T00:00:00Z")


@pytest.mark.parametrize(
    ("state", "asks"),
    [
        (expired_before_put(STARTED, NOW, NOW), True),  # nothing was sent
        (UploadState("upload-1", UploadStatus.EXPIRED, "…", put_started=True), False),
        (UploadState("upload-1", UploadStatus.UPLOADED, "…", put_started=True), False),
        (UploadState("upload-1", UploadStatus.FAILED, "…", put_started=False), False),
    ],
)
def test_renewal_is_requested_only_for_an_expiry_before_the_put_d_note_7(
    state: UploadState, asks: bool
) -> None:
    body = UploadResult("call-1", state, 10, "a" * 64).to_json()
    assert body["renewal_requested"] is asks
    assert ClientResult.from_json(body).renewal_requested is asks
