"""Run the real ``cell serve`` process for tests, and a TCP proxy that can cut links."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

CELL = Path(sys.executable).with_name("cell")
TIME_SCALE = 0.01

SCRIPT: dict[str, Any] = {
    "version": 1,
    "rules": [
        {
            "match": {"glob": "answer-*"},
            "outcome": "answered",
            "ring_ms": 1000,
            "turns": ["Hello?", "Tell me more."],
        },
        {"match": {"glob": "busy-*"}, "outcome": "busy", "ring_ms": 300},
        {"match": {"glob": "noans-*"}, "outcome": "no_answer"},
        {"match": {"glob": "reject-*"}, "outcome": "rejected", "ring_ms": 2000},
        {"match": {"glob": "fail-*"}, "outcome": "failed", "reason_code": "sip_503"},
        {
            "match": {"glob": "optout-*"},
            "outcome": "answered",
            "turns": ["Who is this?", "Please stop calling me."],
        },
        {"match": {"glob": "norec-*"}, "outcome": "answered", "turns": ["Hi"], "recording": False},
        {
            "match": {"glob": "long-*"},
            "outcome": "answered",
            "ring_ms": 500,
            "talk_ms": 3_600_000,
            "turns": ["Hello?"],
        },
    ],
    "default": {"outcome": "answered", "turns": ["Hello?"]},
}


class CellProcess:
    """One ``cell serve --mode sim`` subprocess on its own data dir."""

    def __init__(
        self,
        data_dir: Path,
        *,
        time_scale: float = TIME_SCALE,
        port: int = 0,
        args: Sequence[str] = (),
    ):
        self.data_dir = data_dir
        self.args = list(args)  # more options of cell serve
        self.time_scale = time_scale
        self.port = port
        self.script = data_dir.parent / f"{data_dir.name}-script.json"
        self.script.write_text(json.dumps(SCRIPT))
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log = data_dir.parent / f"{data_dir.name}.log"

    def command(self) -> list[str]:
        return [
            str(CELL),
            "serve",
            "--mode",
            "sim",
            "--script",
            str(self.script),
            "--http-port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
            "--time-scale",
            str(self.time_scale),
            "--log-format",
            "json",
            *self.args,
        ]

    def start(self, timeout_s: float = 20.0) -> str:
        url_file = self.data_dir / "cell.url"
        url_file.unlink(missing_ok=True)
        cmd = self.command()
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=os.environ.copy())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cell exited {self.proc.returncode}: {self.log.read_text()}")
            if url_file.exists() and self._healthy(url_file.read_text().strip()):
                self.url = url_file.read_text().strip()
                self.port = int(self.url.rsplit(":", 1)[1])
                return self.url
            time.sleep(0.05)
        raise RuntimeError(f"cell did not become healthy: {self.log.read_text()[-2000:]}")

    @staticmethod
    def _healthy(url: str) -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def originate_log(self) -> list[dict[str, Any]]:
        path = self.data_dir / "originate.log"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
