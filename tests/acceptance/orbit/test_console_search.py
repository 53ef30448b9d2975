"""The queue page's search in a real browser (Debian's headless chromium through Selenium), on
SQLite and on MariaDB, against `orbit serve` (docs/orbit/search.md, "Console"): the search bar
finds tasks by business key, exactly or by prefix; the filters narrow by state, handler and
version, error code and created/completed ranges, each shown as a chip that removes itself;
the URL holds the filter, so a link opened in a new session shows the same tasks; the queue
and task pages name the queue. Screenshots go to var/artifacts/console/."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit, plan_times
from agentcall.orbit.domain.task import Task, new_task
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import tasks as task_table
from agentcall.orbit.store.tasks import task_row
from tests.acceptance.chromium import headless_chromium
from tests.support import console_browser
from tests.support.console_browser import console_server, screenshot, until
from tests.support.orbit_databases import KINDS

pytestmark = [pytest.mark.acceptance, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[3]
QUEUE = "orders-eu"
HANDLERS = [("mail.send", "v1"), ("mail.send", "v2"), ("file.convert", "v1")]
STATES = [TaskState.WAITING, TaskState.FAILED, TaskState.SUCCEEDED, TaskState.NEEDS_REVIEW]
KEYS = ["order-17", "order-170", "order-2", "invoice-9"]


@dataclass
class Site:
    kind: str
    base: str
    queue_id: str
    token: str
    made: list[Task]  # newest first
    start: datetime  # the oldest task's creation


def _varied(namespace_id: str, request: Any, now: datetime, n: int) -> Task:
    created = now - timedelta(minutes=n)
    task = new_task(new_id(), namespace_id, request, plan_times(request, created), created)
    handler, version = HANDLERS[n % 3]
    state = STATES[n % 4]
    finished = state is not TaskState.WAITING
    return replace(
        task,
        handler=handler,
        handler_version=version,
        state=state,
        business_key=KEYS[n % 4],
        error_code=("CARD_DECLINED" if n % 8 == 1 else "TIMEOUT") if finished else None,
        completed_at=created + timedelta(seconds=30) if finished else None,
    )


async def _seed(db: Database) -> tuple[str, str, list[Task]]:
    """Set-up only: a queue and 48 varied tasks written through the store's row mapping."""
    made = await Admin(db).init(f"search-{secrets.token_hex(4)}", QUEUE)
    body = {
        "queue_id": made.queue_id,
        "handler": "mail.send",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {},
    }
    request = parse_submit(read_json_text(json.dumps(body)))
    async with db.write() as conn:
        now = await db.now(conn)
        tasks = [_varied(made.namespace_id, request, now, n) for n in range(48)]
        rows = [task_row(t) | {"error_code": t.error_code} for t in tasks]
        await conn.execute(task_table.insert(), rows)
    return made.queue_id, made.token, tasks


@pytest.fixture(scope="module", params=KINDS)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp(f"search-{request.param}")
    with console_server(request.param, tmp, _seed) as (base, (queue_id, token, made)):
        yield Site(request.param, base, queue_id, token, made, made[-1].created_at)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


def sign_in(driver: WebDriver, site: Site) -> None:
    console_browser.sign_in(driver, site.base, site.token)


def shown(driver: WebDriver) -> list[str]:
    """The task ids the page lists, in order."""
    links = driver.find_elements(By.CSS_SELECTOR, "#tasks tbody a.mono")
    return [link.text for link in links]


def chips(driver: WebDriver) -> dict[str, str]:
    found = driver.find_elements(By.CSS_SELECTOR, "#chips .chip")
    return {
        c.get_attribute("data-field") or "": c.find_element(By.TAG_NAME, "b").text for c in found
    }


def query(driver: WebDriver) -> dict[str, list[str]]:
    return parse_qs(urlsplit(driver.current_url).query)


def submit_search(driver: WebDriver) -> None:
    before = driver.current_url
    driver.find_element(By.ID, "search-go").click()
    until(lambda: driver.current_url != before, 10, "the search's page")


def expected(site: Site, pick: Callable[[Task], bool]) -> list[str]:
    ids = [t.id for t in site.made if pick(t)]
    assert ids, "the case selects some task"
    return ids[:25]  # the page's size


def shot(driver: WebDriver, site: Site, name: str) -> None:
    screenshot(driver, site.kind, name)


