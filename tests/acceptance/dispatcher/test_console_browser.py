"""The Dispatcher's console in a real browser (Debian's headless chromium through Selenium and
Debian's chromedriver; nothing is downloaded), against mocksaas, a D and a simulated cell on
the local RabbitMQ: the outcome chart of a 60-call campaign matches the call.results the SaaS
received; a paused task shows paused within one refresh (the page is not reloaded); the
broker going unreachable (the D's TCP proxy to RabbitMQ cut; the shared broker keeps running)
flips the broker card and readiness; a transcript with markup is shown as text; two long
calls show in the live-calls panel (callee masked, agent turns counted), the per-task answer
rate and handle time match what the SaaS received, a recording link reads the object from the
bucket; at 1440x900 and on a 390x844 phone the page does not overflow, the cell's boot id stays
in its card and the charts take their box's width. Screenshots go to
var/artifacts/dispatcher-console/."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from agentcall.dispatcher.console.live import mask
from agentcall.dispatcher.console.pages import PANEL_REFRESH_MS, REFRESH_MS
from agentcall.mocksaas.domain.task_config import AgentMode, default_agent_config
from tests.acceptance.chromium import headless_chromium
from tests.acceptance.dispatcher.harness import Cell, MockSaas, Scenario, s3_env
from tests.support.services import amqp_url, s3_settings
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.browser, pytest.mark.rabbitmq, pytest.mark.s3]
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "var" / "artifacts" / "dispatcher-console"
TASK = "console-campaign"
HOSTILE = "<script>window.__injected = 1;</script><b>bold?</b>"
# Callees ending in 7 answer and say something hostile, in 8 answer, in 9 are busy; the rest
# ring out (no_answer).
SCRIPT = {
    "version": 1,
    "rules": [
        {
            "name": "long",  # about 11 s of real time at the time scale below
            "match": {"glob": "1555111*"},
            "outcome": "answered",
            "ring_ms": 50,
            "talk_ms": 110_000,
            "turns": [{"text": f"Turn {n}.", "at_ms": 8000 * n} for n in range(1, 13)],
            "recording": True,
        },
        {
            "name": "hostile",
            "match": {"glob": "*7"},
            "outcome": "answered",
            "ring_ms": 50,
            "turns": [HOSTILE, "Goodbye."],
            "recording": False,
        },
        {
            "name": "talk",
            "match": {"glob": "*8"},
            "outcome": "answered",
            "ring_ms": 50,
            "turns": ["Hello?"],
            "recording": False,
        },
        {
            "name": "busy",
            "match": {"glob": "*9"},
            "outcome": "busy",
            "ring_ms": 50,
            "recording": False,
        },
    ],
    "default": {"outcome": "no_answer", "ring_ms": 500, "recording": False},
    "time_scale": 0.1,
}
CALLEES = [f"1555000{n:04d}" for n in range(60)]
LIVE_TASK = "console-live"  # a task of its own: the campaign's task is paused by then
LIVE_CALLEES = ["15551110041", "15551110042"]
SIZES = ((1440, 900), (390, 844))


@dataclass
class Site:
    s: Scenario
    proxy: TcpProxy
    base: str


@pytest.fixture(scope="module")
def site(saas: MockSaas, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("console-d")
    cell = Cell(tmp, SCRIPT).start()
    proxy = TcpProxy.for_url(amqp_url()).start()
    s = Scenario(saas, cell, tmp)
    try:
        s.sip(max_concurrent_calls=100, allowed_targets=CALLEES + LIVE_CALLEES)
        s.task(TASK, max_concurrent_calls=100)
        s.quota(max_concurrent_calls=100)
        prefix = f"console-{tmp.name}"
        s.start(DISPATCHER_AMQP_URL=proxy.url(amqp_url()), **s3_env(prefix))
        yield Site(s, proxy, s.status_url.removesuffix("/status"))
    finally:
        if s.proc is not None and s.proc.alive:
            s.stop()
        proxy.close()
        cell.proc.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path_factory.mktemp("chromium"), "1400,1600") as driver:
        yield driver


def shot(driver: WebDriver, name: str, element: str | None = None) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    if element is None:
        driver.save_screenshot(str(path))
    else:
        driver.find_element(By.ID, element).screenshot(str(path))
    return path


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """``check()`` until truthy; an element replaced by a refresh mid-read counts as not yet."""

    def safe() -> Any:
        try:
            return check()
        except WebDriverException:
            return None

    return wait_for(safe, timeout, what)


def shown_totals(driver: WebDriver) -> dict[str, int]:
    chips = driver.find_elements(By.CSS_SELECTOR, "#outcome-totals [data-outcome]")
    return {
        c.get_attribute("data-outcome") or "": int(c.get_attribute("data-count") or 0)
        for c in chips
    }


def test_the_chart_shows_the_outcomes_of_a_60_call_campaign(browser: WebDriver, site: Site) -> None:
    s = site.s
    browser.get(f"{site.base}/ui")
    browser.execute_script("window.__notReloaded = true;")
    assert not browser.find_elements(By.CSS_SELECTOR, "#outcome-chart rect.bar")
    s.calls(TASK, callees=CALLEES)
    received = s.wait_results(60, 60, event_type="call.result")
    saas_counts = Counter(r["body"]["payload"]["outcome"] for r in received)
    assert set(saas_counts) == {"answered", "busy", "no_answer"}, saas_counts
    until(lambda: shown_totals(browser) == dict(saas_counts), 15, f"chart totals {saas_counts}")
    drawn = {
        kind: len(browser.find_elements(By.CSS_SELECTOR, f"#outcome-chart rect.{kind}"))
        for kind in saas_counts
    }
    assert all(n >= 1 for n in drawn.values()), drawn
    titles = " ".join(
        e.get_attribute("textContent") or ""
        for e in browser.find_elements(By.CSS_SELECTOR, "#outcome-chart rect title")
    )
    for outcome, n in saas_counts.items():
        assert f"{outcome}" in titles, (outcome, n)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#results-table tbody tr[data-call]")) == 60
    assert browser.execute_script("return window.__notReloaded === true;")
    shot(browser, "console-calls", "calls")
    shot(browser, "console-page")


def test_a_transcript_with_markup_is_shown_as_text(browser: WebDriver, site: Site) -> None:
    browser.get(f"{site.base}/ui#calls")
    hostile = [
        d
        for d in browser.find_elements(By.CSS_SELECTOR, "#results-table details")
        if HOSTILE in (d.get_attribute("textContent") or "")
    ]
    assert len(hostile) == 6, "the six answered callees ending in 7"
    details = hostile[0]
    assert details.get_attribute("open") is None, "transcripts start collapsed"
    details.find_element(By.TAG_NAME, "summary").click()
    assert HOSTILE in details.find_element(By.CSS_SELECTOR, "ol.transcript").text
    assert browser.execute_script("return window.__injected === undefined;")
    assert not browser.find_elements(By.CSS_SELECTOR, "#results-table b:not(:first-child)")
    updated = browser.find_element(By.ID, "calls").get_attribute("data-updated")
    until(
        lambda: browser.find_element(By.ID, "calls").get_attribute("data-updated") != updated,
        PANEL_REFRESH_MS["calls"] / 1000 + 2,
        "the calls panel refreshed",
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#results-table details[open]"), "kept open"
    shot(browser, "console-transcript", "results-table")


def barrier(browser: WebDriver) -> str:
    return browser.find_element(By.CSS_SELECTOR, f'tr[data-task="{TASK}"] .barrier').text


def test_a_paused_task_shows_paused_within_one_refresh(browser: WebDriver, site: Site) -> None:
    s = site.s
    browser.get(f"{site.base}/ui")
    browser.execute_script("window.__notReloaded = true;")
    assert barrier(browser) == "none"
    body = {"status": "paused", "active_call_policy": "drain"}
    s.saas.admin("POST", f"/dispatchers/{s.d}/tasks/{TASK}/status", body)
    wait_for(lambda: (s.task_row(TASK) or {}).get("barrier") == "paused", 20, "the D paused it")
    paused_at = time.monotonic()
    until(lambda: barrier(browser) == "paused", REFRESH_MS / 1000 + 1.5, "paused on the page")
    waited = time.monotonic() - paused_at
    assert waited <= REFRESH_MS / 1000 + 1.5, waited
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-task="{TASK}"]')
    assert "paused" in row.find_element(By.CSS_SELECTOR, ".state").text
    assert row.find_element(By.CSS_SELECTOR, ".consumer").text.startswith("no")
    assert browser.execute_script("return window.__notReloaded === true;")
    shot(browser, "console-tasks", "tasks")


def live_rows(driver: WebDriver) -> list[tuple[str, str, str, str]]:
    """(state, callee, duration, agent turns) of each row of the live-calls table."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#live-table tbody tr[data-call]")
    return [
        (
            r.get_attribute("data-state") or "",
            r.find_element(By.CSS_SELECTOR, ".callee").text,
            r.find_element(By.CSS_SELECTOR, ".duration").text,
            r.find_element(By.CSS_SELECTOR, ".turns").text,
        )
        for r in rows
    ]


