"""Workers over WebSocket with real processes (acceptance), on SQLite and MariaDB:
happy path, SIGKILL mid-RUNNING, stale worker fenced after reconnect, attempt timeout, start
deadline, task deadline, unserved handler version, graceful SIGTERM. O-STATE-1."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcall.orbit.domain.tokens import generate_secret
from tests.support import orbit_workers
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import (
    WorkerProcess,
    attempts,
    get_task,
    in_seconds,
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


@pytest.fixture(scope="module", params=KINDS)
def exec_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_url(request.param, tmp_path_factory.mktemp("orbit-workers"), migrated=True) as url:
        yield url


def worker(
    tenant: Tenant, tmp_path: Path, name: str = "w", url: str | None = None, **options: Any
) -> WorkerProcess:
    return WorkerProcess(
        url or tenant.base_url,
        tenant.token,
        [tenant.queue_id],
        tmp_path / f"{name}.log",
        name=name,
        **options,
    )


async def test_happy_path_mixed_outcomes_o_state_1(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """LEASED → RUNNING → SUCCEEDED / FAILED / NEEDS_REVIEW / retried, results exact."""
    cli = ("-m", "agentcall.orbit", "worker")  # the documented `orbit worker --app module:registry`
    with workers(worker(tenant, tmp_path, concurrency=4, entry=cli)) as (proc,):
        await proc.connected()
        ids = {
            "ok": await submit(http, tenant, payload={"echo": 9007199254740993, "evidence": True}),
            "sync": await submit(http, tenant, handler="demo.sync", payload={"echo": 1.10}),
            "retry": await submit(
                http,
                tenant,
                recovery_safety="IDEMPOTENT",
                retry={"max_attempts": 3, "initial_delay_ms": 1},
                payload={"outcome": "retryable", "succeed_from_attempt": 2},
            ),
            "fatal": await submit(http, tenant, payload={"outcome": "fatal"}),
            "review": await submit(http, tenant, payload={"outcome": "review"}),
            "crash": await submit(http, tenant, payload={"outcome": "crash"}),
        }
        final = {k: await wait_state(http, tenant, v, TERMINAL) for k, v in ids.items()}
    assert {k: v["state"] for k, v in final.items()} == {
        "ok": "SUCCEEDED",
        "sync": "SUCCEEDED",
        "retry": "SUCCEEDED",
        "fatal": "FAILED",
        "review": "NEEDS_REVIEW",
        "crash": "FAILED",
    }
    ok = await http.get(f"/v1/tasks/{ids['ok']}", headers=tenant.headers())
    assert '"echo":9007199254740993' in ok.text and '"exact":1.10' in ok.text
    sync = await http.get(f"/v1/tasks/{ids['sync']}", headers=tenant.headers())
    assert '"echo":1.1,' in sync.text and '"exact":1.10' in sync.text
    assert final["retry"]["attempt_count"] == 2 and final["retry"]["revision"] == "7"
    assert final["fatal"]["error"]["code"] == "HANDLER_FAILED"
    assert final["fatal"]["attempt_error"] == {
        "code": "bad_input",
        "message": "the input cannot be processed",
        "retryable": False,
    }
    # an unexpected exception of a RECONCILE_ONLY task is not retried
    assert final["crash"]["attempt_error"]["retryable"] is False
    history = await attempts(http, tenant, ids["retry"])
    assert [(a["number"], a["state"]) for a in history] == [(1, "FAILED"), (2, "SUCCEEDED")]
    assert history[0]["error"]["retryable"] is True
    assert history[1]["task_outcome"] == {"state": "SUCCEEDED", "revision": "7"}
    assert history[1]["worker"]["name"] == "w" and history[1]["duration_ms"] >= 0
    first = (await attempts(http, tenant, ids["ok"]))[0]["id"]
    detail = await http.get(f"/v1/tasks/{ids['ok']}/attempts/{first}", headers=tenant.headers())
    evidence = detail.json()["data"]["evidence"]
    assert [(e["key"], e["kind"], e["data"]) for e in evidence] == [
        ("note-1", "note", {"attempt": 1})
    ]


async def test_sigkill_mid_running_reconcile_only_goes_to_review_idempotent_is_released_o_state_1(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A killed worker: RECONCILE_ONLY → NEEDS_REVIEW (never re-run blindly, evidence kept);
    IDEMPOTENT → re-leased to another worker and finished."""
    victim = worker(tenant, tmp_path, "victim")
    with workers(victim):
        await victim.connected()
        charge = await submit(
            http, tenant, handler="demo.charge", payload={"sleep_ms": 60_000, "amount": 12.5}
        )
        convert = await submit(
            http,
            tenant,
            recovery_safety="IDEMPOTENT",
            retry={"max_attempts": 2, "initial_delay_ms": 1},
            payload={"sleep_ms": 60_000, "fast_from_attempt": 2},
        )
        for task_id in (charge, convert):
            await wait_state(http, tenant, task_id, {"RUNNING"})

        async def evidence_recorded() -> bool:
            return (await attempts(http, tenant, charge))[0]["evidence_count"] == 1

        await wait_until(evidence_recorded, 10, "the charge evidence")
        with workers(worker(tenant, tmp_path, "rescuer")) as (rescuer,):
            await rescuer.connected()
            victim.signal(signal.SIGKILL)
            review = await wait_state(http, tenant, charge, TERMINAL)
            done = await wait_state(http, tenant, convert, TERMINAL)
            await asyncio.sleep(0.3)
            still = await get_task(http, tenant, charge)
    assert review["state"] == "NEEDS_REVIEW"
    assert review["error"]["code"] == "ATTEMPT_LOST"
    assert done["state"] == "SUCCEEDED"
    assert [a["state"] for a in await attempts(http, tenant, convert)] == ["LOST", "SUCCEEDED"]
    assert still["state"] == "NEEDS_REVIEW"  # the rescuer never re-ran the charge
    lost = await attempts(http, tenant, charge)
    assert [(a["state"], a["end_reason"], a["evidence_count"]) for a in lost] == [
        ("LOST", "LEASE_EXPIRED", 1)
    ]


