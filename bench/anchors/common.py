"""What the anchor drains share: the mark file their no-op tasks append to, /proc CPU, and
the one JSON line each drain prints for bench/anchors/run.py.

Every drain's task does the same one thing: append one byte to the mark file (an O_APPEND
descriptor each worker process opens once). The drain's time runs from the first mark to the
n-th (polled every 5 ms), like Orbit's drain from the first lease to the last completion:
workers' start-up is left out. CPU is read from /proc (user + system, a process and its
live children) at the first mark and at the last, so it is the drain's alone.

Only the standard library: this module runs in the anchors' own virtual environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

MARK_ENV = "ANCHOR_MARK_FILE"
_fd: int | None = None


def mark() -> None:
    """One task done: one byte appended to the mark file."""
    global _fd
    if _fd is None:
        _fd = os.open(os.environ[MARK_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_fd, b".")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live children (Linux /proc), seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    children = subprocess.run(
        ["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(int(child)) for child in children)


def oldest(name: str) -> int | None:
    """The oldest process named `name` (pgrep -o -x), if any."""
    found = subprocess.run(
        ["pgrep", "-o", "-x", name], capture_output=True, text=True, check=False
    ).stdout.split()
    return int(found[0]) if found else None


@dataclass(frozen=True)
class Drain:
    """One drain: tasks, seconds first mark → last, CPU seconds of its parts."""

    name: str
    n: int
    seconds: float
    cpu: dict[str, float]
    load: tuple[float, float, float]

    @property
    def rate(self) -> float:
        return self.n / self.seconds

    def cpu_ms_per_task(self) -> float:
        return sum(self.cpu.values()) * 1000 / self.n

    def line(self) -> str:
        parts = ", ".join(f"{k} {v * 1000 / self.n:.2f}" for k, v in self.cpu.items())
        return (
            f"{self.name:14} {self.n} tasks in {self.seconds:6.2f} s = {self.rate:8.1f} tasks/s; "
            f"CPU per task {self.cpu_ms_per_task():.2f} ms ({parts}); "
            f"load at start {self.load[0]:.2f}"
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Drain:
        obj = json.loads(text)
        return cls(obj["name"], obj["n"], obj["seconds"], obj["cpu"], tuple(obj["load"]))


def watch(path: Path, n: int, pids: dict[str, int], timeout: float = 600) -> tuple[float, dict]:
    """Wait for `n` marks in `path`: seconds first mark → n-th, CPU of `pids` in between."""
    deadline = time.monotonic() + timeout
    while not path.exists() or path.stat().st_size == 0:
        if time.monotonic() > deadline:
            raise SystemExit(f"no task ran within {timeout:.0f} s")
        time.sleep(0.005)
    first = time.monotonic()
    before = {k: cpu_seconds(pid) for k, pid in pids.items()}
    while (done := path.stat().st_size) < n:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {done}/{n} tasks ran within {timeout:.0f} s")
        time.sleep(0.005)
    seconds = time.monotonic() - first
    return seconds, {k: cpu_seconds(pid) - before[k] for k, pid in pids.items()}


def load() -> tuple[float, float, float]:
    one, five, fifteen = os.getloadavg()
    return (round(one, 2), round(five, 2), round(fifteen, 2))
