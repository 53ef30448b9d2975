"""The Dispatcher's console kept open during a benchmark, as a browser tab keeps it: every
refresh interval (the console's own, ``REFRESH_MS``) it loads ``/ui`` and each panel
fragment the page's script fetches, so ``dispatcher_commands.py --console`` measures what
an open console costs the D. Heavier than one tab: a tab loads ``/ui`` once and then only
the fragments."""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx

from agentcall.dispatcher.console.pages import PANELS, REFRESH_MS


@dataclass
class Viewed:
    """What the viewer fetched: one entry per request, its wall time in ms."""

    times_ms: list[float] = field(default_factory=list)
    failures: int = 0

    def line(self) -> str:
        if not self.times_ms:
            return "no request made"
        ordered = sorted(self.times_ms)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        return (
            f"{len(self.times_ms)} requests (/ui and {len(PANELS)} panels every"
            f" {REFRESH_MS / 1000:g} s), median {statistics.median(ordered):.1f} ms,"
            f" p95 {p95:.1f} ms, failures {self.failures}"
        )


def _view(base: str, stop: threading.Event, viewed: Viewed) -> None:
    paths = ["/ui", *(f"/ui/panels/{name}" for name in PANELS)]
    with httpx.Client(base_url=base, timeout=30) as http:
        while not stop.is_set():
            for path in paths:
                started = time.perf_counter()
                try:
                    ok = http.get(path).status_code == 200
                except httpx.TransportError:
                    ok = False
                viewed.times_ms.append((time.perf_counter() - started) * 1000)
                viewed.failures += 0 if ok else 1
            stop.wait(REFRESH_MS / 1000)


@contextlib.contextmanager
def console_open(base: str, enabled: bool = True) -> Iterator[Viewed]:
    """While inside, the console refreshes (when ``enabled``); yields what it fetched."""
    viewed = Viewed()
    if not enabled:
        yield viewed
        return
    stop = threading.Event()
    thread = threading.Thread(target=_view, args=(base, stop, viewed), daemon=True)
    thread.start()
    try:
        yield viewed
    finally:
        stop.set()
        thread.join(30)
