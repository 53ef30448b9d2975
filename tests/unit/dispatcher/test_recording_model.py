"""The recording state machine and deadline table (D-REC-1, D-REC-2), pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.dispatcher.cell.adapter import event_detail
from agentcall.dispatcher.domain import recording as model
from agentcall.dispatcher.domain.recording import (
    ErrorCode,
    Media,
    Missing,
    ObjectFacts,
    Recording,
    RecordingState,
    Source,
    UploadReport,
    UploadStatus,
)
from agentcall.dispatcher.domain.states import IllegalTransition
from agentcall.dispatcher.recording import decide
from agentcall.dispatcher.recording.decide import Step, next_step
from agentcall.dispatcher.recording.keys import recording_keys

S = RecordingState
E = ErrorCode
U = UploadStatus
T0 = datetime(2026, 9, 18, 10, 0, tzinfo=UTC)
DEADLINE = T0 + timedelta(minutes=15)
MEDIA = Media("wav", 1, 8000, 20000, 320044, "a" * 64)
GOOD = ObjectFacts(320044, "a" * 64)
BAD_SHA = ObjectFacts(320044, "b" * 64)
BAD_SIZE = ObjectFacts(100, "a" * 64)


def rec(state: RecordingState = S.WAITING, **kw: object) -> Recording:
    base = Recording(
        execution_id="exec-1",
        call_id="exec-1",
        recording_id="rec-exec-1",
        upload_id="upload-exec-1",
        bucket="recordings",
        object_key="calls/t/task/exec-1.wav",
        source=Source.CALL,
        state=state,
        media=None if state is S.WAITING else MEDIA,
        ended_at=T0,
        deadline_at=DEADLINE,
    )
    return replace(base, **kw)  # type: ignore[arg-type]


# --- transitions ----------------------------------------------------------------------


def test_file_ready_moves_waiting_to_ready_once() -> None:
    ready = model.file_ready(rec(), MEDIA)
    assert (ready.state, ready.media) == (S.READY, MEDIA)
    assert model.file_ready(ready, replace(MEDIA, size_bytes=1)) == ready  # replay: unchanged


@pytest.mark.parametrize("state", [S.READY, S.EXPIRED, S.AUTHORIZED])
def test_authorization_is_counted_and_bounded_d_rec_1(state: RecordingState) -> None:
    until = T0 + timedelta(minutes=5)
    out = model.authorized(rec(state, authorizations=1), until)
    assert (out.state, out.authorizations, out.authorized_until) == (S.AUTHORIZED, 2, until)


@pytest.mark.parametrize("state", [S.WAITING, S.PUT_UNKNOWN, S.PUT_DONE, S.UPLOADED])
def test_no_authorization_once_a_put_may_have_started_d_rec_1(state: RecordingState) -> None:
    with pytest.raises(IllegalTransition):
        model.authorized(rec(state), DEADLINE)


@pytest.mark.parametrize(
    ("state", "report", "expected_state", "expected_code"),
    [
        (S.AUTHORIZED, UploadReport(U.UPLOADED), S.PUT_DONE, None),
        (S.AUTHORIZED, UploadReport(U.EXPIRED, "upload_authorization_expired"), S.EXPIRED, None),
        (S.AUTHORIZED, UploadReport(U.REFUSED), S.PUT_UNKNOWN, None),
        (S.AUTHORIZED, UploadReport(U.FAILED, "upload_timeout"), S.PUT_UNKNOWN, None),
        (S.AUTHORIZED, UploadReport(U.FAILED, "upload_failed"), S.UNAVAILABLE, E.UPLOAD_FAILED),
        (
            S.AUTHORIZED,
            UploadReport(U.FAILED, "upload_authorization_failed"),
            S.UNAVAILABLE,
            E.AUTHORIZATION_FAILED,
        ),
        (S.AUTHORIZED, UploadReport(U.FAILED, None), S.UNAVAILABLE, E.UPLOAD_FAILED),
        (S.AUTHORIZED, UploadReport(U.MISSING), S.UNAVAILABLE, E.UPLOAD_FAILED),
        (S.PUT_UNKNOWN, UploadReport(U.UPLOADED), S.PUT_DONE, None),
        (S.PUT_UNKNOWN, UploadReport(U.EXPIRED), S.EXPIRED, None),
        (S.PUT_UNKNOWN, UploadReport(U.REFUSED), S.PUT_UNKNOWN, None),
        # late or replayed reports change nothing
        (S.PUT_DONE, UploadReport(U.EXPIRED), S.PUT_DONE, None),
        (S.PUT_DONE, UploadReport(U.REFUSED), S.PUT_DONE, None),
        (S.EXPIRED, UploadReport(U.EXPIRED), S.EXPIRED, None),
        (S.READY, UploadReport(U.UPLOADED), S.READY, None),
        (S.UPLOADED, UploadReport(U.FAILED, "upload_failed"), S.UPLOADED, None),
        (S.UNAVAILABLE, UploadReport(U.UPLOADED), S.UNAVAILABLE, None),
    ],
)
def test_upload_reports_d_rec_1_d_rec_2(
    state: RecordingState,
    report: UploadReport,
    expected_state: RecordingState,
    expected_code: ErrorCode | None,
) -> None:
    out = model.upload_reported(rec(state), report)
    assert (out.state, out.error_code) == (expected_state, expected_code)


def test_stale_expired_report_of_an_earlier_authorization_is_ignored_d_rec_1() -> None:
    """The first URL's `expired` replayed after a re-authorization does not re-open it."""
    current = rec(S.AUTHORIZED, authorizations=2, authorized_until=T0 + timedelta(minutes=14))
    stale = UploadReport(U.EXPIRED, "upload_authorization_expired", T0 + timedelta(seconds=2))
    assert model.upload_reported(current, stale) == current
    fresh = UploadReport(U.EXPIRED, None, T0 + timedelta(minutes=14))
    assert model.upload_reported(current, fresh).state is S.EXPIRED