async def test_stale_worker_after_reconnect_is_fenced(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path, exec_url: str
) -> None:
    """The link of worker A is cut past its lease; B re-runs the IDEMPOTENT task; when A comes
    back its hello reports the attempt lost and its late result is refused (LEASE_LOST)."""
    proxy = TcpProxy.for_url(exec_url).start()
    stale = worker(tenant, tmp_path, "stale", url=proxy.url(exec_url), concurrency=1)
    with workers(stale):
        await stale.connected()
        task_id = await submit(
            http,
            tenant,
            recovery_safety="IDEMPOTENT",
            retry={"max_attempts": 2, "initial_delay_ms": 1},
            payload={"sleep_ms": 20_000, "fast_from_attempt": 2},
        )
        await wait_state(http, tenant, task_id, {"RUNNING"})
        with workers(worker(tenant, tmp_path, "fresh")) as (fresh,):
            await fresh.connected()
            proxy.cut()
            done = await wait_state(http, tenant, task_id, TERMINAL)
            proxy.restore()  # A reconnects and learns that its attempt is gone

            async def fenced() -> bool:
                return "LEASE_LOST" in stale.log() or "attempt lost" in stale.log()

            await wait_until(fenced, 30, "the stale worker to be fenced")
        final = await get_task(http, tenant, task_id)
        proxy.close()
    assert done["state"] == final["state"] == "SUCCEEDED"
    history = await attempts(http, tenant, task_id)
    assert [a["state"] for a in history] == ["LOST", "SUCCEEDED"]
    assert history[1]["worker"]["name"] == "fresh"
    assert final["result"]["attempt"] == 2


async def test_short_outage_keeps_the_lease_and_the_result_is_resent(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path, exec_url: str
) -> None:
    """A reconnect within the disconnect grace keeps the attempt (hello re-binds it)."""
    proxy = TcpProxy.for_url(exec_url).start()
    with workers(worker(tenant, tmp_path, "blip", url=proxy.url(exec_url))) as (proc,):
        await proc.connected()
        task_id = await submit(http, tenant, payload={"sleep_ms": 1500})
        await wait_state(http, tenant, task_id, {"RUNNING"})
        proxy.cut()
        proxy.restore()
        done = await wait_state(http, tenant, task_id, TERMINAL)
        proxy.close()
    assert done["state"] == "SUCCEEDED"
    assert [a["state"] for a in await attempts(http, tenant, task_id)] == ["SUCCEEDED"]


async def test_attempt_timeout(tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path) -> None:
    """Attempt deadline passed while RUNNING: RECONCILE_ONLY → NEEDS_REVIEW; IDEMPOTENT with
    its budget spent → FAILED; the worker is told to cancel."""
    with workers(worker(tenant, tmp_path)) as (proc,):
        await proc.connected()
        timeout = {"max_attempts": 1, "attempt_timeout_ms": 800}
        recon = await submit(http, tenant, retry=timeout, payload={"sleep_ms": 30_000})
        idem = await submit(
            http, tenant, retry=timeout, recovery_safety="IDEMPOTENT", payload={"sleep_ms": 30_000}
        )
        review = await wait_state(http, tenant, recon, TERMINAL)
        failed = await wait_state(http, tenant, idem, TERMINAL)
    assert (review["state"], review["error"]["code"]) == ("NEEDS_REVIEW", "ATTEMPT_TIMED_OUT")
    assert (failed["state"], failed["error"]["code"]) == ("FAILED", "ATTEMPTS_EXHAUSTED")
    history = await attempts(http, tenant, recon)
    assert [(a["state"], a["end_reason"]) for a in history] == [("TIMED_OUT", "ATTEMPT_TIMEOUT")]


