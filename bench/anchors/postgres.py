"""A throwaway PostgreSQL cluster for the Procrastinate anchor, from Debian's `postgresql`.

    with postgres_cluster() as conninfo: ...

``initdb`` in a fresh temporary directory, then ``pg_ctl start`` on a free loopback port
with its socket in that directory: no systemd unit, no cluster of the system's, nothing left
behind (``pg_ctl stop -m fast`` and the directory removed). Durable as Orbit's MariaDB is:
``fsync`` and ``synchronous_commit`` on (the defaults). PostgreSQL refuses to run as root,
so as root the cluster runs as the ``postgres`` user the package creates. The binaries are
found under /usr/lib/postgresql/<version>/bin (``make bench-anchors`` installs the package).

Only the standard library: this module runs in the anchors' own virtual environment.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def bindir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if not found:
        raise SystemExit("PostgreSQL not found: apt-get install -y postgresql (make bench-anchors)")
    return found[-1].parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """A running cluster for the time of the block; yields its libpq conninfo."""
    bin_ = bindir()
    tmp = Path(tempfile.mkdtemp(prefix="anchors-pg-"))
    data, port = tmp / "data", free_port()
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres", "postgres")
    run = {"check": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.STDOUT}
    try:
        subprocess.run(
            _as_owner(
                [
                    str(bin_ / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                ]
            ),
            **run,  # type: ignore[arg-type]
        )
        options = f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c max_connections=100"
        subprocess.run(
            _as_owner(
                [str(bin_ / "pg_ctl"), "-D", str(data), "-l", str(tmp / "log"), "-o", options]
                + ["-w", "start"]
            ),
            **run,  # type: ignore[arg-type]
        )
        try:
            yield f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
        finally:
            subprocess.run(
                _as_owner([str(bin_ / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def postmaster_pid(conninfo: str) -> int | None:
    """The cluster's postmaster, the oldest `postgres` process listening on its port."""
    port = conninfo.split("port=", 1)[1].split()[0]
    found = subprocess.run(
        ["pgrep", "-o", "-f", f"postgres .*-p {port}"], capture_output=True, text=True, check=False
    ).stdout.split()
    return int(found[0]) if found else None
