"""The console's Audit log page in a real browser (Debian's headless chromium through Selenium;
nothing is downloaded), on SQLite and on MariaDB, against `orbit serve`: a cancel made on the
task page shows on the Audit page with origin `console`, the token's name and the request; a
reason and a token name full of markup and control characters show as text (no element, no
script runs, the control characters as `\\xNN`); a token without audit:read sees no nav link
and gets 403 on the page. Screenshots go to var/artifacts/console/ (the docs' copy:
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

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.acceptance.chromium import headless_chromium
from tests.acceptance.orbit.test_console_browser import ARTIFACTS, ROOT, Site, shot, sign_in, until
from tests.support.console_browser import console_server
from tests.support.orbit_databases import KINDS

pytestmark = [pytest.mark.acceptance, pytest.mark.browser]
HOSTILE_NAME = '<b id="pwned-name">ops</b>'
HOSTILE_REASON = '<img src=x onerror="window.__pwned=1">\x1b[31mred\x07'


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path_factory.mktemp("chromium-audit")) as driver:
        yield driver


async def _tenant(db: Database) -> tuple[str, str, str]:
    admin = Admin(db)
    made = await admin.init(f"audit-{secrets.token_hex(4)}", "orders")
    named = await admin.create_token(
        made.namespace_id, list(Permission), [made.queue_id], None, HOSTILE_NAME
    )
    reader = await admin.create_token(made.namespace_id, [Permission.READ], [made.queue_id], None)
    return made.queue_id, named.token, reader.token


@pytest.fixture(scope="module", params=KINDS)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp(f"audit-{request.param}")
    with console_server(request.param, tmp, _tenant) as (base, (queue_id, token, reader)):
        yield Site(request.param, base, queue_id, token, reader, tmp)


def test_a_console_cancel_and_hostile_values_show_as_text_on_the_audit_page(
    browser: WebDriver, site: Site
) -> None:
    hostile_id = site.submit()
    with httpx.Client(base_url=site.base, timeout=10) as http:
        body = {"expected_revision": "1", "reason": HOSTILE_REASON}
        headers = {"Authorization": f"Bearer {site.token}", "Idempotency-Key": secrets.token_hex(8)}
        answer = http.post(f"/v1/tasks/{hostile_id}:cancel", json=body, headers=headers)
        assert answer.status_code == 200, answer.text
    task_id = site.submit()
    sign_in(browser, site, site.token)
    browser.get(f"{site.base}/ui/tasks/{task_id}")
    browser.find_element(By.CSS_SELECTOR, "#cancel-form input[name=reason]").send_keys("stop it")
    browser.find_element(By.ID, "cancel").click()
    until(lambda: "done=cancel" in browser.current_url, 10, "the cancel's answer")
    browser.find_element(By.ID, "nav-audit").click()
    rows = until(lambda: browser.find_elements(By.CSS_SELECTOR, "#audit tbody tr"), 10, "rows")
    texts = [row.text for row in rows]
    console = next(text for text in texts if task_id in text and "tasks.cancel" in text)
    assert "console" in console and "stop it" in console and HOSTILE_NAME in console
    hostile = next(text for text in texts if hostile_id in text and "tasks.cancel" in text)
    assert '<img src=x onerror=\\"window.__pwned=1\\">' in hostile  # the JSON text, as text
    assert "\\x1b" in hostile or "\\u001b" in hostile
    assert browser.find_elements(By.CSS_SELECTOR, "#audit img, #pwned-name") == []
    assert browser.execute_script("return window.__pwned;") is None
    shot(browser, site, "audit")
    if site.kind == "sqlite" and os.environ.get("ORBIT_UPDATE_DOC_SCREENSHOTS") == "1":
        docs = ROOT / "docs" / "orbit" / "img"
        shutil.copyfile(ARTIFACTS / "sqlite-audit.png", docs / "console-audit.png")


def test_a_token_without_audit_read_sees_no_audit_page(browser: WebDriver, site: Site) -> None:
    sign_in(browser, site, site.read_only)
    assert browser.find_elements(By.ID, "nav-audit") == []
    browser.get(f"{site.base}/ui/audit")
    assert "audit:read" in browser.find_element(By.TAG_NAME, "main").text
