"""What the Orbit console's browser tests share: waiting for a page, signing in with a token
and keeping screenshots as artifacts (var/artifacts/console/), and the server they drive."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.orbit.store.db import Database
from tests.support.orbit_databases import fresh_url
from tests.support.orbit_server import execution_server

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "var" / "artifacts" / "console"
T = TypeVar("T")


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """The first truthy value of `check()` within `timeout` seconds; AssertionError naming
    `what` otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s: {what}")


def screenshot(driver: WebDriver, kind: str, name: str) -> None:
    """The page as `<kind>-<name>.png` among the console artifacts."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{kind}-{name}.png"))


def signed_out(driver: WebDriver, base: str) -> None:
    driver.get(base + "/ui/signin")
    driver.delete_all_cookies()


def sign_in(driver: WebDriver, base: str, token: str) -> None:
    """A fresh session of `token` on the console at `base`, once the overview shows."""
    signed_out(driver, base)
    driver.get(base + "/ui/signin")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#signin button").click()
    until(lambda: driver.find_elements(By.ID, "queues"), 10, "the overview after sign-in")


@contextlib.contextmanager
def console_server(
    kind: str, tmp: Path, seed: Callable[[Database], Awaitable[T]]
) -> Iterator[tuple[str, T]]:
    """`orbit serve` (with its console) on a fresh migrated database of `kind` ("sqlite" or
    "mariadb"), once `seed(db)` has written the tenant the tests use: its base URL and what
    `seed` returned."""
    with fresh_url(kind, tmp, migrated=True) as url:
        seeded = asyncio.run(_seeded(url, seed))
        with execution_server(url, tmp / "serve.log") as base:
            yield base, seeded


async def _seeded(url: str, seed: Callable[[Database], Awaitable[T]]) -> T:
    db = Database.open(url, pool_size=2)
    try:
        return await seed(db)
    finally:
        await db.close()