def talking(driver: WebDriver) -> list[tuple[str, str, str, str]] | None:
    rows = live_rows(driver)
    ok = len(rows) == 2 and all(
        st == "in_call" and t.isdigit() and int(t) >= 1 for st, _, _, t in rows
    )
    return rows if ok else None


LAYOUT = """
const box = (id) => document.getElementById(id).getBoundingClientRect();
const boot = box("cell-boot-id"), card = box("cell-card");
const charts = {};
for (const id of ["outcome-chart", "duration-chart", "loss-chart", "jitter-chart"]) {
  const svg = document.getElementById(id);
  charts[id] = [svg.getBoundingClientRect().width, svg.parentElement.clientWidth];
}
const parent = document.getElementById("outcome-chart").parentElement;
const style = getComputedStyle(parent);
const inner = parent.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
charts["outcome-chart"][1] = inner;
return {
  viewport: [window.innerWidth, window.innerHeight],
  page: document.documentElement.scrollWidth,
  boot_inside: boot.left >= card.left - 0.5 && boot.right <= card.right + 0.5,
  charts: charts,
  live_head: getComputedStyle(document.querySelector("#live-table thead")).display,
};
"""


def layout_at(driver: WebDriver, width: int, height: int) -> dict[str, Any]:
    """The page's geometry with a ``width`` x ``height`` viewport (a phone's below 600 px),
    one screenshot per panel."""
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        figures: dict[str, Any] = driver.execute_script(LAYOUT)
        for panel in ("live", "tasks", "calls", "plumbing"):
            driver.execute_script(f"document.getElementById('{panel}').scrollIntoView();")
            shot(driver, f"console-{width}x{height}-{panel}")
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return figures


