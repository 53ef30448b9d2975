"""Console sessions (pure rules, docs/orbit/console.md): a sign-in makes a random session id
that only the browser holds (the store keeps its SHA-256), bound to the token the operator
signed in with. A session ends when it is signed out, when its token is revoked or expires,
after `idle` without a request, and at its absolute expiry, whichever comes first."""

from __future__ import annotations

import enum
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

SESSION_BYTES = 32
# what `secrets.token_urlsafe(SESSION_BYTES)` makes: anything else is refused unread
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{43}")
# a live session's last use is written at most this often (a page refreshes every few s)
TOUCH_EVERY = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class SessionTimes:
    idle: timedelta
    absolute: timedelta

    @property
    def touch_every(self) -> timedelta:
        return min(TOUCH_EVERY, self.idle / 10)


@dataclass(frozen=True, slots=True)
class SessionRow:
    token_id: str
    created_at: datetime
    seen_at: datetime
    expires_at: datetime


class Verdict(enum.Enum):
    LIVE = "live"
    TOUCH = "touch"  # live; write its last use now
    DEAD = "dead"  # idle too long or past its absolute expiry: delete it


def new_session_id() -> str:
    return secrets.token_urlsafe(SESSION_BYTES)


def is_session_id(text: str | None) -> bool:
    return text is not None and _SESSION_ID.fullmatch(text) is not None


def session_digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()


def expires_at(now: datetime, times: SessionTimes, token_expires_at: datetime | None) -> datetime:
    """The absolute expiry of a session made at `now`: never after its token's."""
    end = now + times.absolute
    return end if token_expires_at is None else min(end, token_expires_at)


def verdict(row: SessionRow, now: datetime, times: SessionTimes) -> Verdict:
    if now >= row.expires_at or now - row.seen_at >= times.idle:
        return Verdict.DEAD
    if now - row.seen_at >= times.touch_every:
        return Verdict.TOUCH
    return Verdict.LIVE
