"""Task discovery v0.3 over real HTTP: > 600 events with re-appearing tasks, tombstones and
concurrent updates, read in pages (D-DISC-1..3, D-DISC-8, D-DISC-9)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from aio_pika.abc import AbstractRobustConnection

from agentcall.mocksaas.contracts import Contracts, find_contracts_dir
from tests.integration.mocksaas.amqp_helpers import publish_result
from tests.integration.mocksaas.harness import Dispatcher, stop_applied
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq]
CONTRACTS = Contracts(find_contracts_dir())


def read_all(
    d: Dispatcher, after: str, size: int, mutate: Any = None
) -> tuple[dict[str, dict[str, Any]], str, list[int]]:
    """Page until the empty page, checking every page; ``mutate(n)`` runs between pages."""
    seen: dict[str, dict[str, Any]] = {}
    sizes: list[int] = []
    while True:
        r = d.page(after)
        assert r.status_code == 200, r.text
        page = r.json()
        assert CONTRACTS.violations("task-discovery.page", page) == []
        ids = [t["task_id"] for t in page["tasks"]]
        if not ids:
            assert page["next_cursor"] == after  # D-DISC-3 caught up
            return seen, after, sizes
        assert len(ids) <= size and len(ids) == len(set(ids))
        assert int(page["next_cursor"]) > int(after)  # strictly advancing
        for item in page["tasks"]:
            prev = seen.get(item["task_id"])
            assert prev is None or item["task_revision"] > prev["task_revision"]
            seen[item["task_id"]] = item
        sizes.append(len(ids))
        after = page["next_cursor"]
        if mutate is not None:
            mutate(len(sizes))


def check_page_order(d: Dispatcher, size: int) -> None:
    """Items ascend by event id and next_cursor is the last item's event (via the log)."""
    log = d.admin("GET", "/events", params={"limit": 100000})["events"]
    event_of = {(e["task_id"], e["task_revision"]): e["event_id"] for e in log}
    after = "0"
    while True:
        page = d.page(after).json()
        if not page["tasks"]:
            return
        events = [event_of[(t["task_id"], t["task_revision"])] for t in page["tasks"]]
        assert events == sorted(events) and all(e > int(after) for e in events)
        assert page["next_cursor"] == str(events[-1])
        after = page["next_cursor"]


async def test_d_disc_3_paging_over_600_events(
    dispatcher: Dispatcher, amqp: AbstractRobustConnection
) -> None:
    rng = random.Random(7)
    d = dispatcher
    d.admin("PATCH", "", {"discovery_page_size": 50})
    tasks = [d.put_task(f"pg-{i:03d}-{d.id[:8]}")["task_id"] for i in range(40)]
    for n in range(560):  # re-appearing tasks: config updates bump revisions
        d.put_task(rng.choice(tasks), max_concurrent_calls=n % 7 + 1)
    for t in tasks[:6]:
        d.set_status(t, "paused")
    for t in tasks[:3]:
        d.set_status(t, "running")
    stopped = tasks[30:38]
    for t in stopped:
        d.set_status(t, "stopped", active_call_policy="hangup")
    for t in stopped[:5]:  # tombstones after retirement
        await publish_result(amqp, d.id, stop_applied(d, t))
    wait_for(
        lambda: all(d.admin("GET", f"/tasks/{t}")["status"] == "removed" for t in stopped[:5]),
        what="removed tombstones",
    )
    head = d.admin("GET", "/events/head")["head"]
    assert head > 600

    def concurrent_updates(pages_read: int) -> None:
        if pages_read in (1, 2):  # cross-page updates: these tasks re-appear later
            for t in tasks[:10]:
                d.put_task(t, max_concurrent_calls=9)

    seen, cursor, sizes = read_all(d, "0", 50, concurrent_updates)
    assert len(sizes) >= 2 and max(sizes) <= 50
    final = {t["task_id"]: t for t in d.admin("GET", "/tasks")["tasks"]}
    assert {k: (v["status"], v["task_revision"]) for k, v in seen.items()} == {
        k: (v["status"], v["task_revision"]) for k, v in final.items()
    }
    assert [seen[t]["status"] for t in stopped] == ["removed"] * 5 + ["stopped"] * 3
    assert int(cursor) == d.admin("GET", "/events/head")["head"]
    check_page_order(d, 50)

    d.admin("PATCH", "", {"discovery_page_size": 256})
    seen256, cursor256, sizes256 = read_all(d, "0", 256)
    assert seen256 == {
        k: {kk: v[kk] for kk in ("task_id", "tenant_id", "tenant_key", "status", "task_revision")}
        for k, v in final.items()
    }
    assert max(sizes256) <= 256 and cursor256 == cursor


def test_d_disc_3_empty_log_and_empty_page_at_head(dispatcher: Dispatcher) -> None:
    first = dispatcher.page("0").json()
    assert first["tasks"] == [] and first["next_cursor"] == "0"
    dispatcher.put_task()
    page = dispatcher.page("0").json()
    assert len(page["tasks"]) == 1 and page["next_cursor"] == "1"
    again = dispatcher.page("1").json()
    assert again == {**page, "tasks": [], "next_cursor": "1"}


@pytest.mark.parametrize("after", ["007", "-1", "abc", str(2**64), "", "1.5", "%20", "00"])
def test_d_disc_9_invalid_cursor(dispatcher: Dispatcher, after: str) -> None:
    dispatcher.put_task()
    r = dispatcher.page(after)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_cursor"
    assert CONTRACTS.violations("task-discovery.error", r.json()) == []


def test_d_disc_9_cursor_beyond_head_missing_or_repeated(dispatcher: Dispatcher) -> None:
    dispatcher.put_task()
    dispatcher.put_task()
    assert dispatcher.page("2").status_code == 200
    for params in ({"after": "3"}, {}, [("after", "0"), ("after", "1")]):
        r = dispatcher.get("/tasks", params=params)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_cursor", params


def test_d_disc_1_cursor_is_per_dispatcher(server: Any, dispatcher: Dispatcher) -> None:
    other = server.new_dispatcher()
    try:
        for _ in range(3):
            other.put_task()
        assert dispatcher.page("3").status_code == 400  # another D's head does not count
        assert other.page("3").json()["tasks"] == []
    finally:
        other.delete()
