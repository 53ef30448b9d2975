"""What the inspection views and the console decide, as pure rules (docs/orbit/console.md):
which WAITING task is ready and since when, how many are scheduled for later, what an idle
worker shows as its last heartbeat, and how a time reads (relative, absolute on hover)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from agentcall.orbit.console.times import age, moment, relative, span
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.worker_directory import IDLE_STEP_S, heartbeat_at
from agentcall.orbit.execution.inspection import QueueView, Snapshot, ready_since
from agentcall.orbit.execution.worker_directory import record_of
from agentcall.orbit.protocol.messages import WorkerIdentity
from agentcall.orbit.store.inspect import Availability

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 2, 12, 0, 7, tzinfo=UTC)
Q = "q" * 32


@pytest.mark.parametrize(
    ("found", "wanted"),
    [
        (None, None),  # nothing waits
        (Availability(NOW - timedelta(minutes=3), 0), NOW - timedelta(minutes=3)),
        (Availability(NOW, 2), NOW),  # available exactly now: ready
        (Availability(NOW + timedelta(hours=2), 5), None),  # all of it scheduled: no backlog
        (Availability(NOW + timedelta(microseconds=1), 1), None),
    ],
)
def test_the_oldest_ready_task_is_the_earliest_available_one_that_has_come(
    found: Availability | None, wanted: datetime | None
) -> None:
    assert ready_since(found, NOW) == wanted


def test_a_queue_view_counts_ready_and_scheduled_apart_and_ages_the_ready_one() -> None:
    """Tasks scheduled 2 h ahead and created 23 min ago are not 23 min of backlog."""
    created = NOW - timedelta(minutes=23)
    snap = Snapshot(
        0.0,
        {Q: {"WAITING": 4}},
        {Q: created},
        {Q: "main"},
        {Q: Availability(NOW - timedelta(seconds=90), 3)},
        NOW,
    )
    view = QueueView(
        Q, "main", snap.counts[Q], created, NOW, snap.oldest_ready(Q), snap.scheduled(Q)
    ).view()
    assert (view["ready"], view["scheduled"]) == (1, 3)
    assert view["oldest_ready_at"] == "2026-12-02T11:58:37Z"
    assert view["oldest_ready_age_ms"] == 90_000
    assert view["oldest_waiting_age_ms"] == 23 * 60_000  # creation age, kept as documented
    later = Snapshot(
        0.0,
        {Q: {"WAITING": 2}},
        {Q: created},
        {Q: "main"},
        {Q: Availability(NOW + timedelta(hours=2), 2)},
        NOW,
    )
    only_later = QueueView(
        Q, "main", later.counts[Q], created, NOW, later.oldest_ready(Q), later.scheduled(Q)
    ).view()
    assert (only_later["ready"], only_later["scheduled"]) == (0, 2)
    assert "oldest_ready_at" not in only_later and "oldest_ready_age_ms" not in only_later
    assert Snapshot(0.0, {}, {}, {}).scheduled(Q) == 0


STEP = timedelta(seconds=IDLE_STEP_S)


@pytest.mark.parametrize(
    ("seen_at", "holds", "wanted"),
    [
        (NOW - timedelta(minutes=40), True, NOW - timedelta(minutes=40)),  # its last heartbeat
        (NOW - timedelta(minutes=40), False, datetime(2026, 12, 2, 12, 0, 5, tzinfo=UTC)),
        (NOW - timedelta(seconds=1), False, NOW - timedelta(seconds=1)),  # never goes back
        (datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC), False, NOW - timedelta(seconds=2)),
    ],
)
def test_an_idle_connection_shows_a_moving_heartbeat(
    seen_at: datetime, holds: bool, wanted: datetime
) -> None:
    found = heartbeat_at(seen_at, holds, NOW)
    assert found == wanted
    assert holds or NOW - STEP < found <= NOW


def _link(held: int, seen_at: datetime) -> SimpleNamespace:
    peer = SimpleNamespace(
        connection_id="c" * 32,
        namespace_id="n" * 32,
        worker=WorkerIdentity("w", "i" * 32, "sdk/1", "host", 7),
    )
    return SimpleNamespace(
        peer=peer,
        handlers=frozenset({HandlerKey("h", "v1")}),
        capacity=4,
        in_flight={f"a{i}" for i in range(held)},
        held=held,
        connected_at=seen_at,
        seen_at=seen_at,
        queue_order=(Q,),
    )


def test_the_record_of_an_idle_link_is_not_stuck_at_its_connection_time() -> None:
    """What the registration round records and the listing shows: an idle worker connected
    30 min ago (no lease heartbeat since) has a heartbeat within the last step."""
    long_ago = datetime.now(UTC) - timedelta(minutes=30)
    idle = record_of(_link(0, long_ago))  # type: ignore[arg-type]
    assert datetime.now(UTC) - idle.last_heartbeat_at <= STEP
    busy = record_of(_link(2, long_ago))  # type: ignore[arg-type]
    assert busy.last_heartbeat_at == long_ago  # a busy one shows its real last heartbeat


@pytest.mark.parametrize(
    ("value", "wanted"),
    [
        (NOW, "just now"),
        (NOW - timedelta(milliseconds=400), "just now"),
        (NOW - timedelta(seconds=45), "45 s ago"),
        (NOW - timedelta(minutes=23), "23 min ago"),
        (NOW - timedelta(hours=5), "5 h ago"),
        (NOW - timedelta(days=3), "3 d ago"),
        (NOW + timedelta(hours=2), "in 2 h"),
        (NOW + timedelta(seconds=30), "in 30 s"),
    ],
)
def test_times_read_relative_to_now(value: datetime, wanted: str) -> None:
    assert relative(value, NOW) == wanted


@pytest.mark.parametrize(
    ("value", "wanted"),
    [
        (None, ""),
        ("", ""),
        (
            NOW - timedelta(minutes=3),
            '<time datetime="2026-12-02T11:57:07Z" title="2026-12-02T11:57:07Z">3 min ago</time>',
        ),
        (
            "2026-12-02T14:00:07Z",
            '<time datetime="2026-12-02T14:00:07Z" title="2026-12-02T14:00:07Z">in 2 h</time>',
        ),
    ],
)
def test_a_time_shows_its_absolute_value_on_hover(
    value: datetime | str | None, wanted: str
) -> None:
    assert str(moment(value, NOW)) == wanted


@pytest.mark.parametrize(
    ("seconds", "wanted"),
    [(0, "0 s"), (119, "119 s"), (120, "2 min"), (7200, "2 h"), (172_800, "2 d")],
)
def test_durations_use_their_largest_sensible_unit(seconds: int, wanted: str) -> None:
    assert span(seconds) == wanted


def test_an_age_is_never_negative() -> None:
    assert (age(None, NOW), age(NOW + timedelta(seconds=5), NOW)) == ("", "0 s")
    assert age(NOW - timedelta(minutes=90), NOW) == "90 min"


@pytest.mark.parametrize(
    ("extra", "wanted"),
    [
        ({}, (0, 0, None, None)),  # a server from before the ready/scheduled split
        (
            {
                "ready": 2,
                "scheduled": 5,
                "oldest_ready_at": "2026-12-02T11:58:37Z",
                "oldest_ready_age_ms": 90_000,
            },
            (2, 5, datetime(2026, 12, 2, 11, 58, 37, tzinfo=UTC), 90_000),
        ),
    ],
)
def test_the_client_reads_the_backlog_of_a_queue(
    extra: dict[str, object], wanted: tuple[object, ...]
) -> None:
    from agentcall.orbit.sdk.client.inspection import QueueInfo, WorkerInfo

    base = {"id": Q, "name": "main", "counts": {"WAITING": 7}}
    found = QueueInfo.from_json({**base, **extra})
    assert (
        found.ready,
        found.scheduled,
        found.oldest_ready_at,
        found.oldest_ready_age_ms,
    ) == wanted
    worker = {
        "connection_id": "c" * 32,
        "server": "vm:1",
        "name": "w",
        "instance_id": "i" * 32,
        "queues": [Q],
        "handlers": [],
        "slots": 1,
        "in_flight": 0,
        "connected_at": "2026-12-02T11:00:00Z",
        "last_heartbeat_at": "2026-12-02T11:59:55Z",
    }
    assert WorkerInfo.from_json(worker).queue_names == ()
    assert WorkerInfo.from_json({**worker, "queue_names": ["main"]}).queue_names == ("main",)
