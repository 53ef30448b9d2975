"""A second checkout beside one whose local services run (README, "A second checkout"):
`scripts/services start` there stops at the first taken port naming both ways out (its own
services on other ports with the AGENTCALL_*_PORT variables, or AGENTCALL_SERVICES_REUSE=1);
with AGENTCALL_SERVICES_REUSE=1 it uses the running services, `status` says so, `env` prints
the same addresses as the first checkout, and its `stop` leaves them running.

The second checkout is a copy of scripts/services in a temporary directory; the running
services are this checkout's (`scripts/services start`)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.rabbitmq, pytest.mark.mariadb, pytest.mark.s3]

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "services"


def first_checkout_env() -> dict[str, str]:
    """This environment with the ports this checkout's services were started on."""
    env = dict(os.environ)
    ports = ROOT / "var" / "services" / "ports"
    if ports.exists():
        for line in ports.read_text().splitlines():
            name, _, value = line.partition("=")
            env.setdefault(name, value)
    return env


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def second(tmp_path: Path, command: str, **extra: str) -> subprocess.CompletedProcess[str]:
    checkout = tmp_path / "second-checkout"
    (checkout / "scripts").mkdir(parents=True, exist_ok=True)
    shutil.copy2(SCRIPT, checkout / "scripts" / "services")
    return subprocess.run(
        [str(checkout / "scripts" / "services"), command],
        env=first_checkout_env() | extra,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_taken_port_names_both_ways_out(tmp_path: Path) -> None:
    port = first_checkout_env().get("AGENTCALL_RABBITMQ_PORT", "5672")
    done = second(tmp_path, "start", AGENTCALL_SERVICES_REUSE="0")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"[services] error: port {port} is taken by another process; set "
        "AGENTCALL_RABBITMQ_PORT for this checkout's own, or AGENTCALL_SERVICES_REUSE=1 to use "
        "the one running there"
    )


def test_a_second_checkout_reuses_the_running_services(tmp_path: Path) -> None:
    reuse = {"AGENTCALL_SERVICES_REUSE": "1"}
    started = second(tmp_path, "start", **reuse)
    assert started.returncode == 0, started.stderr
    for name in ("RabbitMQ", "MariaDB", "SeaweedFS S3"):
        assert re.search(rf"^\[services\] {name}: reusing 127\.0\.0\.1:\d+$", started.stderr, re.M)
    status = second(tmp_path, "status", **reuse)
    assert status.returncode == 0, status.stdout
    lines = status.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["rabbitmq", "up"],
        ["mariadb", "up"],
        ["s3", "up"],
    ]
    assert all(line.endswith("(reused)") for line in lines)
    first = subprocess.run(
        [str(SCRIPT), "env"], env=first_checkout_env(), capture_output=True, text=True, check=True
    )
    assert second(tmp_path, "env", **reuse).stdout == first.stdout
    stopped = second(tmp_path, "stop", **reuse)
    assert stopped.returncode == 0, stopped.stderr
    env = first_checkout_env()
    for variable, default in (
        ("AGENTCALL_RABBITMQ_PORT", "5672"),
        ("AGENTCALL_MARIADB_PORT", "3306"),
        ("AGENTCALL_S3_PORT", "8333"),
    ):
        assert listening(int(env.get(variable, default))), f"{variable}: stopped by the copy"
    assert second(tmp_path, "status").returncode == 1  # without reuse: none of its own run


def test_the_readme_says_both_ways_with_every_port_variable() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### A second checkout beside running services", 1)[1].split("\n## ")[0]
    assert "AGENTCALL_SERVICES_REUSE=1 make demo" in section
    header = SCRIPT.read_text().split("set -euo pipefail", 1)[0]
    variables = set(re.findall(r"AGENTCALL_[A-Z0-9_]+_PORT", header))
    assert len(variables) == 7
    exported = set(re.findall(r"(AGENTCALL_[A-Z0-9_]+_PORT)=\d+", section))
    assert exported == variables
