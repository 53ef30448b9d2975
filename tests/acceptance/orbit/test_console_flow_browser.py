"""A queue's flow control in the console, in a real browser (Debian's headless chromium through
Selenium), on SQLite and MariaDB, against `orbit serve` with a real worker
(docs/orbit/flow-control.md): an admin changes the settings from the queue's page (a form at
the settings' revision), the page shows them, the running tasks per concurrency key and the
tasks held back by reason, and a held task's page says why it waits; a form at a stale
revision saves nothing and shows the stored settings; a token without queues:admin gets no
form and its POST is refused. Screenshots go to var/artifacts/console/."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.orbit.console.session import csrf_token
from tests.acceptance.orbit import test_console_browser as console
from tests.acceptance.orbit.test_console_browser import Site, shot, sign_in, until
from tests.support.orbit_workers import WorkerProcess

pytestmark = [pytest.mark.acceptance, pytest.mark.browser]
browser = console.browser  # the fixtures of the console's browser suite: chromium, a server
site = console.site


def queue_api(site: Site) -> dict[str, Any]:
    with site.api() as http:
        data: dict[str, Any] = http.get(f"/v1/queues/{site.queue_id}").json()["data"]
    return data


def text(driver: WebDriver, element_id: str) -> str:
    try:
        return str(driver.find_element(By.ID, element_id).text)
    except Exception:  # noqa: BLE001 - replaced by a refresh between find and read
        return ""


def fill(driver: WebDriver, values: dict[str, str], checks: tuple[str, ...]) -> None:
    form = driver.find_element(By.ID, "flow-form")
    for name, value in values.items():
        field = form.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    for name in checks:
        box = form.find_element(By.NAME, name)
        if not box.is_selected():
            box.click()


def test_an_admin_changes_flow_settings_and_sees_what_they_hold_back(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site, site.token)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}")
    assert "unlimited" in text(browser, "flow-max-running")
    assert text(browser, "flow-fairness").startswith("off")
    browser.find_element(By.ID, "flow-change").click()
    until(lambda: browser.find_elements(By.ID, "flow-form"), 10, "the flow settings form")
    before = queue_api(site)["flow_revision"]
    assert text(browser, "flow-revision") == before
    values = {"max_running_per_key": "1", "rate_per_second": "50", "rate_burst": "100"}
    fill(browser, {**values, "key_limits": "bank-* = 2"}, ("fairness",))
    shot(browser, site, "queue-flow-form")
    browser.find_element(By.ID, "flow-save").click()
    until(lambda: text(browser, "flow-max-running") == "at most 1", 10, "the settings saved")
    assert "bank-* ≤ 2" in text(browser, "flow-key-limits")
    assert text(browser, "flow-rate") == "50/s, burst 100"
    stored = queue_api(site)
    assert int(stored["flow_revision"]) == int(before) + 1
    assert stored["flow"] == {
        "fairness": True,
        "max_running_per_key": 1,
        "key_limits": [{"pattern": "bank-*", "max_running": 2}],
        "rate": {"per_second": 50, "burst": 100, "per_key": False},
    }
    held = [site.submit(payload={"sleep_ms": 30000}, concurrency_key="k") for _ in range(2)]
    worker = WorkerProcess(
        site.base, site.token, [site.queue_id], site.tmp / "wf.log", 2, name="flow-w"
    )
    try:
        asyncio.run(worker.connected())
        until(
            lambda: text(browser, "held-concurrency") == "1",
            20,
            "one task held by its key's limit on the live queue page",
        )
        assert "k\n1\n1" in text(browser, "flow-running").replace(" ", "\n")
        shot(browser, site, "queue-flow")
        waiting = [t for t in held if site.task(t)["state"] == "WAITING"]
        assert len(waiting) == 1
        browser.get(f"{site.base}/ui/tasks/{waiting[0]}")
        assert text(browser, "waiting-reason") == "concurrency_limit"
        assert "concurrency key k" in text(browser, "task-flow")
        shot(browser, site, "task-waiting-reason")
    finally:
        worker.close()


def test_a_stale_form_saves_nothing_and_shows_the_stored_settings(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site, site.token)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}/flow")
    shown = text(browser, "flow-revision")
    with site.api() as http:  # someone else changes them meanwhile
        body = {"expected_revision": shown, "flow": {"max_running_per_key": 7}}
        assert http.patch(f"/v1/queues/{site.queue_id}", json=body).status_code == 200
    fill(browser, {"max_running_per_key": "3"}, ())
    browser.find_element(By.ID, "flow-save").click()
    until(lambda: browser.find_elements(By.ID, "flow-error"), 10, "the refusal")
    assert "revision" in text(browser, "flow-error")
    assert text(browser, "flow-revision") == str(int(shown) + 1)
    field = browser.find_element(By.NAME, "max_running_per_key")
    assert field.get_attribute("value") == "7"
    assert queue_api(site)["flow"]["max_running_per_key"] == 7
    shot(browser, site, "queue-flow-stale")


def test_a_token_without_queue_admin_gets_no_form_and_its_post_is_refused(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site, site.read_only)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}")
    assert browser.find_elements(By.ID, "flow") != []
    assert browser.find_elements(By.ID, "flow-change") == []
    browser.get(f"{site.base}/ui/queues/{site.queue_id}/flow")
    assert browser.find_elements(By.ID, "flow-form") == []
    before = queue_api(site)
    cookie = browser.get_cookie("orbit_session")
    assert cookie is not None
    session = str(cookie["value"])
    form = {"csrf": csrf_token(session), "revision": before["flow_revision"], "fairness": "on"}
    with httpx.Client(base_url=site.base, timeout=10) as http:
        http.cookies.set("orbit_session", session, path="/ui")
        refused = http.post(f"/ui/queues/{site.queue_id}/flow", data=form)
    assert refused.status_code == 403, refused.text
    assert queue_api(site) == before
