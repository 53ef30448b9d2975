"""`orbit serve`'s settings: a TOML config file under the environment, the command line over
both; the default port clashes with none of the local services; the worker's registry from
the environment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentcall.orbit.cli.server import _settings, serve
from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.domain.tokens import generate_secret
from agentcall.orbit.sdk.settings import ENV_APP
from agentcall.orbit.sdk.worker.cli import worker
from agentcall.orbit.settings import (
    DEFAULT_DATABASE,
    DEFAULT_PORT,
    ServerSettings,
    database_url,
    load,
    read_config,
)

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "orbit.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_config_file_sets_any_variable(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "port = 9100\nworkers = 2\naccess_log = false\n"
        'database_url = "mysql+asyncmy://u:p@h/db"\nlease_ttl_ms = 5000\n',
    )
    settings = load(path, {})
    assert (settings.port, settings.workers, settings.access_log) == (9100, 2, False)
    assert settings.database_url == "mysql+asyncmy://u:p@h/db"
    assert settings.execution.lease_ttl_ms == 5000


def test_an_orbit_table_works_as_well(tmp_path: Path) -> None:
    path = write(tmp_path, '[orbit]\nhost = "0.0.0.0"\nssl_certfile = "/etc/c.pem"\n')
    settings = load(path, {})
    assert settings.host == "0.0.0.0" and settings.ssl_certfile == "/etc/c.pem"


def test_environment_over_file_and_command_line_over_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "port = 9100\npool_size = 3\nworkers = 2\n")
    env = {"ORBIT_PORT": "9200", "ORBIT_POOL_SIZE": "", "ORBIT_CONFIG": str(path)}
    settings = load(None, env)  # the file named by ORBIT_CONFIG
    assert (settings.port, settings.pool_size, settings.workers) == (9200, 3, 2)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    given = _settings(None, {"port": 9300, "workers": None, "database": "sqlite+aiosqlite:///x"})
    assert (given.port, given.workers, given.database_url) == (9300, 2, "sqlite+aiosqlite:///x")


def test_serve_honours_every_variable_it_has_an_option_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The options' defaults never hide a variable (ORBIT_POOL_SIZE and ORBIT_ACCESS_LOG were
    ignored: the command line's defaults won)."""
    env = {
        "ORBIT_POOL_SIZE": "7",
        "ORBIT_ACCESS_LOG": "0",
        "ORBIT_WORKERS": "3",
        "ORBIT_PORT": "9400",
        "ORBIT_HOST": "0.0.0.0",
        "ORBIT_LOG_FORMAT": "json",
        "ORBIT_SSL_CERTFILE": "/c.pem",
        "ORBIT_SSL_KEYFILE": "/k.pem",
        "ORBIT_DATABASE_URL": "sqlite+aiosqlite:////srv/o.db",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ORBIT_CONFIG", raising=False)
    params = serve.make_context("serve", []).params
    settings = _settings(params.pop("config_file"), params)
    assert (settings.pool_size, settings.access_log, settings.workers) == (7, False, 3)
    assert (settings.port, settings.host, settings.log_format) == (9400, "0.0.0.0", "json")
    assert (settings.ssl_certfile, settings.ssl_keyfile) == ("/c.pem", "/k.pem")
    assert settings.database_url == "sqlite+aiosqlite:////srv/o.db"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prot = 1\n", "unknown setting 'prot'"),
        ("port = 0\n", "port must be an integer 1-65535"),
        ("workers = 65\n", "workers must be an integer 1-64"),
        ("port = 1.5\n", "port must be a string, an integer or a boolean"),
        ("port = \n", "not valid TOML"),
        ("orbit = 3\n", "[orbit] must be a table"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SetupError) as info:
        load(write(tmp_path, text), {})
    assert message in info.value.message and str(tmp_path) in info.value.message
    assert "ORBIT_" not in info.value.message


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="cannot read the config file .*No such file"):
        read_config(tmp_path / "absent.toml")


def test_operator_commands_find_the_database_in_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'database_url = "sqlite+aiosqlite:////srv/orbit.db"\n')
    assert database_url({"ORBIT_CONFIG": str(path)}) == "sqlite+aiosqlite:////srv/orbit.db"
    assert database_url({"ORBIT_CONFIG": str(path), "ORBIT_DATABASE_URL": "x"}) == "x"
    assert database_url({}) == DEFAULT_DATABASE


def test_the_default_port_is_used_by_no_local_service() -> None:
    """8080 was the local S3's volume server: `orbit serve` failed after `make demo`."""
    assert ServerSettings().port == DEFAULT_PORT == 7470
    services = (ROOT / "scripts" / "services").read_text()
    taken = {int(port) for port in re.findall(r"_PORT:-(\d+)", services)}
    taken |= {port + 10000 for port in set(taken)}  # SeaweedFS's gRPC ports
    taken |= {8088, 8470, 9470}  # mock SaaS, cell, Dispatcher defaults
    assert taken >= {5672, 3306, 8333, 8080, 8888, 9333}
    assert DEFAULT_PORT not in taken


def test_the_worker_reads_its_registry_from_the_environment() -> None:
    result = CliRunner().invoke(
        worker,
        [],
        env={
            ENV_APP: "no_such_module_xyz:registry",
            "ORBIT_URL": "http://127.0.0.1:1",
            "ORBIT_TOKEN": generate_secret(),
            "ORBIT_WORKER_QUEUES": "0" * 32,
        },
    )
    assert result.exit_code == 2
    assert "no_such_module_xyz" in result.output
    missing = CliRunner().invoke(worker, [], env={ENV_APP: ""})
    assert missing.exit_code == 2 and ENV_APP in CliRunner().invoke(worker, ["--help"]).output
