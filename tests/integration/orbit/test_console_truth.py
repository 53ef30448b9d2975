"""The inspection API and the console tell the truth, over HTTP on both databases
(docs/orbit/console.md): a queue's backlog age counts from when its oldest *ready* task became
available, never from the creation of a task scheduled for later, and scheduled tasks are
counted apart; an idle worker's last heartbeat keeps moving; queues are named in the queue and
worker views; an attempt shows the whole error text its worker sent; no arrow points at
nothing; times read relative to now with the absolute time on hover."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from markupsafe import escape

from agentcall.orbit.domain.times import parse_time
from agentcall.orbit.domain.tokens import Permission
from tests.integration.orbit.wire import dumps, ok
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import RawWorker, in_seconds, submit, wait_state
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration]
TRACEBACK = (
    "ValueError: the converter refused page 3\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/app/convert.py", line 41, in run\n'
    "    pages = render(document)\n"
    "ValueError: the converter refused page 3 <of 7>"
)


@pytest.fixture
async def browser(server_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as client:
        yield client


async def _sign_in(browser: httpx.AsyncClient, token: str) -> None:
    page = await browser.get("/ui/signin")
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
    assert found is not None, page.text
    answer = await browser.post("/ui/signin", data={"token": token, "csrf": found.group(1)})
    assert answer.status_code == 303, answer.text


async def _queue_when(
    http: httpx.AsyncClient, token: str, queue_id: str, check: Any
) -> dict[str, Any]:
    """The queue's listing once `check` holds (the counts are cached for a few seconds)."""
    found: dict[str, Any] = {}

    async def holds() -> bool:
        answer = await http.get("/v1/queues", headers={"Authorization": f"Bearer {token}"})
        found.clear()
        found.update(next(q for q in ok(answer)["items"] if q["id"] == queue_id))
        return bool(check(found))

    await wait_until(holds, 15, f"queue {queue_id} to show {check}", step=0.2)
    return found


async def _submit_at(http: httpx.AsyncClient, tenant: Tenant, key: str, **body: Any) -> Any:
    answer = await http.post(
        "/v1/tasks", content=dumps(tenant.body(**body)), headers=tenant.headers(key=key)
    )
    return ok(answer, 201)["task"]


