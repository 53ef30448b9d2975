"""Console sign-in, sign-out and "sign out everywhere" over real HTTP on both databases
(docs/orbit/console.md "Sessions", docs/orbit/audit.md): sign-out everywhere ends every
session of the token, in every browser, and no other token's; each of the three writes its
audit entry (origin console, the client's address, the session's reference, never its id)."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.tokens import Permission
from tests.integration.orbit.test_console_sessions import page_csrf, sign_in, signed_in
from tests.integration.orbit.wire import ok
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]


def reference(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()[:16]


async def audit(http: httpx.AsyncClient, tenant: Tenant, action: str) -> list[dict[str, Any]]:
    answer = await http.get("/v1/audit", params={"action": action}, headers=tenant.headers())
    items: list[dict[str, Any]] = ok(answer)["items"]
    return items


async def test_sign_out_everywhere_ends_every_session_of_the_token_only(
    http: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    token_id, token = await tenant.token_for([Permission.READ])
    _, other_token = await tenant.token_for([Permission.READ])
    async with (
        httpx.AsyncClient(base_url=server_url, timeout=30) as first,
        httpx.AsyncClient(base_url=server_url, timeout=30) as second,
        httpx.AsyncClient(base_url=server_url, timeout=30) as other,
    ):
        one, two = await sign_in(first, token), await sign_in(second, token)
        bystander = await sign_in(other, other_token)
        page = await first.get("/ui")
        assert 'id="signout-everywhere"' in page.text
        out = await first.post(
            "/ui/signout", data={"csrf": page_csrf(page.text), "everywhere": "1"}
        )
        assert out.status_code == 303 and out.headers["location"] == "/ui/signin"
    assert not await signed_in(server_url, one)
    assert not await signed_in(server_url, two)  # the other browser's session ended too
    assert await signed_in(server_url, bystander)  # another token's did not
    (entry,) = await audit(http, tenant, "sessions.signout_all")
    assert entry["target"] == {"kind": "token", "id": token_id}
    assert entry["detail"] == {"ended": 2} and entry["origin"] == "console"


async def test_sign_in_and_sign_out_are_recorded_by_the_sessions_reference(
    http: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    token_id, token = await tenant.token_for([Permission.READ])
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as browser:
        session_id = await sign_in(browser, token)
        page = await browser.get("/ui")
        out = await browser.post("/ui/signout", data={"csrf": page_csrf(page.text)})
        assert out.status_code == 303
    assert not await signed_in(server_url, session_id)
    (signin,) = await audit(http, tenant, "sessions.signin")
    (signout,) = await audit(http, tenant, "sessions.signout")
    for entry in (signin, signout):
        assert entry["target"] == {"kind": "session", "id": reference(session_id)}
        assert (entry["origin"], entry["remote_addr"]) == ("console", "127.0.0.1")
        assert entry["actor"]["token_id"] == token_id and entry["request_id"]
        assert session_id not in str(entry)
    assert set(signin["detail"]) == {"expires_at"}
