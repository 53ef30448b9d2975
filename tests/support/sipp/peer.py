"""Run Debian's sipp as the carrier (UAS) for one scenario of this folder.

Scenario files are templates: ``{audio}`` (raw A-law file played as RTP with
sipp's rtp_stream), ``{talk_ms}``, ``{wait_ms}``, ``{user}``, ``{password}``.
sipp's own ``-key`` values are not expanded inside XML attributes, hence this.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.ports import free_port_pair

HERE = Path(__file__).parent


def require_sipp() -> str:
    path = shutil.which("sipp")
    if path is None:
        pytest.skip("sipp is not installed (Debian package sip-tester)")
    return path


@dataclass
class SippResult:
    returncode: int
    stdout: str
    stderr: str
    errors: str


class SippPeer:
    def __init__(
        self,
        scenario: str,
        workdir: Path,
        *,
        transport: str = "udp",
        calls: int = 1,
        **values: object,
    ) -> None:
        self.port = free_port_pair()
        self.transport = transport
        self.calls = calls
        defaults: dict[str, object] = {
            "audio": "",
            "talk_ms": 1000,
            "wait_ms": 20000,
            "user": "",
            "password": "",
        }
        text = (HERE / scenario).read_text().format(**{**defaults, **values})
        self.scenario = workdir / scenario
        self.scenario.write_text(text)
        self.workdir = workdir
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        args = [
            require_sipp(),
            "-sf",
            str(self.scenario),
            "-i",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-mi",
            "127.0.0.1",
            "-mp",
            str(self.port + 2),
            "-m",
            str(self.calls),
            "-t",
            "u1" if self.transport == "udp" else "t1",
            "-nostdin",
            "-trace_err",
            "-trace_stat",
            "-fd",
            "1",
            "-timeout",
            "60s",
            "-timeout_error",
        ]
        self._proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=self.workdir,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        await asyncio.sleep(0.15)  # let it bind

    async def wait(self, timeout: float = 30.0) -> SippResult:
        assert self._proc is not None
        out, err = await asyncio.wait_for(self._proc.communicate(), timeout)
        errors = "".join(p.read_text() for p in self.workdir.glob("*_errors.log"))
        return SippResult(self._proc.returncode or 0, out.decode(), err.decode(), errors)

    async def kill(self) -> None:
        """SIGKILL and reap it: an unreaped child's transport outlives the test's event loop
        and fails when the garbage collector closes it."""
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()
