"""The console's schedule pages in a real browser (Debian's headless chromium through
Selenium), on SQLite and on MariaDB, against `orbit serve`: a schedule created with the SDK is
listed with its spec, zone and state; on its page an operator pauses it (with a note),
triggers it now (the firing links its task), resumes it and deletes it, each seen both in the
browser and through the API; a token with schedules:read only sees no action. Screenshots go
to var/artifacts/console/."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.orbit.domain.tokens import parse_permission
from agentcall.orbit.sdk.client import (
    Client,
    CreateScheduleRequest,
    NotFoundError,
    ScheduleSpec,
    TaskTemplate,
)
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.acceptance.chromium import headless_chromium
from tests.support import console_browser
from tests.support.console_browser import ARTIFACTS, console_server, screenshot, until
from tests.support.orbit_databases import KINDS

ROOT = Path(__file__).resolve().parents[3]
OPENAPI = ROOT / "src" / "agentcall" / "orbit" / "api" / "openapi.json"
pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.browser,
    pytest.mark.skipif(
        '"/v1/schedules"' not in OPENAPI.read_text(encoding="utf-8"),
        reason="this server has no /v1/schedules routes (OpenAPI): nothing to drive",
    ),
]


@dataclass
class Site:
    kind: str
    base: str
    queue_id: str
    token: str  # every permission
    viewer: str  # tasks:read and schedules:read

    def client(self) -> Client:
        return Client(self.base, self.token)

    def create(self, note: str) -> str:
        template = TaskTemplate(self.queue_id, "reports.build", "v1", "v1", {"report": "daily"})
        spec = ScheduleSpec.of_cron("30 2 * * *", "Europe/Berlin")
        request = CreateScheduleRequest(template, spec, overlap="skip", note=note)
        with self.client() as orbit:
            return orbit.schedules.create(f"browser-{secrets.token_hex(6)}", request).schedule.id

    def state(self, schedule_id: str) -> str:
        with self.client() as orbit:
            return orbit.schedules.get(schedule_id).state


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


async def _tenant(db: Database) -> tuple[str, str, str]:
    admin = Admin(db)
    made = await admin.init(f"schedules-{secrets.token_hex(4)}", "reports")
    reads = [parse_permission("tasks:read"), parse_permission("schedules:read")]
    viewer = await admin.create_token(made.namespace_id, reads, [made.queue_id], None)
    return made.queue_id, made.token, viewer.token


@pytest.fixture(scope="module", params=KINDS)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp(f"schedules-{request.param}")
    with console_server(request.param, tmp, _tenant) as (base, (queue_id, token, viewer)):
        yield Site(request.param, base, queue_id, token, viewer)


def shot(driver: WebDriver, site: Site, name: str) -> None:
    screenshot(driver, site.kind, name)


def sign_in(driver: WebDriver, site: Site, token: str) -> None:
    console_browser.sign_in(driver, site.base, token)


def done(driver: WebDriver, action: str) -> None:
    """The page the action led to says it was done (not the previous action's page)."""

    def said() -> bool:
        return driver.current_url.endswith(f"done={action}") and any(
            action in flash.text for flash in driver.find_elements(By.ID, "done")
        )

    until(said, 10, f"the {action} to be done")


def test_pause_trigger_resume_and_delete_a_schedule(browser: WebDriver, site: Site) -> None:
    schedule_id = site.create("nightly report")
    sign_in(browser, site, site.token)
    browser.find_element(By.ID, "nav-schedules").click()
    row = until(lambda: browser.find_elements(By.ID, f"schedule-{schedule_id}"), 10, "the list")[0]
    assert "30 2 * * *" in row.text and "Europe/Berlin" in row.text
    assert browser.find_element(By.ID, f"state-{schedule_id}").text == "active"
    shot(browser, site, "schedules")
    row.find_element(By.CSS_SELECTOR, f'a[href="/ui/schedules/{schedule_id}"]').click()
    until(lambda: browser.find_elements(By.ID, "schedule-state"), 10, "the schedule's page")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#upcoming li")) == 5

    form = browser.find_element(By.ID, "pause-form")
    form.find_element(By.NAME, "note").send_keys("paused for the migration")
    browser.find_element(By.ID, "pause").click()
    done(browser, "pause")
    assert browser.find_element(By.ID, "schedule-state").text == "paused"
    assert browser.find_element(By.ID, "schedule-note").text == "paused for the migration"
    assert site.state(schedule_id) == "paused"

    browser.find_element(By.ID, "trigger").click()
    done(browser, "trigger")
    links = browser.find_elements(By.CSS_SELECTOR, "#firings a[href^='/ui/tasks/']")
    assert len(links) == 1 and "triggered" in browser.find_element(By.ID, "firings").text
    shot(browser, site, "schedule")
    task_id = links[0].text
    with site.client() as orbit:
        assert orbit.get_task(task_id).handler == "reports.build"  # the template's task

    browser.find_element(By.ID, "resume").click()
    done(browser, "resume")
    assert browser.find_element(By.ID, "schedule-state").text == "active"
    assert site.state(schedule_id) == "active"

    browser.find_element(By.ID, "delete").click()
    done(browser, "delete")
    assert browser.current_url.split("?")[0].endswith("/ui/schedules")
    assert browser.find_elements(By.ID, f"schedule-{schedule_id}") == []
    with site.client() as orbit, pytest.raises(NotFoundError):
        orbit.schedules.get(schedule_id)
    with site.client() as orbit:
        assert orbit.get_task(task_id).id == task_id  # its tasks stay


def test_a_read_only_token_sees_schedules_but_no_action(browser: WebDriver, site: Site) -> None:
    schedule_id = site.create("read only")
    sign_in(browser, site, site.viewer)
    browser.get(f"{site.base}/ui/schedules/{schedule_id}")
    state = until(lambda: browser.find_elements(By.ID, "schedule-state"), 10, "the page")
    assert state[0].text == "active"
    assert browser.find_elements(By.ID, "actions") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main form[method=post]") == []
    shot(browser, site, "schedule-read-only")


def test_schedule_screenshot_for_the_docs(site: Site) -> None:
    """With ORBIT_UPDATE_DOC_SCREENSHOTS=1 the schedule's page taken on SQLite becomes the
    docs' image (docs/orbit/schedules.md shows it once it exists)."""
    if site.kind != "sqlite" or os.environ.get("ORBIT_UPDATE_DOC_SCREENSHOTS") != "1":
        pytest.skip("the docs' screenshot is taken on SQLite when asked for")
    image = ROOT / "docs" / "orbit" / "img" / "console-schedule.png"
    shutil.copyfile(ARTIFACTS / "sqlite-schedule.png", image)
    assert image.stat().st_size > 10_000