@pytest.mark.parametrize(
    ("state", "probe", "expected_state", "expected_code"),
    [
        (S.PUT_DONE, GOOD, S.UPLOADED, None),
        (S.PUT_DONE, BAD_SHA, S.UNAVAILABLE, E.CHECKSUM_MISMATCH),
        (S.PUT_DONE, BAD_SIZE, S.UNAVAILABLE, E.CHECKSUM_MISMATCH),
        (S.PUT_DONE, Missing(), S.UNAVAILABLE, E.UPLOAD_FAILED),
        (S.PUT_DONE, None, S.PUT_DONE, None),  # storage unreachable: try again
        (S.PUT_UNKNOWN, GOOD, S.UPLOADED, None),
        (S.PUT_UNKNOWN, BAD_SHA, S.UNAVAILABLE, E.CHECKSUM_MISMATCH),
        (S.PUT_UNKNOWN, Missing(), S.PUT_UNKNOWN, None),  # may still land
        (S.AUTHORIZED, GOOD, S.UPLOADED, None),
        (S.READY, GOOD, S.READY, None),
        (S.UPLOADED, BAD_SHA, S.UPLOADED, None),
    ],
)
def test_verification_size_and_sha256_d_rec_2(
    state: RecordingState,
    probe: model.Probe,
    expected_state: RecordingState,
    expected_code: ErrorCode | None,
) -> None:
    out = model.verified(rec(state), probe)
    assert (out.state, out.error_code) == (expected_state, expected_code)


@pytest.mark.parametrize(
    ("state", "probe", "expected_state", "expected_code"),
    [
        (S.WAITING, None, S.UNAVAILABLE, E.DEADLINE_EXCEEDED),
        (S.READY, None, S.UNAVAILABLE, E.DEADLINE_EXCEEDED),
        (S.EXPIRED, None, S.UNAVAILABLE, E.AUTHORIZATION_EXPIRED),
        (S.AUTHORIZED, Missing(), S.UNAVAILABLE, E.UPLOAD_TIMEOUT),
        (S.AUTHORIZED, None, S.UNAVAILABLE, E.UPLOAD_TIMEOUT),
        (S.PUT_UNKNOWN, Missing(), S.UNAVAILABLE, E.UPLOAD_TIMEOUT),
        (S.PUT_UNKNOWN, GOOD, S.UPLOADED, None),
        (S.PUT_UNKNOWN, BAD_SHA, S.UNAVAILABLE, E.CHECKSUM_MISMATCH),
        (S.PUT_DONE, GOOD, S.UPLOADED, None),
        (S.PUT_DONE, Missing(), S.UNAVAILABLE, E.UPLOAD_FAILED),
        (S.PUT_DONE, None, S.UNAVAILABLE, E.DEADLINE_EXCEEDED),
        (S.UPLOADED, None, S.UPLOADED, None),
        (S.UNAVAILABLE, GOOD, S.UNAVAILABLE, None),
    ],
)
def test_deadline_closes_every_open_recording_d_rec_2(
    state: RecordingState,
    probe: model.Probe,
    expected_state: RecordingState,
    expected_code: ErrorCode | None,
) -> None:
    out = model.deadline_passed(rec(state), probe)
    assert (out.state, out.error_code) == (expected_state, expected_code)
    assert out.state.closed


