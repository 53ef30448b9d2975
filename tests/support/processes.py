"""Processes started by a test and stopped at its end (their logs kept in a folder of the
test); free ports are in `tests.support.ports`, waiting in `tests.support.waiting`."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


class Process:
    def __init__(
        self, name: str, argv: list[str], cwd: Path, env: dict[str, str], log: Path
    ) -> None:
        self.name, self.log = name, log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        if self.proc.poll() is None:
            return True
        raise AssertionError(
            f"{self.name} exited with {self.proc.returncode}:\n"
            f"{self.log.read_text(errors='replace')[-3000:]}"
        )

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after 15 s."""
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class Processes:
    """Started processes, stopped in reverse order."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        self.started: list[Process] = []

    def start(self, name: str, argv: list[str], cwd: Path, env: dict[str, str]) -> Process:
        process = Process(name, argv, cwd, env, self.logs / f"{name}.log")
        self.started.append(process)
        return process

    def stop_all(self) -> None:
        for process in reversed(self.started):
            process.stop()
