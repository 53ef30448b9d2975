"""The console in a real browser (Debian's headless chromium through Selenium and Debian's
chromedriver; nothing is downloaded), on SQLite and on MariaDB, against `orbit serve` with real
workers: sign in; watch a queue's counts change while a worker runs its tasks (the page is not
reloaded: its live part refreshes); a worker SIGKILLed on a RECONCILE_ONLY task leaves it
NEEDS_REVIEW in the review inbox, where an operator resolves it and sees it SUCCEEDED; a
payload with markup is shown as text; a read-only token sees no action and its forged POST
gets 403; an action without the CSRF token is refused. Screenshots of each page go to
var/artifacts/console/."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.orbit.console.session import csrf_token
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.acceptance.chromium import headless_chromium
from tests.support import console_browser
from tests.support.console_browser import ARTIFACTS, console_server, screenshot, until
from tests.support.orbit_databases import KINDS
from tests.support.orbit_workers import WorkerProcess

pytestmark = [pytest.mark.acceptance, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Site:
    kind: str
    base: str
    queue_id: str
    token: str  # every permission
    read_only: str  # tasks:read only
    tmp: Path

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base, timeout=30, headers={"Authorization": f"Bearer {self.token}"}
        )

    def submit(self, handler: str = "demo.work", **fields: Any) -> str:
        body = {
            "queue_id": self.queue_id,
            "handler": handler,
            "handler_version": "v1",
            "payload_version": "v1",
            "payload": {},
            **fields,
        }
        with self.api() as http:
            answer = http.post(
                "/v1/tasks", json=body, headers={"Idempotency-Key": secrets.token_hex(8)}
            )
        assert answer.status_code == 201, answer.text
        task_id: str = answer.json()["data"]["task"]["id"]
        return task_id

    def task(self, task_id: str) -> dict[str, Any]:
        with self.api() as http:
            data: dict[str, Any] = http.get(f"/v1/tasks/{task_id}").json()["data"]
        return data


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


async def _tenant(db: Database) -> tuple[str, str, str]:
    admin = Admin(db)
    made = await admin.init(f"console-{secrets.token_hex(4)}", "orders")
    read_only = await admin.create_token(
        made.namespace_id, [Permission.READ], [made.queue_id], None
    )
    return made.queue_id, made.token, read_only.token


@pytest.fixture(scope="module", params=KINDS)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp(f"console-{request.param}")
    with console_server(request.param, tmp, _tenant) as (base, (queue_id, token, read_only)):
        yield Site(request.param, base, queue_id, token, read_only, tmp)


def shot(driver: WebDriver, site: Site, name: str) -> None:
    screenshot(driver, site.kind, name)


def signed_out(driver: WebDriver, site: Site) -> None:
    console_browser.signed_out(driver, site.base)


def sign_in(driver: WebDriver, site: Site, token: str) -> None:
    signed_out(driver, site)
    driver.get(site.base + "/ui")
    assert driver.current_url.endswith("/ui/signin")  # a page without a session sends there
    console_browser.sign_in(driver, site.base, token)


def count(driver: WebDriver, site: Site, state: str) -> int:
    try:
        return int(driver.find_element(By.ID, f"count-{site.queue_id}-{state}").text)
    except Exception:  # noqa: BLE001 - replaced by a refresh between find and read
        return -1


def test_sign_in_and_watch_a_queue_while_a_worker_runs(browser: WebDriver, site: Site) -> None:
    signed_out(browser, site)
    browser.get(site.base + "/ui")
    shot(browser, site, "signin")
    browser.find_element(By.ID, "token").send_keys("orb_not-a-token")
    browser.find_element(By.CSS_SELECTOR, "#signin button").click()
    # the click submits a form: the answer is a new page, found once it has loaded
    refusal = until(lambda: browser.find_elements(By.ID, "signin-error"), 10, "the refusal")
    assert "token" in refusal[0].text.lower()
    sign_in(browser, site, site.token)
    cookie = browser.get_cookie("orbit_session")
    assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/ui" and site.token not in str(cookie["value"])
    ids = [site.submit(payload={"sleep_ms": 700}) for _ in range(10)]
    until(lambda: count(browser, site, "WAITING") == 10, 15, "10 WAITING on the overview")
    browser.execute_script("window.__notReloaded = true;")
    worker = WorkerProcess(
        site.base,
        site.token,
        [site.queue_id],
        site.tmp / "w1.log",
        concurrency=2,
        name="console-w1",
    )
    seen: set[int] = set()
    try:

        def finished() -> bool:
            seen.add(count(browser, site, "SUCCEEDED"))
            return count(browser, site, "SUCCEEDED") == 10

        until(finished, 40, f"10 SUCCEEDED on the overview (saw {sorted(seen)})")
        shot(browser, site, "overview")
        assert browser.execute_script("return window.__notReloaded === true;")  # live refresh
        assert any(0 < value < 10 for value in seen), seen  # the counts moved while it ran
        assert "console-w1" in browser.find_element(By.ID, "workers").text
        bars = browser.find_elements(By.CSS_SELECTOR, "#throughput rect")
        assert bars, "the throughput chart shows the finished tasks"
    finally:
        worker.close()
    browser.get(f"{site.base}/ui/queues/{site.queue_id}?state=SUCCEEDED")
    rows = browser.find_elements(By.CSS_SELECTOR, "#tasks tbody tr a.mono")
    assert sorted(row.text for row in rows) == sorted(ids)
    shot(browser, site, "queue")


def test_review_a_task_left_by_a_killed_worker(browser: WebDriver, site: Site) -> None:
    sign_in(browser, site, site.token)
    worker = WorkerProcess(
        site.base,
        site.token,
        [site.queue_id],
        site.tmp / "w2.log",
        concurrency=1,
        name="console-w2",
    )
    try:
        asyncio.run(worker.connected())
        task_id = site.submit(
            "demo.charge",
            recovery_safety="RECONCILE_ONLY",
            payload={"sleep_ms": 60000, "amount": 12},
        )
        until(lambda: site.task(task_id)["state"] == "RUNNING", 20, "the task RUNNING")
        time.sleep(0.3)  # its evidence is recorded
        worker.signal(signal.SIGKILL)
    finally:
        worker.close()
    until(lambda: site.task(task_id)["state"] == "NEEDS_REVIEW", 20, "NEEDS_REVIEW")
    browser.get(site.base + "/ui/review")
    link = browser.find_element(By.CSS_SELECTOR, f'#inbox a[href="/ui/tasks/{task_id}"]')
    shot(browser, site, "review")
    link.click()
    state = until(lambda: browser.find_elements(By.ID, "task-state"), 10, "the task's page")
    assert state[0].text == "NEEDS_REVIEW"
    assert "payment" in browser.find_element(By.ID, "attempts").text  # the attempt's evidence
    shot(browser, site, "task-needs-review")
    form = browser.find_element(By.ID, "resolve-form")
    form.find_element(By.NAME, "reason").send_keys("the bank confirms payment pay-1")
    form.find_element(By.NAME, "result").send_keys('{"reconciled": true}')
    browser.find_element(By.ID, "resolve").click()
    until(lambda: browser.find_elements(By.ID, "done"), 10, "the resolve to be done")
    assert browser.find_element(By.ID, "task-state").text == "SUCCEEDED"
    assert site.task(task_id)["state"] == "SUCCEEDED"
    assert '"reconciled"' in browser.find_element(By.ID, "result").text
    shot(browser, site, "task-resolved")


def test_markup_in_a_payload_is_shown_as_text(browser: WebDriver, site: Site) -> None:
    sign_in(browser, site, site.token)
    script = "<script>window.__pwned=1</script>"
    attribute = '"><img src=x onerror="window.__pwned=2">'
    task_id = site.submit(payload={"note": script, "attr": attribute})
    browser.get(f"{site.base}/ui/tasks/{task_id}")
    payload = browser.find_element(By.ID, "payload")
    assert script in payload.text and "<img src=x" in payload.text
    assert browser.find_elements(By.CSS_SELECTOR, "#payload *") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    assert browser.execute_script("return window.__pwned;") is None
    shot(browser, site, "task-markup")


def test_read_only_tokens_and_forged_actions_are_refused(browser: WebDriver, site: Site) -> None:
    task_id = site.submit(payload={"sleep_ms": 1})
    sign_in(browser, site, site.read_only)
    browser.get(f"{site.base}/ui/tasks/{task_id}")
    assert browser.find_element(By.ID, "task-state").text in ("WAITING", "LEASED")
    assert browser.find_elements(By.ID, "actions") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main form[method=post]") == []
    shot(browser, site, "task-read-only")
    form = {"revision": "1", "reason": "forged", "key": "forged-1"}
    cookie = browser.get_cookie("orbit_session")
    assert cookie is not None
    read_only_session = str(cookie["value"])
    with httpx.Client(base_url=site.base, timeout=10) as http:
        http.cookies.set("orbit_session", read_only_session, path="/ui")
        valid_csrf = {**form, "csrf": csrf_token(read_only_session)}
        refused = http.post(f"/ui/tasks/{task_id}/cancel", data=valid_csrf)
        assert refused.status_code == 403, refused.text  # the token lacks tasks:cancel
        http.cookies.clear()
        signin = http.get("/ui/signin").text
        signin_csrf = signin.split('name="csrf" value="')[1].split('"')[0]
        signed = http.post("/ui/signin", data={"token": site.token, "csrf": signin_csrf})
        assert signed.status_code == 303
        for forged in (form, {**form, "csrf": csrf_token(read_only_session)}):
            answer = http.post(f"/ui/tasks/{task_id}/cancel", data=forged)
            assert answer.status_code == 403 and "CSRF" in answer.text
    assert site.task(task_id)["state"] == "WAITING"  # nothing was cancelled


def test_screenshots_for_the_docs(site: Site) -> None:
    """The docs show three pages taken on SQLite (copied only when they were just taken)."""
    if site.kind != "sqlite":
        pytest.skip("the docs' screenshots are taken on SQLite")
    docs = ROOT / "docs" / "orbit" / "img"
    if os.environ.get("ORBIT_UPDATE_DOC_SCREENSHOTS") == "1":
        docs.mkdir(parents=True, exist_ok=True)
        for name in ("overview", "review", "task-needs-review"):
            shutil.copyfile(ARTIFACTS / f"sqlite-{name}.png", docs / f"console-{name}.png")
    for name in ("overview", "review", "task-needs-review"):
        assert (docs / f"console-{name}.png").exists(), name
