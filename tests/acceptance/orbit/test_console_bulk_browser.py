"""The console's bulk flow in a real browser (Debian's headless chromium through Selenium;
nothing is downloaded), on SQLite and on MariaDB, against `orbit serve` (docs/orbit/bulk.md,
"Console"): FAILED tasks found by a search are retried from "Act on all matching" through the
preview (count, sample, the filter as chips) and the confirm, and the operation's page
follows the progress by itself to SUCCEEDED while the tasks really become WAITING; a token
without the action's permission sees no button and its POST is refused 403, as is a POST
without the session's CSRF token; an empty filter is refused with a message and a hostile
business key shows as text. Screenshots go to var/artifacts/console/ (the docs' copy:
ORBIT_UPDATE_DOC_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.orbit.console.session import COOKIE
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.acceptance.chromium import headless_chromium
from tests.acceptance.orbit.test_console_browser import ARTIFACTS, ROOT, Site, shot, sign_in, until
from tests.support.console_browser import console_server
from tests.support.orbit_bulk import seed_failed
from tests.support.orbit_databases import KINDS
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.acceptance, pytest.mark.browser]
MATCHING = 30  # FAILED with CARD_DECLINED: the search's tasks
OTHERS = 5  # FAILED with another error code: outside the filter
HOSTILE_KEY = '<img src=x onerror="window.__pwned=1"><b id="pwned-key">k</b>'


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path_factory.mktemp("chromium-bulk")) as driver:
        yield driver


async def _tenant(db: Database) -> tuple[str, str, str, list[str], list[str]]:
    admin = Admin(db)
    made = await admin.init(f"bulk-{secrets.token_hex(4)}", "orders")
    reader = await admin.create_token(made.namespace_id, [Permission.READ], [made.queue_id], None)
    tenant = Tenant(db, "", made.namespace_id, made.queue_id, made.token)
    matching = await seed_failed(tenant, MATCHING, error_code="CARD_DECLINED")
    others = await seed_failed(tenant, OTHERS, error_code="TIMEOUT")
    ids = [task.id for task in matching], [task.id for task in others]
    return made.queue_id, made.token, reader.token, *ids


@pytest.fixture(scope="module", params=KINDS)
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Site, list[str], list[str]]]:
    tmp = tmp_path_factory.mktemp(f"bulk-{request.param}")
    with console_server(request.param, tmp, _tenant) as (base, made):
        queue_id, token, reader, matching, others = made
        yield Site(request.param, base, queue_id, token, reader, tmp), matching, others


def test_a_bulk_retry_goes_from_search_through_preview_and_confirm_to_done(
    browser: WebDriver, seeded: tuple[Site, list[str], list[str]]
) -> None:
    site, matching, others = seeded
    sign_in(browser, site, site.token)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}?state=FAILED&error_code=CARD_DECLINED")
    browser.find_element(By.ID, "bulk-act").click()
    until(lambda: browser.find_elements(By.ID, "bulk-choose"), 10, "the action form")
    browser.find_element(By.ID, "bulk-action-retry").click()
    browser.find_element(By.ID, "bulk-reason").send_keys("card processor fixed")
    browser.find_element(By.ID, "bulk-preview").click()
    matched = until(lambda: browser.find_elements(By.ID, "bulk-matched"), 10, "the preview")
    assert matched[0].text == str(MATCHING)
    chips = " ".join(browser.find_element(By.ID, "bulk-chips").text.split())
    assert "state: FAILED" in chips and "error code: CARD_DECLINED" in chips
    assert len(browser.find_elements(By.CSS_SELECTOR, "#bulk-sample tbody tr")) == 10
    assert "outcome" not in browser.find_element(By.ID, "bulk-preview-card").text  # a retry's
    shot(browser, site, "bulk-preview")
    browser.find_element(By.ID, "bulk-confirm").click()
    until(lambda: "/ui/bulk/" in browser.current_url, 10, "the operation's page")
    state = lambda: browser.find_element(By.ID, "bulk-state").text  # noqa: E731
    until(lambda: state() == "SUCCEEDED", 30, "the page refreshing itself to SUCCEEDED")
    assert browser.find_element(By.ID, "bulk-done").text == str(MATCHING)
    assert browser.find_element(By.ID, "bulk-matched").text == str(MATCHING)
    assert browser.find_elements(By.ID, "bulk-cancel") == []  # finished: nothing to cancel
    shot(browser, site, "bulk-done")
    assert {site.task(task_id)["state"] for task_id in matching} == {"WAITING"}
    assert {site.task(task_id)["state"] for task_id in others} == {"FAILED"}
    browser.find_element(By.ID, "nav-bulk").click()
    rows = until(
        lambda: browser.find_elements(By.CSS_SELECTOR, "#bulk-operations tbody tr"), 10, "list"
    )
    assert any("retry" in row.text and f"{MATCHING} done" in row.text for row in rows)
    if site.kind == "sqlite" and os.environ.get("ORBIT_UPDATE_DOC_SCREENSHOTS") == "1":
        docs = ROOT / "docs" / "orbit" / "img"
        shutil.copyfile(ARTIFACTS / "sqlite-bulk-preview.png", docs / "console-bulk-preview.png")
        shutil.copyfile(ARTIFACTS / "sqlite-bulk-done.png", docs / "console-bulk-done.png")


def test_an_empty_filter_is_refused_and_a_hostile_key_shows_as_text(
    browser: WebDriver, seeded: tuple[Site, list[str], list[str]]
) -> None:
    site, _, _ = seeded
    sign_in(browser, site, site.token)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}/bulk")
    assert "Narrow the search first" in browser.find_element(By.TAG_NAME, "main").text
    browser.get(f"{site.base}/ui/queues/{site.queue_id}")
    assert browser.find_elements(By.ID, "bulk-act") == []  # no filter: no bulk button
    browser.find_element(By.ID, "search-key").send_keys(HOSTILE_KEY)
    browser.find_element(By.ID, "search-go").click()
    until(lambda: browser.find_elements(By.ID, "bulk-act"), 10, "the filtered search")
    browser.find_element(By.ID, "bulk-act").click()
    chips = until(lambda: browser.find_elements(By.ID, "bulk-chips"), 10, "the action form")
    assert HOSTILE_KEY in " ".join(chips[0].text.split())
    assert browser.find_elements(By.CSS_SELECTOR, "#pwned-key, main img") == []
    assert browser.execute_script("return window.__pwned;") is None


def test_a_read_only_token_sees_no_bulk_button_and_its_post_is_refused(
    browser: WebDriver, seeded: tuple[Site, list[str], list[str]]
) -> None:
    site, _, others = seeded
    sign_in(browser, site, site.read_only)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}?state=FAILED&error_code=TIMEOUT")
    until(lambda: browser.find_elements(By.ID, "chips"), 10, "the filtered search")
    assert browser.find_elements(By.ID, "bulk-act") == []
    answer = _post_retry(browser, site, with_csrf=True)
    assert answer.status_code == 403 and "tasks:review" in answer.text
    assert {site.task(task_id)["state"] for task_id in others} == {"FAILED"}


def test_a_bulk_post_without_the_csrf_token_is_refused(
    browser: WebDriver, seeded: tuple[Site, list[str], list[str]]
) -> None:
    site, _, others = seeded
    sign_in(browser, site, site.token)
    browser.get(f"{site.base}/ui/bulk")
    answer = _post_retry(browser, site, with_csrf=False)
    assert answer.status_code == 403 and "CSRF" in answer.text
    assert {site.task(task_id)["state"] for task_id in others} == {"FAILED"}


def _post_retry(browser: WebDriver, site: Site, *, with_csrf: bool) -> httpx.Response:
    """The confirm form's POST for a retry of the TIMEOUT tasks, sent with the browser's
    session cookie (and its CSRF token when `with_csrf`)."""
    cookie = browser.get_cookie(COOKIE)
    assert cookie is not None
    form = {
        "key": f"console-{secrets.token_hex(8)}",
        "state": "FAILED",
        "error_code": "TIMEOUT",
        "action": "retry",
        "reason": "again",
    }
    if with_csrf:
        field = browser.find_element(By.CSS_SELECTOR, "#signout").find_element(By.XPATH, "..")
        form["csrf"] = field.find_element(By.NAME, "csrf").get_attribute("value") or ""
    with httpx.Client(base_url=site.base, timeout=10, cookies={COOKIE: cookie["value"]}) as http:
        return http.post(f"/ui/queues/{site.queue_id}/bulk", data=form)