async def test_deadlines_and_unserved_versions(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Start deadline passed → FAILED without running; task deadline passed → FAILED; a
    handler version nobody serves stays WAITING while served work completes."""
    unserved = await submit(http, tenant, handler_version="v9")
    late_start = await submit(http, tenant, handler_version="v9", start_deadline_at=in_seconds(1))
    late_task = await submit(
        http, tenant, handler_version="v9", task_timeout_ms=1200, retry={"attempt_timeout_ms": 1000}
    )
    with workers(worker(tenant, tmp_path)) as (proc,):
        await proc.connected()
        served = await submit(http, tenant)
        assert (await wait_state(http, tenant, served, TERMINAL))["state"] == "SUCCEEDED"
        start = await wait_state(http, tenant, late_start, TERMINAL)
        deadline = await wait_state(http, tenant, late_task, TERMINAL)
        waiting = await get_task(http, tenant, unserved)
    assert (start["state"], start["error"]["code"]) == ("FAILED", "START_DEADLINE_EXCEEDED")
    assert (deadline["state"], deadline["error"]["code"]) == ("FAILED", "DEADLINE_EXCEEDED")
    assert await attempts(http, tenant, late_start) == []
    assert waiting["state"] == "WAITING" and waiting["revision"] == "1"


async def test_running_at_task_deadline(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The attempt deadline is capped by the task deadline: RECONCILE_ONLY → NEEDS_REVIEW
    (unknown outcome), IDEMPOTENT with budget left → FAILED DEADLINE_EXCEEDED."""
    with workers(worker(tenant, tmp_path)) as (proc,):
        await proc.connected()
        short = {"task_timeout_ms": 1500, "retry": {"max_attempts": 3, "attempt_timeout_ms": 1500}}
        recon = await submit(http, tenant, payload={"sleep_ms": 30_000}, **short)
        idem = await submit(
            http, tenant, recovery_safety="IDEMPOTENT", payload={"sleep_ms": 30_000}, **short
        )
        review = await wait_state(http, tenant, recon, TERMINAL)
        failed = await wait_state(http, tenant, idem, TERMINAL)
    assert (review["state"], review["error"]["code"]) == ("NEEDS_REVIEW", "ATTEMPT_TIMED_OUT")
    assert (failed["state"], failed["error"]["code"]) == ("FAILED", "DEADLINE_EXCEEDED")


async def test_sigterm_finishes_short_work_and_hands_back_long_work(
    tenant: Tenant, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Graceful shutdown: a handler that ends within the grace period reports its result; one
    that does not is cancelled and handed back (RECONCILE_ONLY → NEEDS_REVIEW, never lost
    silently); the process exits 0."""
    with workers(worker(tenant, tmp_path, grace=1.0)) as (proc,):
        await proc.connected()
        short = await submit(http, tenant, payload={"sleep_ms": 500})
        long = await submit(http, tenant, handler="demo.charge", payload={"sleep_ms": 60_000})
        for task_id in (short, long):
            await wait_state(http, tenant, task_id, {"RUNNING"})
        proc.signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 20) == 0
        finished = await wait_state(http, tenant, short, TERMINAL)
        handed = await wait_state(http, tenant, long, TERMINAL)
    assert finished["state"] == "SUCCEEDED"
    assert (handed["state"], handed["error"]["code"]) == ("NEEDS_REVIEW", "ATTEMPT_LOST")
    history = await attempts(http, tenant, long)
    assert [(a["state"], a["end_reason"]) for a in history] == [("RELEASED", "RELEASED_SHUTDOWN")]


async def test_a_refused_worker_stops_with_a_message_naming_the_cause(
    tenant: Tenant, tmp_path: Path
) -> None:
    """A token the server refuses is not retried forever: the worker exits 3 and says what to
    fix (a well-formed token the server does not know, so that the server is what refuses it)."""
    unknown = generate_secret()
    proc = WorkerProcess(tenant.base_url, unknown, [tenant.queue_id], tmp_path / "bad.log")
    with workers(proc):
        code = await asyncio.to_thread(proc.wait, 30)
        output = proc.log()
    assert code == 3
    assert "HTTP 401" in output and "UNAUTHENTICATED" in output
