"""The console over plain HTTP on both databases (the browser suite drives the same pages in
chromium): sign-in and its cookie, the security headers, the live fragment, escaping,
permissions exactly as the API's, the CSRF check on every action, keyset paging and filters of
the queue page, assets shipped in the package."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agentcall.orbit.console.session import csrf_token
from agentcall.orbit.domain.tokens import Permission
from tests.integration.orbit.wire import dumps, ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


@pytest.fixture
async def browser(server_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as client:
        yield client


async def _submit(http: httpx.AsyncClient, tenant: Tenant, key: str, **body: Any) -> str:
    response = await http.post(
        "/v1/tasks", content=dumps(tenant.body(**body)), headers=tenant.headers(key=key)
    )
    task_id: str = ok(response, 201)["task"]["id"]
    return task_id


async def signin_form(browser: httpx.AsyncClient) -> str:
    """The sign-in form's token (its pre-session cookie is now in `browser`)."""
    page = await browser.get("/ui/signin")
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
    assert page.status_code == 200 and found is not None, page.text
    return found.group(1)


async def _sign_in(browser: httpx.AsyncClient, token: str) -> str:
    """Signs in as `token`; the session id (the cookie's value)."""
    browser.cookies.clear()
    csrf = await signin_form(browser)
    answer = await browser.post("/ui/signin", data={"token": token, "csrf": csrf})
    assert answer.status_code == 303 and answer.headers["location"] == "/ui", answer.text
    session_id = browser.cookies.get("orbit_session")
    assert session_id and token not in session_id
    return session_id


def _page_csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found is not None, page
    return found.group(1)


