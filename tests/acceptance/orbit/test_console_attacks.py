"""The console against pages of other sites, in a real browser (Debian's headless chromium
through Selenium; nothing is downloaded), on SQLite and on MariaDB. An attacker's page is
served on another loopback port, reached as `localhost` (another site than the console's
`127.0.0.1`) and as `127.0.0.1` (the same site, another origin: the session cookie is sent):
it cannot sign the browser into the attacker's namespace, none of the console's forms acts
when posted from it (even with a leaked CSRF token), a copied session cookie is dead after
sign-out and never worked as an API token, and a request that names a foreign host (a DNS
rebinding: `rebind.localhost`, which chromium resolves to loopback) is refused. Screenshots
of each refusal go to var/artifacts/console/."""

from __future__ import annotations

import asyncio
import html
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from tests.acceptance.chromium import headless_chromium
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import execution_server
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "var" / "artifacts" / "console"
REFUSED = ("another site", "another origin", "sign-in form", "sign in first")


@dataclass
class Console:
    kind: str
    base: str  # http://127.0.0.1:port
    queue_id: str
    token: str  # the victim's, every permission
    attacker_token: str  # tasks:read in the attacker's own namespace
    attacker_queue: str


class AttackerSite:
    """Pages of another origin: each an HTML form that posts itself to the console."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server hook
                body = pages.get(urlsplit(self.path).path, "no such page").encode()
                self.send_response(200 if self.path in pages else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def form(self, name: str, action: str, fields: dict[str, str]) -> str:
        """A page that posts `fields` to `action` as soon as it loads; its path."""
        inputs = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in fields.items()
        )
        self.pages[f"/{name}"] = (
            f'<!doctype html><title>win a prize</title><form id="f" method="post" '
            f'action="{html.escape(action)}">{inputs}</form>'
            "<script>document.getElementById('f').submit()</script>"
        )
        return f"/{name}"

    def origins(self) -> tuple[str, str]:
        """Another site (`localhost`) and the console's site on another port."""
        return f"http://localhost:{self.port}", f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def _tenants(url: str) -> tuple[str, str, str, str]:
    db = Database.open(url, pool_size=2)
    try:
        admin = Admin(db)
        victim = await admin.init(f"victim-{secrets.token_hex(4)}", "orders")
        attacker = await admin.init(f"attacker-{secrets.token_hex(4)}", "loot")
        read = await admin.create_token(
            attacker.namespace_id, [Permission.READ], [attacker.queue_id], None
        )
        return victim.queue_id, victim.token, read.token, attacker.queue_id
    finally:
        await db.close()


@pytest.fixture(scope="module", params=KINDS)
def console(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp(f"attacks-{request.param}")
    with fresh_url(request.param, tmp, migrated=True) as url:
        queue_id, token, attacker_token, attacker_queue = asyncio.run(_tenants(url))
        with execution_server(url, tmp / "serve.log") as base:
            yield Console(request.param, base, queue_id, token, attacker_token, attacker_queue)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path_factory.mktemp("chromium-attacks")) as driver:
        yield driver


@pytest.fixture(scope="module")
def attacker() -> Iterator[AttackerSite]:
    site = AttackerSite()
    yield site
    site.close()


