"""Load and invariants shared by the Orbit fault tests: submitters that resend with the same
idempotency key until answered (as the contract tells a client to after a 503 or a transport
error), a reader, and the check that no task was lost or run twice."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field

import httpx

from tests.support.orbit_server import Tenant
from tests.support.orbit_workers import attempts, task_body
from tests.support.waiting import wait_until

BACK_WITHIN_S = 1.0
FINAL = {"SUCCEEDED", "NEEDS_REVIEW", "FAILED", "CANCELLED"}


@dataclass
class Load:
    """Submits with keys (resent with the same key until answered 200/201) and reads, each
    client pausing `pace` seconds between requests and backing off exponentially (up to 1 s)
    after a failure, as a client of a service in trouble should; records (monotonic time
    sent, status; 0 for a transport error) of every request."""

    http: httpx.AsyncClient
    tenant: Tenant
    pace: float = 0.0
    submits: list[tuple[float, int]] = field(default_factory=list)
    reads: list[tuple[float, int]] = field(default_factory=list)
    tasks: dict[str, str] = field(default_factory=dict)  # key -> task id

    async def warm(self, submits: int = 24, reads: int = 12) -> None:
        """A burst that opens many pooled connections in the server."""
        bodies = [
            (os.urandom(8).hex(), task_body(self.tenant, payload={"sleep_ms": 20}))
            for _ in range(submits)
        ]
        path = f"/v1/tasks?queue_id={self.tenant.queue_id}&limit=5"
        await asyncio.gather(
            *(self._post(key, body) for key, body in bodies),
            *(self.http.get(path, headers=self.tenant.headers()) for _ in range(reads)),
        )

    async def submitter(self) -> None:
        failures = 0
        while True:
            key = os.urandom(8).hex()
            body = task_body(self.tenant, payload={"sleep_ms": 20})
            while key not in self.tasks:
                sent = time.monotonic()
                status = await self._post(key, body)
                self.submits.append((sent, status))
                failures = 0 if status in (200, 201) else failures + 1
                await asyncio.sleep(_pause(self.pace, failures))

    async def _post(self, key: str, body: dict[str, object]) -> int:
        try:
            response = await self.http.post(
                "/v1/tasks", json=body, headers=self.tenant.headers(key=key)
            )
        except httpx.TransportError:
            return 0
        assert response.status_code in (200, 201, 503), response.text
        if response.status_code in (200, 201):
            self.tasks[key] = response.json()["data"]["task"]["id"]
        return response.status_code

    async def reader(self) -> None:
        failures = 0
        while True:
            sent = time.monotonic()
            try:
                path = f"/v1/tasks?queue_id={self.tenant.queue_id}&limit=5"
                response = await self.http.get(path, headers=self.tenant.headers())
                status = response.status_code
                assert status in (200, 503), response.text
            except httpx.TransportError:
                status = 0
            self.reads.append((sent, status))
            failures = 0 if status == 200 else failures + 1
            await asyncio.sleep(_pause(self.pace, failures))


def _pause(pace: float, failures: int) -> float:
    return pace if failures == 0 else min(1.0, 0.05 * 2 ** (failures - 1))


def recovery(requests: list[tuple[float, int]], ready: float, what: str) -> float:
    """Seconds from `ready` to the first success sent after it; every request sent later than
    BACK_WITHIN_S after `ready` succeeded."""
    after = [(sent, status) for sent, status in requests if sent >= ready]
    first_ok = next((sent for sent, status in after if status in (200, 201)), None)
    assert first_ok is not None, f"no {what} succeeded after the restart"
    failed_late = [
        (round(sent - ready, 3), status)
        for sent, status in after
        if sent > ready + BACK_WITHIN_S and status not in (200, 201)
    ]
    assert failed_late == [], f"{what} still failing after {BACK_WITHIN_S} s: {failed_late[:5]}"
    return first_ok - ready


async def every_task_once(http: httpx.AsyncClient, tenant: Tenant, load: Load) -> None:
    """No task lost (one task per key, each reaches a final state) or run twice (at most one
    started attempt per task: they are RECONCILE_ONLY, a lost one goes to NEEDS_REVIEW)."""
    ids = list(load.tasks.values())
    assert len(set(ids)) == len(ids)
    states: dict[str, str] = {}

    async def settled() -> bool:
        for task_id in ids:
            if states.get(task_id) not in FINAL:
                response = await http.get(f"/v1/tasks/{task_id}", headers=tenant.headers())
                states[task_id] = response.json()["data"]["state"]
        return all(state in FINAL for state in states.values())

    await wait_until(settled, 60, "every task to reach a final state", step=0.5)
    for task_id in ids:
        started = [a for a in await attempts(http, tenant, task_id) if "started_at" in a]
        assert len(started) <= 1, (task_id, started)
        if states[task_id] == "SUCCEEDED":
            assert len(started) == 1 and started[0]["state"] == "SUCCEEDED"
    counts = {state: list(states.values()).count(state) for state in sorted(set(states.values()))}
    print(f"{len(ids)} tasks: {counts}")