async def test_sign_in_sets_a_strict_httponly_cookie(
    browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    first = await browser.get("/ui")
    assert first.status_code == 303 and first.headers["location"] == "/ui/signin"
    form = await browser.get("/ui/signin")
    assert form.status_code == 200 and 'name="token"' in form.text
    csrf = _page_csrf(form.text)
    refused = await browser.post("/ui/signin", data={"token": "orb_nope", "csrf": csrf})
    assert refused.status_code == 401 and "unknown, expired or revoked" in refused.text
    csrf = _page_csrf(refused.text)  # the refusal is a new form
    answer = await browser.post("/ui/signin", data={"token": tenant.token, "csrf": csrf})
    cookie = answer.headers.get_list("set-cookie")[0]
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/ui"):
        assert attribute.lower() in cookie.lower(), cookie
    assert tenant.token not in str(answer.headers)  # the cookie holds a session id only
    page = await browser.get("/ui")
    assert page.status_code == 200 and tenant.queue_id in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.headers["x-frame-options"] == "DENY"
    fragment = await browser.get("/ui", headers={"X-Orbit-Fragment": "1"})
    assert "<html" not in fragment.text and f"count-{tenant.queue_id}-WAITING" in fragment.text
    script = await browser.get("/ui/static/console.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    _, submit_only = await tenant.token_for([Permission.SUBMIT])
    csrf = await signin_form(browser)
    denied = await browser.post("/ui/signin", data={"token": submit_only, "csrf": csrf})
    assert denied.status_code == 403  # the console needs tasks:read
    assert "tasks:read" in denied.text


async def test_markup_is_escaped(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    task_id = await _submit(
        http, tenant, "markup", payload={"note": hostile}, business_key='<b onmouseover="x">bk</b>'
    )
    await _sign_in(browser, tenant.token)
    page = (await browser.get(f"/ui/tasks/{task_id}")).text
    assert "<script>alert" not in page and "<img src=x" not in page and "<b onmouseover" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    queue = (await browser.get(f"/ui/queues/{tenant.queue_id}")).text
    assert "&lt;b onmouseover=&#34;x&#34;&gt;bk&lt;/b&gt;" in queue


async def test_actions_need_the_permission_and_the_csrf_token(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    task_id = await _submit(http, tenant, "act")
    _, read_only = await tenant.token_for([Permission.READ])
    read_only_session = await _sign_in(browser, read_only)
    page = (await browser.get(f"/ui/tasks/{task_id}")).text
    assert 'id="actions"' not in page and "cancel-form" not in page
    form = {"revision": "1", "reason": "no", "key": "console-k1"}
    forged = await browser.post(
        f"/ui/tasks/{task_id}/cancel", data={**form, "csrf": _page_csrf(page)}
    )
    assert forged.status_code == 403 and "tasks:cancel" in forged.text
    session_id = await _sign_in(browser, tenant.token)
    page = (await browser.get(f"/ui/tasks/{task_id}")).text
    assert "cancel-form" in page
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert csrf is not None and csrf.group(1) == csrf_token(session_id)
    other_sessions = (csrf_token(read_only_session), csrf_token(tenant.token))
    for missing in (
        form,
        *({**form, "csrf": other} for other in other_sessions),
        {**form, "csrf": ""},
    ):
        refused = await browser.post(f"/ui/tasks/{task_id}/cancel", data=missing)
        assert refused.status_code == 403 and "CSRF" in refused.text
    wrong_type = await browser.post(
        f"/ui/tasks/{task_id}/cancel", json={**form, "csrf": csrf.group(1)}
    )
    assert wrong_type.status_code == 415
    still = ok(await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers()))
    assert still["state"] == "WAITING"
    done = await browser.post(f"/ui/tasks/{task_id}/cancel", data={**form, "csrf": csrf.group(1)})
    assert done.status_code == 303 and done.headers["location"].endswith("?done=cancel")
    again = await browser.post(f"/ui/tasks/{task_id}/cancel", data={**form, "csrf": csrf.group(1)})
    assert again.status_code == 303  # the same form twice: replayed, one cancel
    task = ok(await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers()))
    assert task["state"] == "CANCELLED" and task["revision"] == "2"


async def test_queue_page_filters_and_pages(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant
) -> None:
    queue_id = await tenant.queue("paged")
    _, token = await tenant.token_for([Permission.READ, Permission.SUBMIT], [queue_id])
    ids = {"a": [], "b": []}  # type: dict[str, list[str]]
    for number in range(30):
        handler = "a" if number % 3 else "b"
        body = dumps(tenant.body(queue_id=queue_id, handler=f"h.{handler}"))
        answer = await http.post(
            "/v1/tasks", content=body, headers=tenant.headers(token, key=f"page-{number}")
        )
        ids[handler].append(ok(answer, 201)["task"]["id"])
    await _sign_in(browser, token)
    first = (await browser.get(f"/ui/queues/{queue_id}")).text
    rows = re.findall(r'<a class="mono" href="/ui/tasks/([0-9a-f]{32})">', first)
    assert len(rows) == 25
    cursor = re.search(r'id="next-page" href="\?cursor=([^"]+)"', first)
    assert cursor is not None
    second = (await browser.get(f"/ui/queues/{queue_id}?cursor={cursor.group(1)}")).text
    more = re.findall(r'<a class="mono" href="/ui/tasks/([0-9a-f]{32})">', second)
    assert sorted(rows + more) == sorted(ids["a"] + ids["b"])  # no task twice, none missing
    moved = await browser.get(f"/ui/queues/{queue_id}?handler=h.b&state=WAITING&error_code=")
    assert moved.status_code == 303  # to the filter's own URL: the API's names, in order
    assert moved.headers["location"] == f"/ui/queues/{queue_id}?state=WAITING&handler=h.b"
    only_b = (await browser.get(moved.headers["location"])).text
    found = re.findall(r'<a class="mono" href="/ui/tasks/([0-9a-f]{32})">', only_b)
    assert sorted(found) == sorted(ids["b"])
    other = await browser.get(f"/ui/queues/{tenant.queue_id}")
    assert other.status_code == 403  # outside the token's queues
