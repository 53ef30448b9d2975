"""Upload outcome rules (D-REC-1, D-REC-2 error codes) for presigned PUTs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentcall.cell.recording.store import UploadStatus
from agentcall.cell.runtime.uploads import classify, locally_expired, presigned_expiry

EXPIRED_BODY = (
    b"<?xml version='1.0'?><Error><Code>AccessDenied</Code>"
    b"<Message>Request has expired</Message></Error>"
)
DENIED_BODY = b"<Error><Code>SignatureDoesNotMatch</Code></Error>"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "http://s3/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20260921T080000Z"
            "&X-Amz-Expires=900&X-Amz-Signature=abc",
            datetime(2026, 9, 21, 8, 15, tzinfo=UTC),
        ),
        ("http://oss/b/k?Expires=1790000000&Signature=x", datetime.fromtimestamp(1790000000, UTC)),
        ("http://s3/b/k?X-Amz-Date=garbage&X-Amz-Expires=900", None),
        ("http://s3/b/k", None),
    ],
)
def test_presigned_expiry(url: str, expected: datetime | None) -> None:
    assert presigned_expiry(url) == expected


@pytest.mark.parametrize(
    ("status", "body", "outcome", "code"),
    [
        (200, b"", UploadStatus.UPLOADED, None),
        (403, EXPIRED_BODY, UploadStatus.EXPIRED, "upload_authorization_expired"),
        (403, DENIED_BODY, UploadStatus.FAILED, "upload_authorization_failed"),
        (401, b"", UploadStatus.FAILED, "upload_authorization_failed"),
        (500, b"<Code>InternalError</Code>", UploadStatus.FAILED, "upload_failed"),
        (404, b"<Code>NoSuchBucket</Code>", UploadStatus.FAILED, "upload_failed"),
    ],
)
def test_classify_put_answers_d_rec_2(
    status: int, body: bytes, outcome: UploadStatus, code: str | None
) -> None:
    """D-REC-2: explicit failures carry the contract's error codes."""
    got, error_code, message = classify(status, body)
    assert (got, error_code) == (outcome, code)
    assert message.startswith(f"HTTP {status}")


def test_classify_names_the_s3_code_but_not_the_body() -> None:
    _, _, message = classify(403, DENIED_BODY)
    assert message == "HTTP 403 SignatureDoesNotMatch"


@pytest.mark.parametrize(
    ("expiry", "expired"),
    [
        (None, False),
        (datetime(2026, 9, 21, 8, 0, tzinfo=UTC), False),  # just expired: the server decides
        (datetime(2026, 9, 21, 7, 59, 30, tzinfo=UTC), False),  # within clock skew
        (datetime(2026, 9, 21, 7, 59, 0, tzinfo=UTC), True),  # dead: no PUT at all
    ],
)
def test_only_clearly_dead_urls_are_refused_locally(expiry: datetime | None, expired: bool) -> None:
    assert locally_expired(expiry, datetime(2026, 9, 21, 8, 0, tzinfo=UTC)) is expired


@pytest.mark.parametrize(
    ("skew_s", "expiry", "expired"),
    [
        (0.0, datetime(2026, 9, 21, 8, 0, 1, tzinfo=UTC), False),  # still valid
        (0.0, datetime(2026, 9, 21, 8, 0, tzinfo=UTC), True),  # dead from its expiry on
        (5.0, datetime(2026, 9, 21, 7, 59, 56, tzinfo=UTC), False),  # within the skew
        (5.0, datetime(2026, 9, 21, 7, 59, 55, tzinfo=UTC), True),
        (0.0, None, False),  # the URL does not say: the server decides
    ],
)
def test_the_skew_tolerated_is_a_setting(
    skew_s: float, expiry: datetime | None, expired: bool
) -> None:
    """``--upload-expiry-skew-s``: how long past its expiry a URL is still tried."""
    assert locally_expired(expiry, datetime(2026, 9, 21, 8, 0, tzinfo=UTC), skew_s) is expired