def test_closed_recordings_never_move() -> None:
    for state in (S.UPLOADED, S.UNAVAILABLE):
        for target in S:
            with pytest.raises(IllegalTransition):
                model.check_move(state, target)


# --- decisions ------------------------------------------------------------------------

BEFORE = T0 + timedelta(minutes=1)
LAST_MS = DEADLINE - timedelta(milliseconds=1500)


ASKED = "asked"  # the cell asked for a renewal (D-NOTE-7)
HELD = "held"  # this process holds a grant it could not hand over yet


@pytest.mark.parametrize(
    ("state", "now", "busy", "step", "flags"),
    [
        (S.WAITING, BEFORE, False, Step.WAIT, ()),
        (S.READY, BEFORE, False, Step.AUTHORIZE, ()),
        (S.EXPIRED, BEFORE, False, Step.WAIT, ()),  # never re-issued on the D's own
        (S.EXPIRED, BEFORE, False, Step.AUTHORIZE, (ASKED,)),  # only on the cell's request
        (S.EXPIRED, BEFORE, True, Step.WAIT, (ASKED,)),
        (S.AUTHORIZED, BEFORE, False, Step.WAIT, ()),  # e.g. after a restart: no second grant
        (S.AUTHORIZED, BEFORE, False, Step.HAND_OVER, (HELD,)),  # the same grant again
        (S.AUTHORIZED, BEFORE, True, Step.WAIT, (HELD,)),
        (S.PUT_UNKNOWN, BEFORE, False, Step.VERIFY, ()),
        (S.PUT_DONE, BEFORE, False, Step.VERIFY, ()),
        (S.READY, LAST_MS, False, Step.WAIT, ()),  # no usable URL left before the deadline
        (S.EXPIRED, LAST_MS, False, Step.WAIT, (ASKED,)),
        (S.WAITING, DEADLINE, False, Step.CLOSE, ()),
        (S.EXPIRED, DEADLINE, False, Step.CLOSE, (ASKED,)),
        (S.PUT_DONE, DEADLINE + timedelta(hours=2), False, Step.CLOSE, ()),
        (S.AUTHORIZED, DEADLINE, True, Step.CLOSE, ()),  # a hung PUT request never keeps it open
        (S.UPLOADED, DEADLINE, False, Step.DONE, ()),
        (S.UNAVAILABLE, BEFORE, False, Step.DONE, ()),
    ],
)
def test_next_step_table_d_rec_2_d_note_7(
    state: RecordingState, now: datetime, busy: bool, step: Step, flags: tuple[str, ...]
) -> None:
    recording = replace(rec(state), renewal_requested=ASKED in flags)
    assert next_step(recording, now, busy=busy, holds_grant=HELD in flags) is step


@pytest.mark.parametrize(
    ("report", "asks"),
    [
        (UploadReport(U.EXPIRED, "upload_authorization_expired", renewal_requested=True), True),
        (UploadReport(U.EXPIRED, "upload_authorization_expired"), False),  # the PUT had begun
    ],
)
def test_only_an_expiry_before_the_put_asks_for_renewal_d_note_7(
    report: UploadReport, asks: bool
) -> None:
    expired = model.upload_reported(rec(S.AUTHORIZED), report)
    assert expired.state is S.EXPIRED and expired.renewal_requested is asks
    assert model.renewable(expired) is asks
    renewed = model.authorized(expired, DEADLINE - timedelta(seconds=5))
    assert not renewed.renewal_requested and not model.renewable(renewed)


LAST = DEADLINE - timedelta(seconds=1)


@pytest.mark.parametrize(
    ("now", "window_s", "until"),
    [
        (T0, 900, LAST),  # at the end of the call: the 15 minutes, up to the deadline
        (T0 + timedelta(minutes=10), 900, LAST),  # never past the deadline
        (T0, 60, T0 + timedelta(minutes=1)),
    ],
)
def test_authorization_lasts_its_window_but_never_past_the_deadline_d_rec_1(
    now: datetime, window_s: float, until: datetime
) -> None:
    assert decide.authorization_until(now, DEADLINE, window_s) == until
    expiry = now.replace(microsecond=0) + timedelta(seconds=decide.expires_in_s(now, until))
    assert until <= expiry < until + timedelta(seconds=1) <= DEADLINE