def shot(driver: WebDriver, console: Console, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{console.kind}-attack-{name}.png"))


def sign_in(driver: WebDriver, console: Console) -> str:
    """Signs the browser in as the victim; the session cookie's value."""
    driver.get(console.base + "/ui/signin")
    driver.delete_all_cookies()
    driver.get(console.base + "/ui/signin")
    driver.find_element(By.ID, "token").send_keys(console.token)
    driver.find_element(By.CSS_SELECTOR, "#signin button").click()
    wait_for(lambda: driver.find_elements(By.ID, "queues"), 10, "the overview after sign-in")
    cookie = driver.get_cookie("orbit_session")
    assert cookie is not None
    return str(cookie["value"])


def refused_page(driver: WebDriver, console: Console, what: str) -> str:
    """Waits for the console's refusal after an attacker's page posted; its text."""

    def refusal() -> str | None:
        if not driver.current_url.startswith(console.base):
            return None
        text = driver.find_element(By.TAG_NAME, "body").text
        return text if any(word in text for word in REFUSED) else None

    text: str = wait_for(refusal, 10, f"the console's refusal of {what}")
    return text


def still_the_victim(driver: WebDriver, console: Console) -> None:
    driver.get(console.base + "/ui")
    wait_for(lambda: driver.find_elements(By.ID, "queues"), 10, "the victim's overview")
    assert console.queue_id in driver.page_source
    assert console.attacker_queue not in driver.page_source


def test_a_page_of_another_site_cannot_sign_the_browser_in(
    browser: WebDriver, console: Console, attacker: AttackerSite
) -> None:
    victim = sign_in(browser, console)
    for number, origin in enumerate(attacker.origins()):
        path = attacker.form(
            f"signin-{number}", console.base + "/ui/signin", {"token": console.attacker_token}
        )
        browser.get(origin + path)
        text = refused_page(browser, console, f"a sign-in posted from {origin}")
        assert "another" in text or "sign-in form" in text
        shot(browser, console, f"signin-from-{urlsplit(origin).hostname}")
        cookie = browser.get_cookie("orbit_session")
        assert cookie is not None and cookie["value"] == victim  # the victim's session stays
        still_the_victim(browser, console)


def test_no_console_form_acts_when_posted_from_another_page(
    browser: WebDriver, console: Console, attacker: AttackerSite
) -> None:
    with httpx.Client(base_url=console.base, timeout=10) as api:
        answer = api.post(
            "/v1/tasks",
            json={
                "queue_id": console.queue_id,
                "handler": "nobody.works.this",
                "handler_version": "v1",
                "payload_version": "v1",
                "payload": {},
            },
            headers={
                "Authorization": f"Bearer {console.token}",
                "Idempotency-Key": secrets.token_hex(8),
            },
        )
        assert answer.status_code == 201, answer.text
        task_id = answer.json()["data"]["task"]["id"]
    sign_in(browser, console)
    browser.get(f"{console.base}/ui/tasks/{task_id}")
    leaked = browser.find_element(By.CSS_SELECTOR, "#cancel-form input[name=csrf]")
    csrf = str(leaked.get_attribute("value"))  # the worst case: the CSRF token leaked
    fields = {"csrf": csrf, "revision": "1", "reason": "forged", "key": "console-forged"}
    actions = {
        "signout": "/ui/signout",
        **{name: f"/ui/tasks/{task_id}/{name}" for name in ("cancel", "retry", "resolve")},
    }
    for number, origin in enumerate(attacker.origins()):
        for name, action in actions.items():
            path = attacker.form(f"{name}-{number}", console.base + action, fields)
            browser.get(origin + path)
            refused_page(browser, console, f"{name} posted from {origin}")
            shot(browser, console, f"{name}-from-{urlsplit(origin).hostname}")
    with httpx.Client(base_url=console.base, timeout=10) as api:
        task = api.get(
            f"/v1/tasks/{task_id}", headers={"Authorization": f"Bearer {console.token}"}
        ).json()["data"]
    assert task["state"] == "WAITING" and task["revision"] == "1"  # nothing acted
    still_the_victim(browser, console)  # the forged sign-outs did not sign out
    browser.get(f"{console.base}/ui/tasks/{task_id}")
    browser.find_element(By.NAME, "reason").send_keys("the console's own form")
    browser.find_element(By.ID, "cancel").click()
    wait_for(lambda: browser.find_elements(By.ID, "done"), 10, "the console's own cancel")


def test_a_copied_session_cookie_is_dead_after_sign_out(
    browser: WebDriver, console: Console
) -> None:
    session_id = sign_in(browser, console)
    assert console.token not in session_id
    with httpx.Client(base_url=console.base, timeout=10) as copy:
        bearer = copy.get(
            f"/v1/tasks/{'0' * 32}", headers={"Authorization": f"Bearer {session_id}"}
        )
        assert bearer.status_code == 401  # never an API token
        copy.cookies.set("orbit_session", session_id, path="/ui")
        assert copy.get("/ui").status_code == 200  # the copy works while signed in
        browser.find_element(By.CSS_SELECTOR, "form[action='/ui/signout'] button").click()
        wait_for(lambda: browser.find_elements(By.ID, "signin"), 10, "the sign-in page")
        shot(browser, console, "signed-out")
        after = copy.get("/ui")
        assert after.status_code == 303 and after.headers["location"] == "/ui/signin"


def test_a_foreign_host_name_is_refused(browser: WebDriver, console: Console) -> None:
    port = urlsplit(console.base).port
    browser.delete_all_cookies()
    browser.get(f"http://rebind.localhost:{port}/ui/signin")
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "does not answer the host name 'rebind.localhost'" in text, text
    assert browser.find_elements(By.ID, "signin") == []
    assert browser.get_cookies() == []
    shot(browser, console, "foreign-host")
    browser.get(f"http://localhost:{port}/ui/signin")  # a loopback name is answered
    wait_for(lambda: browser.find_elements(By.ID, "signin"), 10, "the sign-in page on localhost")