def test_the_search_bar_finds_a_business_key_exactly_or_by_prefix(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}")
    assert QUEUE in browser.find_element(By.TAG_NAME, "h1").text
    assert shown(browser) == expected(site, lambda t: True)
    browser.find_element(By.ID, "search-key").send_keys("order-17")
    submit_search(browser)
    assert shown(browser) == expected(site, lambda t: t.business_key == "order-17")
    assert chips(browser) == {"business_key": "order-17"}
    Select(browser.find_element(By.ID, "search-key-match")).select_by_value("prefix")
    submit_search(browser)
    prefixed = expected(site, lambda t: (t.business_key or "").startswith("order-17"))
    assert shown(browser) == prefixed
    assert {t.business_key for t in site.made if t.id in prefixed} == {"order-17", "order-170"}
    assert chips(browser) == {"business_key_prefix": "order-17"}
    assert query(browser)["business_key_prefix"] == ["order-17"]
    shot(browser, site, "search-prefix")


def test_filters_become_chips_each_removable_and_the_url_is_shareable(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}")
    Select(browser.find_element(By.ID, "search-state")).select_by_value("FAILED")
    browser.find_element(By.ID, "search-handler").send_keys("mail.send")
    browser.find_element(By.ID, "search-handler-version").send_keys("v2")
    browser.find_element(By.ID, "search-error-code").send_keys("TIMEOUT")
    submit_search(browser)

    def failed_v2(t: Task) -> bool:
        return (t.state, t.handler, t.handler_version, t.error_code) == (
            TaskState.FAILED,
            "mail.send",
            "v2",
            "TIMEOUT",
        )

    assert shown(browser) == expected(site, failed_v2)
    assert chips(browser) == {
        "state": "FAILED",
        "handler": "mail.send",
        "handler_version": "v2",
        "error_code": "TIMEOUT",
    }
    shot(browser, site, "search-chips")
    shared = browser.current_url

    browser.find_element(By.CSS_SELECTOR, "#chip-error_code .chip-remove").click()
    until(lambda: "error_code" not in chips(browser), 10, "the error code chip removed")
    assert shown(browser) == expected(
        site,
        lambda t: (t.state, t.handler, t.handler_version) == (TaskState.FAILED, "mail.send", "v2"),
    )
    browser.find_element(By.CSS_SELECTOR, "#chip-handler .chip-remove").click()
    until(lambda: "handler" not in chips(browser), 10, "the handler chip removed")
    assert chips(browser) == {"state": "FAILED"}, "the version went with its handler"
    assert shown(browser) == expected(site, lambda t: t.state is TaskState.FAILED)

    sign_in(browser, site)  # another session opening the shared link sees the same tasks
    browser.get(shared)
    assert shown(browser) == expected(site, failed_v2)
    assert len(chips(browser)) == 4
    browser.find_element(By.ID, "chips-clear").click()
    until(lambda: not chips(browser), 10, "every chip cleared")
    assert len(shown(browser)) == 25


def test_created_and_completed_ranges_narrow_the_list(browser: WebDriver, site: Site) -> None:
    sign_in(browser, site)
    low, high = site.made[30].created_at, site.made[10].created_at
    browser.get(f"{site.base}/ui/queues/{site.queue_id}")
    browser.find_element(By.ID, "search-created-from").send_keys(format_time(low))
    browser.find_element(By.ID, "search-created-before").send_keys(format_time(high))
    submit_search(browser)
    assert shown(browser) == expected(site, lambda t: low <= t.created_at < high)
    assert len(shown(browser)) == 20
    assert set(chips(browser)) == {"created_from", "created_before"}
    browser.find_element(By.CSS_SELECTOR, "#chip-created_before .chip-remove").click()
    until(lambda: "created_before" not in chips(browser), 10, "the created_before chip removed")
    wanted = expected(site, lambda t: t.created_at >= low)
    until(lambda: shown(browser) == wanted, 10, "the tasks created from `low` on")

    done_from = site.made[20].created_at
    browser.get(
        f"{site.base}/ui/queues/{site.queue_id}?completed_from={format_time(done_from)}"
        "&state=SUCCEEDED"
    )
    assert shown(browser) == expected(
        site,
        lambda t: (
            t.state is TaskState.SUCCEEDED
            and t.completed_at is not None
            and t.completed_at >= done_from
        ),
    )
    shot(browser, site, "search-range")


def test_a_refused_filter_names_its_field_and_the_task_page_names_the_queue(
    browser: WebDriver, site: Site
) -> None:
    sign_in(browser, site)
    browser.get(f"{site.base}/ui/queues/{site.queue_id}?handler_version=v1&error_code=E1")
    refusal = browser.find_element(By.ID, "search-refused").text
    assert refusal.startswith("handler_version: needs handler"), refusal
    assert shown(browser) == [] and not chips(browser)
    assert browser.find_element(By.ID, "search-error-code").get_attribute("value") == "E1"
    browser.get(f"{site.base}/ui/queues/{site.queue_id}?business_key=invoice-9")
    first = shown(browser)[0]
    browser.find_element(By.LINK_TEXT, first).click()
    until(lambda: browser.find_elements(By.ID, "task-queue"), 10, "the task page")
    assert browser.find_element(By.ID, "task-queue").text == QUEUE
