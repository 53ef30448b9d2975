"""A MariaDB server of the test's own (its own data directory, port and socket under the
test's temporary folder), to be killed with SIGKILL and restarted without touching the
shared one of `scripts/services`. Started the way `scripts/services` starts it, with
`--skip-grant-tables` (the test connects as root over TCP, no accounts to set up)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.ports import free_port


def _binary(name: str) -> str | None:
    return shutil.which(name) or (
        f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None
    )


class OwnMariaDB:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.datadir = root / "data"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        daemon = _binary("mariadbd")
        if daemon is None or _binary("mariadb-install-db") is None:
            pytest.skip("mariadb-server is not installed (mariadbd, mariadb-install-db)")
        self.daemon = daemon

    @property
    def url(self) -> str:
        return f"mysql+asyncmy://root@127.0.0.1:{self.port}/orbit"

    def install(self) -> None:
        command = [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={self.datadir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ]
        if os.getuid() == 0:
            command.append("--user=root")
        with (self.root / "install.log").open("wb") as log:
            subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT, timeout=120)

    def start(self) -> float:
        """Start the server; the monotonic time at which it accepted a connection."""
        command = [
            self.daemon,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--socket={self.root / 'mariadb.sock'}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={self.root / 'mariadb.pid'}",
            "--skip-name-resolve",
            "--skip-grant-tables",
            f"--log-error={self.root / 'error.log'}",
            "--innodb-flush-log-at-trx-commit=1",
            "--innodb-buffer-pool-size=64M",
            "--max-connections=300",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_bin",
        ]
        if os.getuid() == 0:
            command.append("--user=root")
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        return self.wait_accepting()

    def wait_accepting(self, timeout: float = 60) -> float:
        """Poll every 10 ms until the server sends its greeting on a new TCP connection."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"mariadbd exited: {self.error_log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.settimeout(1)
                    if sock.recv(16):  # the handshake packet
                        return time.monotonic()
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError(f"mariadbd did not accept connections: {self.error_log()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush beyond what was committed (crash recovery next)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def error_log(self) -> str:
        path = self.root / "error.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""
