"""Every answer of the Orbit console over real HTTP on both databases (docs/orbit/console.md
"Security"): pages, fragments, assets, redirects and refusals all carry the strict
Content-Security-Policy (own script and style only, no inline script, forms post only to the
console, no framing) and `X-Frame-Options: DENY`; every form that posts carries the CSRF
token of its session, and every page links its script from the console's own origin."""

from __future__ import annotations

import re
import secrets

import httpx
import pytest

from agentcall.orbit.console.headers import HEADERS
from tests.integration.orbit.test_console_sessions import sign_in
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import submit

pytestmark = [pytest.mark.integration]
POST_FORM = re.compile(r'<form method="post"[^>]*>(.*?)</form>', re.S)
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)


def assert_secured(answer: httpx.Response) -> None:
    where = f"{answer.request.method} {answer.request.url.path} -> {answer.status_code}"
    policy = answer.headers.get("content-security-policy", "")
    assert policy == HEADERS["Content-Security-Policy"], where
    assert "'unsafe-inline'" not in policy and "frame-ancestors 'none'" in policy, where
    assert answer.headers.get("x-frame-options") == "DENY", where
    assert answer.headers.get("x-content-type-options") == "nosniff", where


async def test_every_console_answer_carries_the_policy_and_denies_framing(
    http: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    task_id = await submit(http, tenant)
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as anonymous:
        for path in ("/ui", "/ui/", "/ui/signin", "/ui/static/console.js", "/ui/nowhere"):
            assert_secured(await anonymous.get(path))
        assert_secured(await anonymous.post("/ui/signout", data={"csrf": "x"}))
        assert_secured(await anonymous.get("/ui", headers={"Host": "rebind.example"}))
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as browser:
        await sign_in(browser, tenant.token)
        pages = [
            "/ui",
            "/ui/review",
            "/ui/audit",
            f"/ui/queues/{tenant.queue_id}",
            f"/ui/tasks/{task_id}",
            f"/ui/tasks/{secrets.token_hex(16)}",
            "/ui/static/console.css",
        ]
        for path in pages:
            answer = await browser.get(path)
            assert_secured(answer)
            assert INLINE_SCRIPT.search(answer.text) is None, path
        fragment = await browser.get("/ui", headers={"X-Orbit-Fragment": "1"})
        assert_secured(fragment)
        forged = {"csrf": "0" * 64, "revision": "1", "reason": "x", "key": "k"}
        refused = await browser.post(f"/ui/tasks/{task_id}/cancel", data=forged)
        assert refused.status_code == 403
        assert_secured(refused)
        cross = await browser.post(
            "/ui/signout", data={}, headers={"Origin": "http://attacker.example"}
        )
        assert cross.status_code == 403
        assert_secured(cross)


async def test_every_form_that_posts_carries_its_sessions_csrf_token(
    http: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    task_id = await submit(http, tenant)
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as browser:
        signin = await browser.get("/ui/signin")
        await sign_in(browser, tenant.token)
        pages = [signin.text]
        for path in ("/ui", "/ui/review", "/ui/audit", f"/ui/tasks/{task_id}"):
            pages.append((await browser.get(path)).text)
    forms = [form for page in pages for form in POST_FORM.findall(page)]
    assert len(forms) >= 5  # sign-in, sign-out, and the task page's cancel, retry, resolve
    for form in forms:
        assert re.search(r'name="csrf" value="[0-9a-f]{64}"', form), form
