"""What to do next for one recording at ``now`` (pure): the sweeper's decision table.

The deadline is ``call.ended_at + window`` (15 minutes in production, D-REC-2); an
authorization lasts ``authorization_s`` (15 minutes, D-REC-1) but never past the deadline,
so no PUT can land after the recording was closed.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from enum import StrEnum

from agentcall.dispatcher.domain.recording import Recording, RecordingState, renewable

S = RecordingState
MIN_AUTHORIZATION = timedelta(seconds=1)  # a presigned URL lives whole seconds


class Step(StrEnum):
    DONE = "done"  # closed; nothing left
    WAIT = "wait"  # nothing to do before the next report or the deadline
    AUTHORIZE = "authorize"  # presign the fixed key and hand the PUT to the cell
    HAND_OVER = "hand_over"  # hand the grant this process holds to the cell again
    VERIFY = "verify"  # look at the bucket: size and SHA-256
    CLOSE = "close"  # the deadline passed: look at the bucket once more, then close


def deadline_for(ended_at: datetime, window_s: float) -> datetime:
    """D-REC-2: every recording is closed by ``call.ended_at + window``."""
    return ended_at + timedelta(seconds=window_s)


def authorization_until(now: datetime, deadline: datetime, authorization_s: float) -> datetime:
    """D-REC-1: ``authorization_s`` from now, ending a second before the deadline at the
    latest (a presigned URL counts whole seconds from its signing second)."""
    return min(now + timedelta(seconds=authorization_s), deadline - MIN_AUTHORIZATION)


def expires_in_s(now: datetime, until: datetime) -> int:
    """``X-Amz-Expires`` for a URL signed at ``now`` that must work until ``until``.

    SigV4 counts from the signing time truncated to the second, so the fraction already
    elapsed is added back; the URL dies less than a second after ``until``.
    """
    signed = now.replace(microsecond=0)
    return max(1, math.ceil((until - signed).total_seconds()))


_BY_STATE = {
    S.WAITING: Step.WAIT,  # the cell reports the file (or the deadline closes it)
    S.READY: Step.AUTHORIZE,  # the first (and usually only) authorization
    S.EXPIRED: Step.WAIT,  # re-authorized only on the cell's request (D-NOTE-7)
    S.AUTHORIZED: Step.WAIT,  # the grant was issued: never a second one on the D's own
    S.PUT_UNKNOWN: Step.VERIFY,  # the object may land: look, never PUT again
    S.PUT_DONE: Step.VERIFY,
}


def next_step(rec: Recording, now: datetime, *, busy: bool, holds_grant: bool = False) -> Step:
    """``busy``: a request for this recording is in flight in this process. The deadline
    closes the recording even then: a hung request never keeps it open (D-REC-2).
    ``holds_grant``: the grant issued has no answer yet (the cell was away, the D
    restarted): the same grant is handed over again, never a new one (D-NOTE-7)."""
    if rec.state.closed:
        return Step.DONE
    if now >= rec.deadline_at:
        return Step.CLOSE
    if busy:
        return Step.WAIT
    step = _BY_STATE[rec.state]
    if renewable(rec):
        step = Step.AUTHORIZE  # the cell asked: answer it, for the same upload_id/object_key
    elif rec.state is S.AUTHORIZED and holds_grant:
        return Step.HAND_OVER
    if step is Step.AUTHORIZE and rec.deadline_at - now < 2 * MIN_AUTHORIZATION:
        return Step.WAIT  # too late for a usable URL: the deadline closes it
    return step
