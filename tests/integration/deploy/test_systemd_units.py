"""The systemd units in deploy/systemd: systemd accepts them, every command they run exists in
the installed command lines with the options they pass, and the example environment files
name only settings the programs read.

The units run `/opt/agentcall/venv/bin/...`; here that prefix is rewritten to this test's
virtual environment so that `systemd-analyze verify` finds executables."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from agentcall.dispatcher.contracts.schemas import ENV_DIR
from agentcall.dispatcher.settings import Settings, env_name
from agentcall.orbit import settings as orbit_settings
from agentcall.orbit.sdk import settings as sdk_settings
from tests.support.otlp_collector import opentelemetry_reads

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
UNIT_DIR = ROOT / "deploy" / "systemd"
INSTALL_BIN = "/opt/agentcall/venv/bin/"
VENV_BIN = Path(sys.executable).parent
UNITS = {
    "orbit-server.service": "orbit-server.service",
    "orbit-worker@.service": "orbit-worker@1.service",  # a template is verified as an instance
    "agentcall-cell.service": "agentcall-cell.service",
    "agentcall-dispatcher.service": "agentcall-dispatcher.service",
}
ENV_FILES = ["orbit-server", "orbit-worker", "cell", "dispatcher"]
EXEC_KEYS = ("ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload", "ExecStop")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def installed_units(target: Path) -> Path:
    """Copies of the units in `target` with the install prefix pointing at this venv."""
    for name in UNITS:
        text = (UNIT_DIR / name).read_text()
        (target / name).write_text(text.replace(INSTALL_BIN, f"{VENV_BIN}/"))
    return target


def verify(unit_dir: Path, instance: str) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", str(unit_dir / instance)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=unit_dir,
    )


def about_our_units(stderr: str, unit_dir: Path) -> list[str]:
    """The lines of `stderr` about the units under test (systemd may also talk about the
    host's own units, which are not ours to judge)."""
    names = [*UNITS, *UNITS.values(), str(unit_dir)]
    return [line for line in stderr.splitlines() if any(n in line for n in names)]


def exec_lines(unit: Path) -> list[tuple[str, list[str]]]:
    """(key, argv) of every Exec*= line of `unit`, systemd's prefixes (-, @, +, !) removed."""
    found = []
    for line in unit.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in EXEC_KEYS:
            argv = shlex.split(value.strip())
            argv[0] = argv[0].lstrip("-@+!:")
            found.append((key.strip(), argv))
    return found


def command_and_options(argv: list[str]) -> tuple[list[str], list[str]]:
    """The executable with its subcommands, and the long options the line passes."""
    command = [argv[0]]
    for word in argv[1:]:
        if word.startswith("-") or "$" in word or "%" in word:
            break
        command.append(word)
    options = [w.split("=", 1)[0] for w in argv[1:] if w.startswith("--")]
    return command, options


def env_names(name: str) -> list[str]:
    """Every variable an example environment file sets, commented-out lines included."""
    text = (UNIT_DIR / f"{name}.env.example").read_text()
    return re.findall(r"^#?([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE)


def env_values(name: str) -> dict[str, str]:
    """The active KEY=VALUE lines of an example environment file."""
    values = {}
    for line in (UNIT_DIR / f"{name}.env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value.strip("'\"")
    return values


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("name", list(UNITS))
def test_systemd_accepts_the_unit(name: str, tmp_path: Path) -> None:
    unit_dir = installed_units(tmp_path)
    result = verify(unit_dir, UNITS[name])
    assert result.returncode == 0, result.stderr
    assert about_our_units(result.stderr, unit_dir) == []


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_verify_reports_a_broken_unit(tmp_path: Path) -> None:
    """The check above can fail: a mistyped setting and a missing program are reported."""
    unit_dir = installed_units(tmp_path)
    unit = unit_dir / "agentcall-dispatcher.service"
    text = unit.read_text().replace("Restart=on-failure", "Restart=sometimes")
    unit.write_text(text.replace(f"{VENV_BIN}/dispatcher run", f"{VENV_BIN}/no-such-program"))
    result = verify(unit_dir, "agentcall-dispatcher.service")
    assert result.returncode != 0
    problems = "\n".join(about_our_units(result.stderr, unit_dir))
    assert "restart specifier" in problems and "no-such-program" in problems


@pytest.mark.parametrize("name", list(UNITS))
def test_every_command_of_the_unit_exists_with_its_options(name: str) -> None:
    lines = exec_lines(UNIT_DIR / name)
    assert any(key == "ExecStart" for key, _ in lines)
    for key, argv in lines:
        assert argv[0].startswith(INSTALL_BIN), f"{key} runs {argv[0]}, not a venv program"
        command, options = command_and_options(argv)
        program = VENV_BIN / command[0].removeprefix(INSTALL_BIN)
        result = subprocess.run(
            [str(program), *command[1:], "--help"], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, f"{key}: {shlex.join(command)} --help\n{result.stderr}"
        for option in options:
            pattern = rf"(^|[\s,]){re.escape(option)}(?=[\s,=/]|$)"
            assert re.search(pattern, result.stdout, re.MULTILINE), (
                f"{key}: {shlex.join(command)} has no option {option}"
            )


def test_units_are_hardened_and_write_only_their_state() -> None:
    """Every unit runs with the same hardening; the services with files keep them under
    /var/lib/agentcall via StateDirectory=, the only paths they may write (the worker has
    none)."""
    for name in UNITS:
        text = (UNIT_DIR / name).read_text()
        state = re.findall(r"^StateDirectory=(\S+)$", text, re.MULTILINE)
        assert bool(state) is (name != "orbit-worker@.service"), name
        assert all(s.startswith("agentcall/") for s in state), name
        for path in re.findall(r"^ReadWritePaths=(.+)$", text, re.MULTILINE):
            for item in path.split():
                assert item.lstrip("-") in {f"/var/lib/{s}" for s in state}, (name, item)
        for setting in (
            "NoNewPrivileges=yes",
            "PrivateTmp=yes",
            "ProtectSystem=strict",
            "Restart=on-failure",
            "LimitNOFILE=",
            "TimeoutStopSec=",
        ):
            assert re.search(rf"^{re.escape(setting)}", text, re.MULTILINE), (name, setting)


def test_example_environments_name_only_real_settings() -> None:
    orbit = {
        getattr(module, attr)
        for module in (orbit_settings, sdk_settings)
        for attr in dir(module)
        if attr.startswith("ENV_")
    }
    dispatcher = {env_name(f.name) for f in fields(Settings)} | {
        "DISPATCHER_SECRET_KEY_FILE",
        "DISPATCHER_CONFIG",
        ENV_DIR,
    }
    cell_source = "\n".join(
        p.read_text() for p in (ROOT / "src" / "agentcall" / "cell").rglob("*.py")
    )
    unit_only = {"PYTHONPATH", "FORWARDED_ALLOW_IPS"}
    for name in ENV_FILES:
        for var in env_names(name):
            if var.startswith("ORBIT_"):
                assert var in orbit, f"{name}.env.example: orbit reads no {var}"
            elif var.startswith("DISPATCHER_"):
                assert var in dispatcher, f"{name}.env.example: the D reads no {var}"
            elif var.startswith("CELL_LLM_"):
                assert "CELL_LLM_" in cell_source
            elif var.startswith("CELL_"):
                assert f'"{var}"' in cell_source, f"{name}.env.example: the cell reads no {var}"
            elif var.startswith("OTEL_"):
                assert opentelemetry_reads(var), f"{name}.env.example: OpenTelemetry reads no {var}"
            else:
                assert var in unit_only, f"{name}.env.example: unknown variable {var}"


def test_unit_variables_are_set_by_the_example_environment() -> None:
    """A ${VAR} in an ExecStart line must be set by the unit's environment file, or systemd
    passes an empty argument."""
    pairs = {"orbit-server.service": "orbit-server", "orbit-worker@.service": "orbit-worker"}
    for unit, env in pairs.items():
        used = re.findall(r"\$\{(\w+)\}", (UNIT_DIR / unit).read_text())
        assert set(used) <= set(env_values(env)), (unit, used)


def test_the_dispatcher_example_passes_check_config(tmp_path: Path) -> None:
    example = env_values("dispatcher")
    assert example["DISPATCHER_STATE_DB"].startswith("/var/lib/agentcall/dispatcher/")
    secret = tmp_path / "dispatcher.secret"
    secret.write_text("example-secret\n")
    secret.chmod(stat.S_IRUSR | stat.S_IWUSR)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCHER_")}
    env |= example
    env |= {
        "DISPATCHER_SECRET_KEY_FILE": str(secret),
        "DISPATCHER_STATE_DB": str(tmp_path / "state.db"),
    }
    result = subprocess.run(
        [str(VENV_BIN / "dispatcher"), "check-config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "example-secret" not in result.stdout
    assert "CHANGE-ME" not in result.stdout  # the AMQP URL's password is masked
    assert "amqps://dispatcher:***@mq.example.com:5671/" in result.stdout


def test_the_dispatcher_example_needs_no_schema_directory() -> None:
    """The package carries the contract schemas: no deployment setting points at them."""
    assert ENV_DIR not in env_values("dispatcher")
    assert ENV_DIR not in (UNIT_DIR / "agentcall-dispatcher.service").read_text()
