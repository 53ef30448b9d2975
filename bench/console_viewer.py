"""A console kept open during a benchmark, as a browser tab keeps it: signed in with the
bench's token, it reloads the live part of the overview and of the queue's page every 3 s
(what console.js does), so `--console` measures what an open console costs the server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx

REFRESH_S = 3.0


async def _refresh_forever(base: str, token: str, queue_id: str, counts: list[int]) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        form = (await http.get("/ui/signin")).text  # sets the form's pre-session cookie
        csrf = form.split('name="csrf" value="', 1)[-1].split('"', 1)[0]
        signed = await http.post("/ui/signin", data={"token": token, "csrf": csrf})
        if signed.status_code != 303:
            raise SystemExit(f"console sign-in failed: {signed.status_code}")
        fragment = {"X-Orbit-Fragment": "1"}
        while True:
            for path in ("/ui", f"/ui/queues/{queue_id}"):
                page = await http.get(path, headers=fragment)
                page.raise_for_status()
                counts[0] += 1
            await asyncio.sleep(REFRESH_S)


@contextlib.asynccontextmanager
async def console_open(
    base: str, token: str, queue_id: str, enabled: bool = True
) -> AsyncIterator[list[int]]:
    """While inside, the console refreshes (when `enabled`); yields [pages loaded]."""
    counts = [0]
    if not enabled:
        yield counts
        return
    task = asyncio.create_task(_refresh_forever(base, token, queue_id, counts))
    try:
        yield counts
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        print(f"console   open during the run: {counts[0]} page refreshes", flush=True)
