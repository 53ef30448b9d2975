"""The Orbit console in a real browser at a desktop size (1440x900) and a phone size (390x844),
on SQLite, against `orbit serve` with a real worker (examples/orbit_workers.py): the overview
tells ready from scheduled tasks and ages the ready backlog only, names the worker's queue and
shows its heartbeat relative to now with the UTC time on hover; a crashed attempt shows the
traceback its worker sent; a running attempt has no arrow pointing at nothing; no page is
wider than the window (wide tables scroll inside their card). Screenshots of each page at
both sizes go to var/artifacts/console/ (layout-<page>-<size>.png; a task page's attempts
also scrolled into view: layout-<page>-attempts-<size>.png)."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.acceptance.chromium import headless_chromium
from tests.support.orbit_databases import fresh_url
from tests.support.orbit_server import execution_server
from tests.support.orbit_workers import WorkerProcess, in_seconds
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "var" / "artifacts" / "console"
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}


@dataclass
class Scene:
    base: str
    queue_id: str
    token: str
    crashed: str  # a FAILED task whose handler raised
    running: str  # a task its worker is running
    scheduled: str  # a task available only in 2 h


def _post(http: httpx.Client, queue_id: str, **fields: Any) -> str:
    body = {
        "queue_id": queue_id,
        "handler": "demo.work",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {},
        **fields,
    }
    answer = http.post("/v1/tasks", json=body, headers={"Idempotency-Key": secrets.token_hex(8)})
    assert answer.status_code == 201, answer.text
    task_id: str = answer.json()["data"]["task"]["id"]
    return task_id


def _state(http: httpx.Client, task_id: str) -> str:
    return str(http.get(f"/v1/tasks/{task_id}").json()["data"]["state"])


async def _tenant(url: str) -> tuple[str, str]:
    db = Database.open(url, pool_size=2)
    try:
        made = await Admin(db).init(f"layout-{secrets.token_hex(4)}", "orders")
        return made.queue_id, made.token
    finally:
        await db.close()


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    tmp = tmp_path_factory.mktemp("console-layout")
    with fresh_url("sqlite", tmp, migrated=True) as url:
        queue_id, token = asyncio.run(_tenant(url))
        with (
            execution_server(url, tmp / "serve.log") as base,
            httpx.Client(
                base_url=base, timeout=30, headers={"Authorization": f"Bearer {token}"}
            ) as http,
        ):
            scheduled = _post(http, queue_id, available_at=in_seconds(7200))
            crashed = _post(
                http, queue_id, payload={"outcome": "crash"}, recovery_safety="RECONCILE_ONLY"
            )
            worker = WorkerProcess(
                base, token, [queue_id], tmp / "worker.log", concurrency=1, name="layout-worker"
            )
            try:
                wait_for(lambda: _state(http, crashed) == "FAILED", 20, "the crash")
                running = _post(
                    http,
                    queue_id,
                    payload={"sleep_ms": 600_000},
                    retry={"attempt_timeout_ms": 900_000},
                )
                wait_for(lambda: _state(http, running) == "RUNNING", 20, "the run")
                for _ in range(2):  # ready, waiting behind the busy worker
                    _post(http, queue_id)
                yield Scene(base, queue_id, token, crashed, running, scheduled)
            finally:
                worker.close()


@pytest.fixture(scope="module", params=sorted(SIZES))
def browser(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, scene: Scene
) -> Iterator[tuple[str, WebDriver]]:
    width, height = SIZES[request.param]
    profile = tmp_path_factory.mktemp(f"chromium-{request.param}")
    with headless_chromium(profile, f"{width},{height}") as driver:
        driver.set_window_size(width, height)
        driver.get(scene.base + "/ui/signin")
        driver.find_element(By.ID, "token").send_keys(scene.token)
        driver.find_element(By.CSS_SELECTOR, "#signin button").click()
        wait_for(lambda: driver.find_elements(By.ID, "queues"), 10, "the overview")
        yield request.param, driver


def _shot(driver: WebDriver, size: str, page: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"layout-{page}-{size}.png"))


def _fits(driver: WebDriver) -> None:
    """The page is no wider than the window: whatever is wide scrolls inside its card."""
    page = driver.execute_script("return document.documentElement.scrollWidth")
    window = driver.execute_script("return window.innerWidth")
    wide = driver.execute_script(
        "return Array.from(document.querySelectorAll('body *'))"
        ".filter(function (e) { return e.getBoundingClientRect().right > window.innerWidth"
        " && !e.closest('.scroll'); }).slice(0, 5)"
        ".map(function (e) { return e.tagName + '.' + e.className + '#' + e.id; })"
    )
    assert page <= window, f"the page is {page} px wide in a {window} px window: {wide}"


def _text(driver: WebDriver, element_id: str) -> str:
    """The element's text, read in one script (the live part may be replaced meanwhile)."""
    script = "var e = document.getElementById(arguments[0]); return e ? e.innerText : ''"
    return str(driver.execute_script(script, element_id)).strip()


