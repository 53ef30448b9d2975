"""`orbit serve` as an operator starts it: HTTPS with its own certificate, settings from a TOML
file and the environment, "ready" only once the socket listens (a taken port is one line and
no "ready"), and a database that cannot be used is one line naming the problem, never a
traceback. Processes only where the process is the point (startup order, TLS, the port); the
database and certificate checks run the commands in this process."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from agentcall.orbit.cli import main
from agentcall.orbit.cli.server import _check_tls
from agentcall.orbit.settings import ServerSettings
from tests.support.ports import free_port
from tests.support.services import mysql_url
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration


def orbit(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcall.orbit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or clean_env(),
    )


def clean_env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ORBIT_")} | extra


@pytest.fixture
def migrated(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'orbit.db'}"
    done = CliRunner().invoke(main, ["migrate", "--database", url])
    assert done.exit_code == 0, done.output
    return url


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "agentcall.orbit", *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def healthy(url: str, verify: ssl.SSLContext | bool = True) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2, verify=verify).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_taken_port_is_one_line_and_never_ready(migrated: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = orbit("serve", "--database", migrated, "--port", str(port), "--log-format", "json")
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: port {port} is in use by another program" in (
        done.stderr
    )
    assert "ready" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def certificate(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "orbit.crt", tmp_path / "orbit.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_https_from_a_config_file_with_the_environment_over_it(
    migrated: str, tmp_path: Path
) -> None:
    cert, key = certificate(tmp_path)
    port, unused = free_port(), free_port()
    config = tmp_path / "orbit.toml"
    config.write_text(
        f'database_url = "{migrated}"\nport = {unused}\nlog_format = "json"\n'
        f'ssl_certfile = "{cert}"\nssl_keyfile = "{key}"\n'
    )
    env = clean_env(ORBIT_CONFIG=str(config), ORBIT_PORT=str(port))
    process = start(["serve"], env, tmp_path / "serve.log")
    try:
        trust = ssl.create_default_context(cafile=str(cert))
        wait_for(lambda: healthy(f"https://127.0.0.1:{port}", trust), 60, "orbit over https")
        text = (tmp_path / "serve.log").read_text()
        assert f"https://127.0.0.1:{port}" in text
        # "ready" only once the socket listens
        assert 0 <= text.index('"msg": "listening"') < text.index('"msg": "orbit api ready"')
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)  # TLS only
    finally:
        stop(process)


def test_a_certificate_that_cannot_be_used_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage.crt"
    garbage.write_text("not a certificate\n")
    cases = [
        (str(tmp_path / "absent.crt"), None, "No such file"),
        (str(garbage), None, "PEM"),
        (None, str(garbage), "needs --ssl-certfile"),
    ]
    for certfile, keyfile, why in cases:
        with pytest.raises(SystemExit) as stopped:
            _check_tls(ServerSettings(ssl_certfile=certfile, ssl_keyfile=keyfile))
        assert stopped.value.code == 1
        line = capsys.readouterr().err.strip()
        assert line.startswith("orbit: error: ") and "\n" not in line and why in line, line


def _mysql(**parts: object) -> str:
    return make_url(mysql_url()).set(**parts).render_as_string(hide_password=False)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: _mysql(password="wrong-password"), "wrong user name or password"),
        (lambda: _mysql(database="orbit_no_such_db"), "does not exist: create it"),
        (lambda: _mysql(port=1), "cannot reach the database"),
        (lambda: "mysql+asyncmy://orbit:orbit@127.0.0.1:port/orbit", "cannot parse"),
        (lambda: "postgresql+asyncpg://u@h/db", "unsupported database URL scheme"),
        (lambda: "sqlite+aiosqlite:////proc/no/such/dir/orbit.db", "cannot open the SQLite file"),
    ],
    ids=["wrong-password", "missing-database", "unreachable", "unparsable", "scheme", "sqlite"],
)
@pytest.mark.mariadb
def test_a_bad_database_url_is_one_line(make: object, expected: str) -> None:
    url = make()  # type: ignore[operator]
    done = CliRunner().invoke(main, ["migrate", "--database", url])
    assert done.exit_code == 1 and isinstance(done.exception, SystemExit), done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orbit: error: "), done.output
    assert expected in lines[0]
    assert "wrong-password" not in lines[0]


@pytest.mark.mariadb
def test_serve_names_a_bad_database_in_one_line() -> None:
    done = orbit(
        "serve", "--port", str(free_port()), "--database", _mysql(password="wrong-password")
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "wrong user name or password" in done.stderr and "Traceback" not in done.stderr


def test_sqlite_runs_with_one_server_process(migrated: str) -> None:
    """A single writer: `--workers 2` on SQLite is refused in one line before anything
    listens."""
    done = CliRunner().invoke(
        main, ["serve", "--database", migrated, "--workers", "2", "--port", str(free_port())]
    )
    assert done.exit_code == 1 and isinstance(done.exception, SystemExit), done.output
    assert done.output.strip().splitlines() == [
        "orbit: error: --workers / ORBIT_WORKERS: SQLite runs with one server process"
    ]