@pytest.mark.parametrize("fraction_us", [0, 1, 500_000, 999_999])
def test_presigned_expiry_counts_from_the_signing_second_d_rec_1(fraction_us: int) -> None:
    """SigV4 truncates X-Amz-Date to the second: the URL must still live until ``until``."""
    now = T0.replace(microsecond=fraction_us)
    until = now + timedelta(seconds=1)
    expiry = now.replace(microsecond=0) + timedelta(seconds=decide.expires_in_s(now, until))
    assert until <= expiry < until + timedelta(seconds=1)


def test_deadline_is_ended_at_plus_window_d_rec_2() -> None:
    assert decide.deadline_for(T0, 900) == DEADLINE
    assert decide.deadline_for(T0, 2.5) == T0 + timedelta(seconds=2.5)


def test_media_from_event_call_and_orphan_shapes() -> None:
    """The event's wire shape (``sha256``) is read once by the cell adapter; the D's own
    stored shape (``checksum_sha256``) by ``Media.from_json``."""
    event = {"format": "wav", "channels": 1, "sample_rate_hz": 8000, "duration_ms": 20000}
    wire = {**event, "size_bytes": 320044, "sha256": "a" * 64}
    assert event_detail("call.recording_ready", wire) == MEDIA
    assert Media.from_json(MEDIA.to_json()) == MEDIA
    orphan = Media.from_json({"size_bytes": 10, "checksum_sha256": "c" * 64, "partial": True})
    assert orphan.partial and orphan.format == "wav" and orphan.sample_rate_hz == 8000


@pytest.mark.parametrize(
    ("tenant", "task", "call", "key"),
    [
        ("tenant-a", "task-a", "exec-1", "calls/tenant-a/task-a/exec-1.wav"),
        ("租户 a/b", "t", "c", "calls/___a_b/t/c.wav"),
        ("..", "t", "c", "calls/_/t/c.wav"),
    ],
)
def test_keys_are_fixed_per_call_d_rec_1(tenant: str, task: str, call: str, key: str) -> None:
    keys = recording_keys("calls/", tenant, task, call)
    assert keys == recording_keys("calls", tenant, task, call)  # stable across restarts
    assert keys.object_key == key
    assert (keys.recording_id, keys.upload_id) == (f"rec-{call}", f"upload-{call}")


@pytest.mark.parametrize(
    "closed",
    [
        model.verified(rec(S.PUT_DONE), GOOD),
        model.verified(rec(S.PUT_DONE), BAD_SHA),
        model.deadline_passed(rec(S.WAITING), None),
        model.deadline_passed(rec(S.EXPIRED), None),
        model.close(rec(S.AUTHORIZED), ErrorCode.AUTHORIZATION_FAILED),
    ],
    ids=["uploaded", "checksum_mismatch", "deadline_exceeded", "expired", "auth_failed"],
)
def test_closed_recording_makes_a_schema_valid_call_result_d_rec_2(closed: Recording) -> None:
    """uploaded carries bucket/key/size/sha256; unavailable nulls them and names the stage."""
    from agentcall.dispatcher import contracts
    from agentcall.dispatcher.domain.admission import Accept, decide
    from agentcall.dispatcher.domain.results import CallEnd, call_result
    from agentcall.dispatcher.recording.transaction import result_recording
    from tests.support.dispatcher_factories import D_ID, command, occupancy, quota, sip, view
    from tests.support.dispatcher_factories import NOW as F_NOW

    accepted = decide(command(), view(), sip(), quota(), occupancy(), F_NOW)
    assert isinstance(accepted, Accept)
    recording = result_recording(closed)
    body = call_result(
        event_id="call-result-1",
        dispatcher_id=D_ID,
        execution_id="exec-1",
        call_id="exec-1",
        plan=accepted.plan,
        end=CallEnd(T0, T0 + timedelta(seconds=20), "answered", None),
        recording=recording,
        occurred_at=DEADLINE,
    )
    contracts.validate(contracts.Kind.CALL_RESULT, body)
    if closed.state is S.UPLOADED:
        assert (recording["size_bytes"], recording["checksum_sha256"]) == (320044, "a" * 64)
    else:
        assert recording["error_code"] == closed.error_code
        assert recording["bucket"] is None and recording["checksum_sha256"] is None
