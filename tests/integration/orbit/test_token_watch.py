"""`TokenWatch` against a real database: one statement re-checks every open session's token;
a revoked, expired or deleted token ends its sessions (stop leasing first, then close), the
others go on; the loop wakes at the next expiry; a database failure is logged and retried."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.tokens import Permission, session_valid
from agentcall.orbit.execution.token_watch import TokenWatch, Watched
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.support.orbit_databases import KINDS, fresh_url

pytestmark = pytest.mark.integration
NOW = datetime(2026, 9, 17, tzinfo=UTC)


@pytest.mark.parametrize(
    ("found", "revoked_at", "expires_at", "valid"),
    [
        (True, None, None, True),
        (True, None, NOW + timedelta(microseconds=1), True),
        (True, None, NOW, False),  # expires at its instant exactly
        (True, NOW - timedelta(days=1), None, False),
        (True, NOW, NOW + timedelta(days=1), False),
        (False, None, None, False),  # deleted
    ],
)
def test_session_valid(
    found: bool, revoked_at: datetime | None, expires_at: datetime | None, valid: bool
) -> None:
    assert session_valid(found, revoked_at, expires_at, NOW) is valid


@pytest.fixture(scope="module", params=KINDS)
def watch_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_url(request.param, tmp_path_factory.mktemp("watch"), migrated=True) as url:
        yield url


@pytest.fixture
async def db(watch_db_url: str) -> AsyncIterator[Database]:
    database = Database.open(watch_db_url, pool_size=2)
    yield database
    await database.close()


class Session:
    def __init__(self) -> None:
        self.stopped = False
        self.ended = asyncio.Event()

    def watched(self, token_id: str, expires_at: datetime | None = None) -> Watched:
        def stop() -> None:
            self.stopped = True

        async def end() -> None:
            assert self.stopped  # no lease after the end was decided
            self.ended.set()

        return Watched(token_id, expires_at, stop, end)


async def test_revoked_token_ends_its_sessions_only(db: Database) -> None:
    admin = Admin(db)
    made = await admin.init("watch" + os.urandom(4).hex(), "main")
    kept = await admin.create_token(made.namespace_id, [Permission.WORK], [made.queue_id], None)
    doomed = await admin.create_token(made.namespace_id, [Permission.WORK], [made.queue_id], None)
    ended: list[int] = []
    watch = TokenWatch(db, 60, on_ended=ended.append)
    a, b, c = Session(), Session(), Session()
    watch.add("a", a.watched(doomed.token_id))
    watch.add("b", b.watched(doomed.token_id))
    watch.add("c", c.watched(kept.token_id))
    assert await watch.check() == 0
    await admin.revoke_token(doomed.token_id)
    assert await watch.check() == 2
    assert a.ended.is_set() and b.ended.is_set() and not c.stopped
    assert set(watch.sessions) == {"c"} and ended == [2]


async def test_the_loop_ends_a_session_at_its_token_expiry(db: Database) -> None:
    admin = Admin(db)
    made = await admin.init("expiry" + os.urandom(4).hex(), "main")
    expires = datetime.now(UTC) + timedelta(seconds=1.5)
    issued = await admin.create_token(
        made.namespace_id, [Permission.WORK], [made.queue_id], expires
    )
    watch = TokenWatch(db, 60)  # the interval alone would wait a minute
    session = Session()
    watch.start()
    try:
        watch.add("s", session.watched(issued.token_id, expires))
        await asyncio.wait_for(session.ended.wait(), 5)
        assert datetime.now(UTC) >= expires
    finally:
        await watch.stop()


async def test_a_failed_check_is_logged_and_the_loop_goes_on(
    db: Database, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = Admin(db)
    made = await admin.init("failing" + os.urandom(4).hex(), "main")
    watch = TokenWatch(db, 0.05)
    calls = 0

    async def failing(token_ids: set[str]) -> dict[str, tuple[datetime | None, ...]]:
        nonlocal calls
        calls += 1
        raise OSError("the database is down")

    monkeypatch.setattr(watch, "_load", failing)
    session = Session()
    with caplog.at_level(logging.WARNING, logger="orbit.workers"):
        watch.start()
        watch.add("s", session.watched(made.token_id))
        await asyncio.sleep(0.3)
        await watch.stop()
    assert calls >= 2 and not session.stopped
    assert any("token check failed" in r.getMessage() for r in caplog.records)
