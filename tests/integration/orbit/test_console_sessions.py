"""Console sessions, login CSRF, Host checks and trusted proxies over real HTTP on both
databases (docs/orbit/console.md): the cookie is a random session id kept only as its digest
and never an API token; sign-out, revocation, idle and absolute expiry end a session for
every copy of its cookie; sign-in needs the token of its own form; every console POST from
another origin or site is refused; the console answers only allowed `Host` names; only the
proxies of ORBIT_TRUSTED_PROXIES are believed about the original scheme and host; a binary
frame on the worker socket closes it with 4400."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import ssl
import subprocess
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import console_sessions
from tests.support.orbit_server import Tenant, serve_command, serving, stop
from tests.support.ports import free_port
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.integration]
FOREIGN = "http://attacker.example:7470"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


@pytest.fixture
async def browser(server_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as client:
        yield client


def page_csrf(text: str) -> str:
    found = CSRF.search(text)
    assert found is not None, text
    return found.group(1)


async def sign_in(browser: httpx.AsyncClient, token: str, **headers: str) -> str:
    """Signs in through the form; the session id (the cookie's value)."""
    browser.cookies.clear()
    form = await browser.get("/ui/signin", headers=headers)
    answer = await browser.post(
        "/ui/signin", data={"token": token, "csrf": page_csrf(form.text)}, headers=headers
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/ui", answer.text
    session_id = browser.cookies.get("orbit_session")
    assert session_id is not None
    return session_id


def digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()


async def stored(db: Database, session_id: str) -> sa.Row[tuple[datetime, datetime]] | None:
    async with db.read() as conn:
        query = sa.select(console_sessions.c.seen_at, console_sessions.c.expires_at).where(
            console_sessions.c.id_sha256 == digest(session_id)
        )
        return (await conn.execute(query)).first()


async def signed_in(server_url: str, session_id: str) -> bool:
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as copy:
        copy.cookies.set("orbit_session", session_id, path="/ui")
        page = await copy.get("/ui")
    return page.status_code == 200


async def test_the_cookie_is_a_session_id_that_dies_at_sign_out_everywhere(
    browser: httpx.AsyncClient, db: Database, tenant: Tenant, server_url: str
) -> None:
    session_id = await sign_in(browser, tenant.token)
    assert tenant.token not in session_id and len(session_id) == 43
    row = await stored(db, session_id)
    assert row is not None  # kept as its digest: the id itself is stored nowhere
    async with db.read() as conn:
        values = [str(v) for r in await conn.execute(sa.select(console_sessions)) for v in r]
    assert session_id not in values and tenant.token not in values
    api = await browser.get(
        f"/v1/tasks/{'0' * 32}", headers={"Authorization": f"Bearer {session_id}"}
    )
    assert api.status_code == 401  # a session id is never an API token
    assert await signed_in(server_url, session_id)  # a copy of the cookie works ...
    page = await browser.get("/ui")
    # under no-referrer a browser sends "Origin: null" on the console's own form posts
    assert page.headers["referrer-policy"] == "same-origin"
    out = await browser.post("/ui/signout", data={"csrf": page_csrf(page.text)})
    assert out.status_code == 303 and out.headers["location"] == "/ui/signin"
    assert not await signed_in(server_url, session_id)  # ... until the session signs out
    assert await stored(db, session_id) is None


async def test_signing_in_again_ends_the_browsers_previous_session(
    browser: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    first = await sign_in(browser, tenant.token)
    form = await browser.get("/ui/signin")
    again = await browser.post(
        "/ui/signin", data={"token": tenant.token, "csrf": page_csrf(form.text)}
    )
    assert again.status_code == 303
    second = browser.cookies.get("orbit_session")
    assert second is not None and second != first
    assert not await signed_in(server_url, first) and await signed_in(server_url, second)


async def test_revoking_the_token_ends_its_sessions(
    browser: httpx.AsyncClient, db: Database, tenant: Tenant, server_url: str
) -> None:
    token_id, token = await tenant.token_for([Permission.READ])
    session_id = await sign_in(browser, token)
    assert await signed_in(server_url, session_id)
    await Admin(db).revoke_token(token_id)
    assert not await signed_in(server_url, session_id)  # at once: sessions skip the cache
    assert await stored(db, session_id) is None  # deleted when it was found dead


async def _age(db: Database, session_id: str, **values: datetime) -> None:
    async with db.write() as conn:
        await conn.execute(
            console_sessions.update()
            .where(console_sessions.c.id_sha256 == digest(session_id))
            .values(**values)
        )


async def test_idle_and_absolute_expiry_end_a_session(
    browser: httpx.AsyncClient, db: Database, tenant: Tenant, server_url: str
) -> None:
    now = datetime.now(UTC)
    used = await sign_in(browser, tenant.token)
    await _age(db, used, seen_at=now - timedelta(minutes=5))
    assert await signed_in(server_url, used)
    row = await stored(db, used)
    assert row is not None and row.seen_at > now - timedelta(minutes=1)  # its use is kept
    idle = await sign_in(browser, tenant.token)
    await _age(db, idle, seen_at=now - timedelta(minutes=31))  # the default idle: 30 min
    assert not await signed_in(server_url, idle)
    assert await stored(db, idle) is None
    old = await sign_in(browser, tenant.token)
    row = await stored(db, old)
    assert row is not None and row.expires_at <= now + timedelta(hours=12, minutes=1)
    await _age(db, old, expires_at=now - timedelta(seconds=1))
    assert not await signed_in(server_url, old)


async def test_a_session_ends_with_its_tokens_expiry(
    browser: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    soon = datetime.now(UTC) + timedelta(minutes=10)
    _, token = await tenant.token_for([Permission.READ], expires_at=soon)
    form = await browser.get("/ui/signin")
    answer = await browser.post("/ui/signin", data={"token": token, "csrf": page_csrf(form.text)})
    cookie = next(c for c in _cookies(answer) if c.startswith("orbit_session="))
    max_age = re.search(r"max-age=(\d+)", cookie, re.IGNORECASE)
    assert max_age is not None and 0 < int(max_age.group(1)) <= 600, cookie
    row = await stored(db, browser.cookies["orbit_session"])
    assert row is not None and row.expires_at <= soon


async def test_sign_in_needs_the_token_of_its_own_form(
    browser: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    """Login CSRF: a page of another site can post the form, but neither send this browser's
    pre-session cookie (SameSite=Strict) nor know the form's token; the browser's own
    session stays."""
    victim = await sign_in(browser, tenant.token)
    _, attacker_token = await tenant.token_for([Permission.READ])
    own = page_csrf((await browser.get("/ui/signin")).text)
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as attacker:
        other_form = page_csrf((await attacker.get("/ui/signin")).text)
    forged = [
        ({"token": attacker_token}, {}),  # no form token
        ({"token": attacker_token, "csrf": other_form}, {}),  # another browser's form
        ({"token": attacker_token, "csrf": own}, {"Origin": FOREIGN}),
        ({"token": attacker_token, "csrf": own}, {"Sec-Fetch-Site": "cross-site"}),
        ({"token": attacker_token, "csrf": own}, {"Sec-Fetch-Site": "same-site"}),
        ({"token": attacker_token, "csrf": own}, {"Origin": "null"}),
    ]
    for form, headers in forged:
        answer = await browser.post("/ui/signin", data=form, headers=headers)
        assert answer.status_code == 403, (form, headers, answer.text)
        assert "orbit_session" not in answer.headers.get("set-cookie", "")
        assert browser.cookies.get("orbit_session") == victim
    no_cookie = httpx.AsyncClient(base_url=server_url, timeout=30)
    async with no_cookie:
        refused = await no_cookie.post("/ui/signin", data={"token": attacker_token, "csrf": own})
    assert refused.status_code == 403 and "sign-in form" in refused.text
    assert await signed_in(server_url, victim)


async def test_every_console_post_from_another_origin_is_refused(
    http: httpx.AsyncClient, browser: httpx.AsyncClient, tenant: Tenant, server_url: str
) -> None:
    answer = await http.post(
        "/v1/tasks", json=tenant.body(), headers=tenant.headers(key=os.urandom(8).hex())
    )
    task_id = answer.json()["data"]["task"]["id"]
    session_id = await sign_in(browser, tenant.token)
    page = await browser.get(f"/ui/tasks/{task_id}")
    csrf = page_csrf(page.text)
    fields = {"csrf": csrf, "revision": "1", "reason": "forged", "key": "console-forged"}
    targets = ["/ui/signout"] + [f"/ui/tasks/{task_id}/{a}" for a in ("cancel", "retry", "resolve")]
    for target in targets:
        for headers in ({"Origin": FOREIGN}, {"Sec-Fetch-Site": "cross-site"}):
            refused = await browser.post(target, data=fields, headers=headers)
            assert refused.status_code == 403, (target, headers, refused.text)
            assert "another" in refused.text
    task = (await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers())).json()["data"]
    assert task["state"] == "WAITING" and task["revision"] == "1"
    assert await signed_in(server_url, session_id)  # the forged sign-out did nothing
    same = {"Origin": server_url, "Sec-Fetch-Site": "same-origin"}
    done = await browser.post(f"/ui/tasks/{task_id}/cancel", data=fields, headers=same)
    assert done.status_code == 303  # the console's own form from its own origin acts


@pytest.mark.parametrize(
    ("host", "status"),
    [("attacker.example", 421), ("rebind.localhost:7470", 421), ("a b", 400), ("", 400)],
)
async def test_the_console_answers_only_allowed_host_names(
    browser: httpx.AsyncClient, host: str, status: int
) -> None:
    """DNS rebinding: another site's name resolved to this server reaches the console with
    that name as `Host`; the console refuses it. The API answers any `Host` (bearer tokens)."""
    for method, path in (("GET", "/ui"), ("GET", "/ui/signin"), ("POST", "/ui/signin")):
        answer = await browser.request(method, path, headers={"Host": host})
        assert answer.status_code == status, (method, path, answer.text)
        assert "orbit_session" not in answer.headers.get("set-cookie", "")
    assert (await browser.get("/ui/signin", headers={"Host": "localhost:1"})).status_code == 200
    api = await browser.get(f"/v1/tasks/{'0' * 32}", headers={"Host": host or "x"})
    assert api.status_code == 401  # the API: refused for want of a token, not for its Host


@pytest.fixture(scope="module")
def proxied_url(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server behind a TLS proxy on loopback that serves it as https://orbit.example.com."""
    log = tmp_path_factory.mktemp("orbit-proxied") / "server.log"
    env = {
        **os.environ,
        "ORBIT_TRUSTED_PROXIES": "127.0.0.1/32",
        "ORBIT_ALLOWED_HOSTS": "orbit.example.com",
    }
    with serving(db_url, log, "--no-access-log", env=env) as url:
        yield url


def _cookies(answer: httpx.Response) -> list[str]:
    return answer.headers.get_list("set-cookie")


async def test_a_trusted_proxy_tells_the_scheme_and_host(
    proxied_url: str, server_url: str, tenant: Tenant
) -> None:
    proxy = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "orbit.example.com"}
    origin = {**proxy, "Origin": "https://orbit.example.com", "Sec-Fetch-Site": "same-origin"}
    async with httpx.AsyncClient(base_url=proxied_url, timeout=30) as client:
        form = await client.get("/ui/signin", headers=proxy)
        assert form.status_code == 200 and all("secure" in c.lower() for c in _cookies(form))
        # a Secure cookie goes back over HTTPS only: the proxy's leg, plain HTTP here
        client.cookies.set("orbit_signin", form.cookies["orbit_signin"], path="/ui/signin")
        data = {"token": tenant.token, "csrf": page_csrf(form.text)}
        answer = await client.post("/ui/signin", data=data, headers=origin)
        assert answer.status_code == 303, answer.text
        session = [c for c in _cookies(answer) if c.startswith("orbit_session=")]
        assert session and "secure" in session[0].lower()
        foreign = await client.get("/ui/signin", headers={**proxy, "X-Forwarded-Host": "evil.test"})
        assert foreign.status_code == 421
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as client:
        # no proxy is trusted by default: the same headers change nothing
        form = await client.get("/ui/signin", headers=proxy)
        assert form.status_code == 200
        assert not any("secure" in c.lower() for c in _cookies(form))
        data = {"token": tenant.token, "csrf": page_csrf(form.text)}
        refused = await client.post("/ui/signin", data=data, headers=origin)
        assert refused.status_code == 403  # its origin is http://127.0.0.1:port, not that one


def ws_url(base: str) -> str:
    return base.replace("http", "ws") + "/v1/workers/connect"


async def _binary_close(base: str, token: str, hello: str | None) -> int:
    async with connect(
        ws_url(base),
        additional_headers={"Authorization": f"Bearer {token}"},
        subprotocols=["orbit.worker.v1"],  # type: ignore[list-item]
        proxy=None,
    ) as ws:
        if hello is not None:
            await ws.send(hello)
            await asyncio.wait_for(ws.recv(), 15)  # hello_ok
        await ws.send(b'{"type":"heartbeat"}')
        with pytest.raises(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 15)
        assert ws.close_code is not None
        return ws.close_code


async def test_a_binary_frame_closes_the_worker_socket_with_4400(
    tenant: Tenant, server_url: str
) -> None:
    import json

    hello = json.dumps(
        {
            "type": "hello",
            "protocol": "orbit.worker.v1",
            "worker": {"name": "binary", "instance_id": "b" * 32},
            "queues": [tenant.queue_id],
            "handlers": [{"handler": "demo.work", "handler_version": "v1"}],
            "capacity": 1,
        }
    )
    assert await _binary_close(server_url, tenant.token, None) == 4400  # as the first frame
    assert await _binary_close(server_url, tenant.token, hello) == 4400  # in the session


async def test_a_refused_sign_in_writes_nothing_and_keeps_the_session(
    browser: httpx.AsyncClient, db: Database, tenant: Tenant, server_url: str
) -> None:
    session_id = await sign_in(browser, tenant.token)
    token_id, submit_only = await tenant.token_for([Permission.SUBMIT])
    form = await browser.get("/ui/signin")
    refused = await browser.post(
        "/ui/signin", data={"token": submit_only, "csrf": page_csrf(form.text)}
    )
    assert refused.status_code == 403 and "tasks:read" in refused.text
    async with db.read() as conn:
        query = sa.select(sa.func.count()).where(console_sessions.c.token_id == token_id)
        assert (await conn.execute(query)).scalar_one() == 0
    assert await signed_in(server_url, session_id)  # not replaced by a refused sign-in


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "orbit.crt", tmp_path / "orbit.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def _healthy(base: str, trust: ssl.SSLContext) -> bool:
    try:
        return httpx.get(f"{base}/healthz", verify=trust, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


async def test_cookies_are_secure_when_orbit_serves_https_itself(
    db_url: str, tenant: Tenant, tmp_path: Path
) -> None:
    cert, key = _certificate(tmp_path)
    port = free_port()
    tls = ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key), "--no-access-log"]
    with (tmp_path / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            serve_command(db_url, port, *tls), stdout=log, stderr=subprocess.STDOUT
        )
    base, trust = f"https://127.0.0.1:{port}", ssl.create_default_context(cafile=str(cert))
    try:
        await asyncio.to_thread(wait_for, lambda: _healthy(base, trust), 30, "orbit over https")
        async with httpx.AsyncClient(base_url=base, verify=trust, timeout=30) as client:
            form = await client.get("/ui/signin")
            assert form.status_code == 200
            assert all("secure" in c.lower() for c in _cookies(form))
            data = {"token": tenant.token, "csrf": page_csrf(form.text)}
            answer = await client.post("/ui/signin", data=data)
            assert answer.status_code == 303, answer.text
            session = [c for c in _cookies(answer) if c.startswith("orbit_session=")]
            assert session and "secure" in session[0].lower()
            assert (await client.get("/ui")).status_code == 200
    finally:
        stop(process)