async def test_backlog_age_counts_ready_tasks_only_and_scheduled_ones_apart(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A task scheduled 2 h ahead, submitted first, is not backlog: the oldest ready age is
    the ready task's, and the scheduled one is counted apart (API and console)."""
    later = await _submit_at(http, tenant, "later", available_at=in_seconds(7200))
    only_later = await _queue_when(http, tenant.token, tenant.queue_id, lambda q: q["scheduled"])
    assert (only_later["ready"], only_later["scheduled"]) == (0, 1)
    assert "oldest_ready_at" not in only_later and "oldest_ready_age_ms" not in only_later
    assert only_later["oldest_waiting_at"] == later["created_at"]  # created, not ready
    await asyncio.sleep(1.1)  # the ready task is created strictly after the scheduled one
    ready = await _submit_at(http, tenant, "ready")
    queue = await _queue_when(http, tenant.token, tenant.queue_id, lambda q: q["ready"])
    assert queue["counts"]["WAITING"] == 2 and (queue["ready"], queue["scheduled"]) == (1, 1)
    assert parse_time(queue["oldest_ready_at"], "t") == parse_time(ready["available_at"], "t")
    age_of_scheduled = (time.time() - parse_time(later["created_at"], "t").timestamp()) * 1000
    assert 0 <= queue["oldest_ready_age_ms"] < age_of_scheduled

    await _sign_in(browser, tenant.token)
    page = (await browser.get("/ui")).text
    assert _cell(page, f"ready-{tenant.queue_id}") == "1"
    assert _cell(page, f"scheduled-{tenant.queue_id}") == "1"
    assert re.fullmatch(r"\d+ s", _cell(page, f"oldest-ready-{tenant.queue_id}"))
    queue_page = (await browser.get(f"/ui/queues/{tenant.queue_id}")).text
    assert _cell(queue_page, "ready") == "1" and _cell(queue_page, "scheduled") == "1"


async def test_a_queue_with_only_scheduled_tasks_shows_none_ready(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    for number in range(3):
        await _submit_at(http, tenant, f"s-{number}", available_at=in_seconds(3600 + number))
    await _queue_when(http, tenant.token, tenant.queue_id, lambda q: q["scheduled"] == 3)
    await _sign_in(browser, tenant.token)
    page = (await browser.get("/ui")).text
    assert _cell(page, f"scheduled-{tenant.queue_id}") == "3"
    assert _cell(page, f"ready-{tenant.queue_id}") == "0"
    assert _cell(page, f"oldest-ready-{tenant.queue_id}") == "none ready"


async def test_an_idle_worker_s_heartbeat_moves_and_its_queues_are_named(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    """A connected worker that holds no attempt sends no lease heartbeat; it must not look
    dead: its last heartbeat moves past its connection time while it stays idle."""
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        listed: dict[str, Any] = {}

        async def moved() -> bool:
            answer = await http.get("/v1/workers", headers=tenant.headers())
            items = ok(answer)["items"]
            listed.clear()
            listed.update(items[0] if items else {})
            if not listed:
                return False
            beat = parse_time(listed["last_heartbeat_at"], "t")
            return beat - parse_time(listed["connected_at"], "t") >= timedelta(seconds=1)

        await wait_until(moved, 15, "the idle worker's heartbeat to move", step=0.5)
        assert listed["in_flight"] == 0
        assert listed["queues"] == [tenant.queue_id] and listed["queue_names"] == ["main"]
        await _sign_in(browser, tenant.token)
        page = (await browser.get("/ui")).text
        workers = page[page.index('id="workers"') :]
        assert f'<a href="/ui/queues/{tenant.queue_id}">main</a>' in workers
        heartbeat = re.search(r'<td class="heartbeat"><time datetime="([^"]+)" title="\1">', page)
        assert heartbeat is not None, workers
        assert re.search(r'<td class="heartbeat"><time[^>]*>(\d+ s ago|just now)</time>', page)
    finally:
        await raw.close()


async def test_an_attempt_shows_the_whole_error_text_and_no_empty_arrow(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The traceback a worker sent is shown whole, line by line and escaped, on the attempt
    and on the task; a running attempt has no "→ task" with nothing after it; the task's
    queue is named; its times are relative with the absolute time on hover."""
    raw, _ = await RawWorker.connect(tenant.base_url, tenant.token, [tenant.queue_id])
    try:
        failing = await submit(http, tenant)
        lease = await raw.next("lease")
        attempt = {
            "attempt_id": lease["attempt"]["id"],
            "lease_token": lease["attempt"]["lease_token"],
        }
        assert (await raw.request({"type": "started", **attempt}))["ok"]
        error = {"code": "handler_exception", "message": TRACEBACK, "retryable": False}
        answer = await raw.request(
            {"type": "result", **attempt, "outcome": "failed", "error": error}
        )
        assert answer["ok"], answer
        await wait_state(http, tenant, failing, {"FAILED"})
        running = await submit(http, tenant)
        second = await raw.next("lease")
        ref = {
            "attempt_id": second["attempt"]["id"],
            "lease_token": second["attempt"]["lease_token"],
        }
        assert (await raw.request({"type": "started", **ref}))["ok"]
        await wait_state(http, tenant, running, {"RUNNING"})

        await _sign_in(browser, tenant.token)
        failed_page = (await browser.get(f"/ui/tasks/{failing}")).text
        attempts = _section(failed_page, 'id="attempts"')
        assert f'<pre class="error-text">{escape(TRACEBACK)}</pre>' in attempts
        assert "→ task FAILED" in attempts
        assert escape(TRACEBACK) in _section(failed_page, 'id="error"')
        fields = _section(failed_page, 'id="fields"')
        assert f'<a id="task-queue" href="/ui/queues/{tenant.queue_id}">main</a>' in fields
        created = re.search(
            r"<th>Created</th><td><time datetime=\"([^\"]+)\" title=\"\1\">", fields
        )
        assert created is not None and isinstance(parse_time(created.group(1), "t"), datetime)
        running_page = (await browser.get(f"/ui/tasks/{running}")).text
        running_attempts = _section(running_page, 'id="attempts"')
        assert "RUNNING" in running_attempts and "→" not in running_attempts
        events = _section(running_page, 'id="events"')
        assert not re.search(r"<td>\s*→", events) and not re.search(r"→\s*</td>", events)
    finally:
        await raw.close()


async def test_scoped_tokens_see_only_their_queues_names_in_the_worker_view(
    http: httpx.AsyncClient, tenant: Tenant
) -> None:
    """O-API-1: a token scoped to one queue sees a worker's other queues neither by id nor
    by name."""
    other = await tenant.queue("other")
    _, both = await tenant.token_for(list(Permission), [tenant.queue_id, other])
    raw, _ = await RawWorker.connect(tenant.base_url, both, [other, tenant.queue_id])
    try:
        _, scoped = await tenant.token_for([Permission.READ], [other])

        async def listed() -> bool:
            items = ok(await http.get("/v1/workers", headers=tenant.headers(scoped)))["items"]
            return [(w["queues"], w["queue_names"]) for w in items] == [([other], ["other"])]

        await wait_until(listed, 10, "the worker listed with its one visible queue named")
    finally:
        await raw.close()


def _cell(page: str, element_id: str) -> str:
    """The text of the element with this id (tags stripped)."""
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</(td|b)>', page, re.S)
    assert found is not None, f"no element {element_id}"
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def _section(page: str, marker: str) -> str:
    start = page.index(marker)
    end = page.find("</section>", start)
    return page[start : end if end != -1 else len(page)]