def _all(driver: WebDriver, selector: str, what: str = "innerText") -> list[str]:
    script = (
        "var what = arguments[1]; return Array.from(document.querySelectorAll(arguments[0]))"
        ".map(function (e) { return what === 'innerText' ? e.innerText"
        " : (e.getAttribute(what) || ''); })"
    )
    return [str(v) for v in driver.execute_script(script, selector, what)]


def test_the_overview_tells_ready_from_scheduled_and_names_the_worker_s_queue(
    browser: tuple[str, WebDriver], scene: Scene
) -> None:
    size, driver = browser
    driver.get(scene.base + "/ui")
    q = scene.queue_id
    wait_for(lambda: _text(driver, f"ready-{q}") == "2", 15, "two ready tasks listed")
    assert _text(driver, f"scheduled-{q}") == "1"
    assert _text(driver, f"count-{q}-WAITING") == "3"
    oldest = _text(driver, f"oldest-ready-{q}")
    assert re.fullmatch(r"\d+ s", oldest), oldest  # seconds, not the scheduled task's age
    since = _all(driver, f"#oldest-ready-{q} span", "title")
    assert len(since) == 1 and re.fullmatch(r"available since \d{4}-\d\d-\d\dT[0-9:.]+Z", since[0])
    workers = _text(driver, "workers")
    assert "orders" in workers and "layout-worker" in workers
    beat = _all(driver, "#workers td.heartbeat time")
    title = _all(driver, "#workers td.heartbeat time", "title")
    assert len(beat) == 1 and re.fullmatch(r"\d+ s ago|just now", beat[0]), beat
    assert title == _all(driver, "#workers td.heartbeat time", "datetime")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", title[0]), title
    _fits(driver)
    _shot(driver, size, "overview")


def test_the_queue_page_shows_its_backlog(browser: tuple[str, WebDriver], scene: Scene) -> None:
    size, driver = browser
    driver.get(f"{scene.base}/ui/queues/{scene.queue_id}")
    assert _text(driver, "ready") == "2" and _text(driver, "scheduled") == "1"
    assert "orders" in _all(driver, "h1")[0]
    created = _all(driver, "#tasks time", "title")
    assert len(created) == 10 and all(created), created  # created and updated of 5 tasks
    _fits(driver)
    _shot(driver, size, "queue")


def test_a_crashed_attempt_shows_its_traceback(
    browser: tuple[str, WebDriver], scene: Scene
) -> None:
    size, driver = browser
    driver.get(f"{scene.base}/ui/tasks/{scene.crashed}")
    text = _all(driver, "#attempts pre.error-text")[0]
    assert text.startswith("RuntimeError: unexpected bug in the handler\nTraceback"), text
    assert "in _script" in text and text.endswith("RuntimeError: unexpected bug in the handler")
    assert "→ task FAILED" in _text(driver, "attempts")
    assert _text(driver, "task-queue") == "orders"
    _fits(driver)
    _shot(driver, size, "task-failed")
    driver.execute_script("document.getElementById('attempts').scrollIntoView()")
    _shot(driver, size, "task-failed-attempts")


def test_a_running_attempt_has_no_empty_arrow(browser: tuple[str, WebDriver], scene: Scene) -> None:
    size, driver = browser
    driver.get(f"{scene.base}/ui/tasks/{scene.running}")
    attempts = _text(driver, "attempts")
    assert "RUNNING" in attempts and "→" not in attempts
    moves = _all(driver, "#events td:nth-child(3)")
    assert moves and not [m for m in moves if m.strip().startswith("→") or m.strip().endswith("→")]
    _fits(driver)
    _shot(driver, size, "task-running")
    driver.execute_script("document.getElementById('attempts').scrollIntoView()")
    _shot(driver, size, "task-running-attempts")