def check_rates(driver: WebDriver, task: str, payloads: list[dict[str, Any]]) -> None:
    """The task's answer rate and handle time shown are those of the results received."""
    mine = [p for p in payloads if p["task_id"] == task]
    answered = [p for p in mine if p["outcome"] == "answered"]
    dialled = [p for p in mine if p["outcome"] not in ("rejected", "canceled")]
    rate = f"{len(answered) / len(dialled):.4f}"
    handle_s = sum(p["duration_ms"] for p in answered) / len(answered) / 1000
    row = f'#rates-table tr[data-task="{task}"]'

    def shown() -> float | None:
        cells = driver.find_elements(By.CSS_SELECTOR, f"{row} .answer-rate")
        if not cells or cells[0].get_attribute("data-rate") != rate:
            return None
        seconds = driver.find_element(By.CSS_SELECTOR, f"{row} .handle-time")
        return float(seconds.get_attribute("data-seconds") or "nan")

    shown_handle_s = until(shown, 2 * PANEL_REFRESH_MS["calls"] / 1000 + 5, f"{task} {rate}")
    assert abs(shown_handle_s - handle_s) <= 0.1, (task, shown_handle_s, handle_s)


def test_live_calls_rates_recording_links_and_layouts_at_1440_and_on_a_phone(
    browser: WebDriver, site: Site, s3_client: Any
) -> None:
    s = site.s
    agent = default_agent_config(AgentMode.FULL_AI)
    # calls that last their talk_ms: no turn or silence limit cuts them earlier
    long_talk = {"max_turns": 100, "silence_timeout_ms": 60_000, "max_duration_ms": 300_000}
    agent["conversation"] = {**agent["conversation"], **long_talk}
    s.task(LIVE_TASK, max_concurrent_calls=10, max_call_duration_ms=300_000, agent_config=agent)
    wait_for(
        lambda: (s.task_row(LIVE_TASK) or {}).get("consumer") == "consuming",
        20,
        "the live task consumed",
    )
    browser.get(f"{site.base}/ui")
    s.calls(LIVE_TASK, callees=LIVE_CALLEES)
    rows = until(lambda: talking(browser), 15, "two live calls in call, the agent speaking")
    assert sorted(callee for _, callee, _, _ in rows) == sorted(mask(c) for c in LIVE_CALLEES)
    assert all(duration.endswith(" s") for _, _, duration, _ in rows), rows
    assert not any(c in browser.page_source for c in LIVE_CALLEES), "masked by default"
    for width, height in SIZES:
        figures = layout_at(browser, width, height)
        assert figures["viewport"] == [width, height], figures
        assert figures["page"] <= width, f"the page is wider than {width} px: {figures}"
        assert figures["boot_inside"], f"the boot id leaves its card at {width} px"
        for chart, (drawn, room) in figures["charts"].items():
            assert abs(drawn - room) <= 1, (width, chart, drawn, room)
        assert figures["live_head"] == ("none" if width < 600 else "table-header-group")
    received = s.wait_distinct_results(62, 60, event_type="call.result")
    for task in (TASK, LIVE_TASK):
        check_rates(browser, task, [r["body"]["payload"] for r in received])
    links = until(
        lambda: (
            browser.find_elements(By.CSS_SELECTOR, "#results-table a.recording-link")
            if len(browser.find_elements(By.CSS_SELECTOR, "#results-table a.recording-link")) == 2
            else None
        ),
        60,
        "two recording links",
    )
    for link in links:
        cell = link.find_element(By.XPATH, "./ancestor::td")
        key = cell.find_element(By.TAG_NAME, "code").text
        answer = httpx.get(link.get_attribute("href") or "", follow_redirects=False)
        assert answer.status_code == 303, answer.text
        stored = s3_client.get_object(Bucket=s3_settings().bucket, Key=key)["Body"].read()
        assert httpx.get(answer.headers["location"]).content == stored
    row = links[0].find_element(By.XPATH, "./ancestor::tr")
    browser.execute_script("arguments[0].scrollIntoView();", row)
    row.screenshot(str(ARTIFACTS / "console-recording-link.png"))


def test_the_broker_going_away_flips_the_broker_card_and_readiness(
    browser: WebDriver, site: Site
) -> None:
    s = site.s
    browser.get(f"{site.base}/ui#plumbing")
    reports_readiness = "readiness" in s.status()

    def card(element: str, attribute: str) -> str:
        return browser.find_element(By.ID, element).get_attribute(attribute) or ""

    assert card("broker", "data-connected") == "yes"
    if reports_readiness:
        until(lambda: card("readiness", "data-ready") == "yes", 15, "ready before the cut")
    site.proxy.cut()
    try:
        until(lambda: card("broker", "data-connected") == "no", 15, "broker unreachable shown")
        if reports_readiness:
            until(lambda: card("readiness", "data-ready") == "no", 15, "not ready shown")
            assert browser.find_element(By.ID, "readiness-causes").text
        shot(browser, "console-plumbing-broker-down", "plumbing")
    finally:
        site.proxy.restore()
    until(lambda: card("broker", "data-connected") == "yes", 30, "broker connected again")
