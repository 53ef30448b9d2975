"""A real worker process reaches a real Orbit server through the shared TCP proxy: refused,
cut and slowed links are retried by the worker's one reconnect policy
(`sdk/worker/link.ReconnectPolicy`) and the work goes on once the link is back (a task
submitted while the worker is away is served after it reconnects)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import orbit_workers
from tests.support.orbit_databases import fresh_url
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import (
    WorkerProcess,
    submit,
    wait_state,
    workers,
)
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration
TERMINAL = {"SUCCEEDED", "FAILED", "NEEDS_REVIEW", "CANCELLED"}
# The server of this module on its `exec_db_url` (below), a tenant and an HTTP client of it.
exec_url, tenant, http = orbit_workers.exec_url, orbit_workers.tenant, orbit_workers.http


@pytest.fixture(scope="module")
def exec_db_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fresh_url("sqlite", tmp_path_factory.mktemp("orbit-reconnect"), migrated=True) as url:
        yield url


@pytest.fixture
def proxy(exec_url: str) -> Iterator[TcpProxy]:
    with TcpProxy.for_url(exec_url) as relay:
        yield relay


def through(proxy: TcpProxy, tenant: Tenant, tmp_path: Path, name: str) -> WorkerProcess:
    url = proxy.url(tenant.base_url)
    return WorkerProcess(url, tenant.token, [tenant.queue_id], tmp_path / f"{name}.log", name=name)


async def failed_connects(proc: WorkerProcess, at_least: int) -> None:
    async def enough() -> bool:
        return proc.log().count("cannot connect") >= at_least

    await wait_until(enough, 30, f"{at_least} refused connections logged", step=0.1)


async def test_a_refused_server_is_retried_until_it_accepts(
    proxy: TcpProxy, tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    proxy.cut()  # nothing listens yet
    with workers(through(proxy, tenant, tmp_path, "refused")) as (proc,):
        await failed_connects(proc, 3)
        task_id = await submit(http, tenant)
        proxy.restore()
        await proc.connected()
        done = await wait_state(http, tenant, task_id, TERMINAL)
    assert done["state"] == "SUCCEEDED"


async def test_a_cut_link_is_retried_and_work_submitted_meanwhile_is_served(
    proxy: TcpProxy, tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    with workers(through(proxy, tenant, tmp_path, "cut")) as (proc,):
        await proc.connected()
        proxy.cut()  # the open connection dies and new ones are refused
        await failed_connects(proc, 2)
        task_id = await submit(http, tenant)
        proxy.restore()
        done = await wait_state(http, tenant, task_id, TERMINAL)
        assert proc.log().count('"connected"') >= 2, "served after a reconnection"
    assert done["state"] == "SUCCEEDED"


async def test_a_slow_link_still_connects_and_serves(
    proxy: TcpProxy, tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    proxy.delay_s = 0.2  # every chunk held: a handshake of several round trips, still < 10 s
    with workers(through(proxy, tenant, tmp_path, "slow")) as (proc,):
        await proc.connected()
        done = await wait_state(http, tenant, await submit(http, tenant), TERMINAL)
    assert done["state"] == "SUCCEEDED"
