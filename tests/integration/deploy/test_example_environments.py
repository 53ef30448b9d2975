"""The example environment files of deploy/systemd are loaded by the programs they configure,
so a wrong variable name fails here:

- every variable an example mentions, in a setting line or in the prose of a comment (where an
  operator copies it from), is one its program reads: `SERVE_WORKERS=1` in a comment fails, the
  variable is `ORBIT_WORKERS`;
- the Orbit server's file, and each commented-out alternative line in it, loads into the
  server's settings and each variable reads back with the value the file gives it (a name the
  server does not read would not come back);
- the Orbit worker's file loads into `orbit worker`'s options and settings with its values.
(The Dispatcher's file passes `dispatcher check-config` in test_systemd_units.py, and the cell's
is refused for its placeholder id in tests/integration/cell/test_serve_refusals.py.)
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import fields
from pathlib import Path

import pytest

from agentcall.cell.cli.serve import serve as cell_serve
from agentcall.dispatcher.contracts.schemas import ENV_DIR
from agentcall.dispatcher.settings import Settings, env_name
from agentcall.orbit import settings as orbit_settings
from agentcall.orbit.domain.errors import SetupError
from agentcall.orbit.sdk import settings as sdk_settings
from agentcall.orbit.sdk.worker.cli import worker
from tests.support.otlp_collector import opentelemetry_reads

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
UNIT_DIR = ROOT / "deploy" / "systemd"
NAMED = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
ASSIGNED = re.compile(r"^#?([A-Z][A-Z0-9_]*)=(.*)$", re.MULTILINE)
UNIT_ONLY = {"PYTHONPATH", "FORWARDED_ALLOW_IPS"}
NOT_VARIABLES: set[str] = set()  # a capitalised word with underscores that is no variable
REAL_TOKEN = "orb_" + secrets.token_urlsafe(32)  # the shape of a token Orbit issues


def _orbit_names() -> set[str]:
    return {
        getattr(module, attr)
        for module in (orbit_settings, sdk_settings)
        for attr in dir(module)
        if attr.startswith("ENV_")
    }


def _dispatcher_names() -> set[str]:
    return {env_name(f.name) for f in fields(Settings)} | {
        "DISPATCHER_SECRET_KEY_FILE",
        "DISPATCHER_CONFIG",
        ENV_DIR,
    }


def _cell_reads(name: str) -> bool:
    envvars = {p.envvar for p in cell_serve.params if isinstance(p.envvar, str)}
    if name in envvars or name.startswith("CELL_LLM_"):
        return True
    source = "\n".join(p.read_text() for p in (ROOT / "src/agentcall/cell").rglob("*.py"))
    return f'"{name}"' in source


def reads(name: str) -> bool:
    """Whether a program of the distribution (or systemd's unit) reads the variable `name`."""
    if name.startswith("ORBIT_"):
        return name in _orbit_names()
    if name.startswith("DISPATCHER_"):
        return name in _dispatcher_names()
    if name.startswith("CELL_"):
        return _cell_reads(name)
    return name in UNIT_ONLY or opentelemetry_reads(name)


def mentioned(text: str) -> set[str]:
    """Every variable-like name of an example: set, commented out, or named in prose."""
    return set(NAMED.findall(text)) - NOT_VARIABLES


def assignments(text: str, active_only: bool) -> dict[str, str]:
    found = {}
    for match in ASSIGNED.finditer(text):
        if active_only and match.group(0).startswith("#"):
            continue
        found[match.group(1)] = match.group(2).strip("'\"")
    return found


EXAMPLES = sorted(p.name.removesuffix(".env.example") for p in UNIT_DIR.glob("*.env.example"))


def test_the_check_finds_a_wrong_name_in_prose() -> None:
    text = "# One host with SQLite instead (then SERVE_WORKERS=1):\nORBIT_WORKERS=2\n"
    assert mentioned(text) == {"SERVE_WORKERS", "ORBIT_WORKERS"}
    assert not reads("SERVE_WORKERS") and not reads("ORBIT_WORKER") and reads("ORBIT_WORKERS")


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_name_an_example_mentions_is_read(example: str) -> None:
    text = (UNIT_DIR / f"{example}.env.example").read_text()
    unknown = sorted(name for name in mentioned(text) if not reads(name))
    assert unknown == [], f"{example}.env.example names variables nothing reads: {unknown}"


def _server_variants() -> list[dict[str, str]]:
    """The active lines, then the same with each commented-out line switched on."""
    text = (UNIT_DIR / "orbit-server.env.example").read_text()
    active = assignments(text, active_only=True)
    every = assignments(text, active_only=False)
    optional = [
        k
        for k in every
        if k not in active and k != orbit_settings.ENV_CONFIG and k.startswith("ORBIT_")
    ]  # the OTEL_* ones are OpenTelemetry's (`reads`)
    return [active] + [active | {name: every[name]} for name in optional]


@pytest.mark.parametrize("env", _server_variants(), ids=lambda env: sorted(env)[-1])
def test_the_orbit_server_example_loads_with_its_values(env: dict[str, str]) -> None:
    loaded = orbit_settings.to_environ(orbit_settings.from_environ(env))
    for name, value in env.items():
        assert name in loaded, f"orbit serve reads no {name}"
        assert loaded[name] == value, (name, loaded[name], value)


def test_the_orbit_worker_example_loads_with_its_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = assignments((UNIT_DIR / "orbit-worker.env.example").read_text(), active_only=True)
    for name in [n for n in os.environ if n.startswith("ORBIT_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    options = {p.envvar: p.name for p in worker.params if isinstance(p.envvar, str)}
    with worker.make_context("orbit worker", []) as ctx:
        for name, param in options.items():
            if name in env:
                assert str(ctx.params[param]) in (env[name], f"{env[name]}.0"), name
    with pytest.raises(SetupError, match="ORBIT_TOKEN / --token is not a token Orbit issued"):
        sdk_settings.worker_settings(url=None, token=None, queues=())  # its placeholder
    assert env[sdk_settings.ENV_TOKEN] == "orb_CHANGE-ME"
    monkeypatch.setenv(sdk_settings.ENV_TOKEN, REAL_TOKEN)
    settings = sdk_settings.worker_settings(url=None, token=None, queues=())
    assert settings.url == env[sdk_settings.ENV_URL]
    assert settings.token == REAL_TOKEN
    assert settings.queues == tuple(env[sdk_settings.ENV_QUEUES].split())
    read_here = set(options) | {
        sdk_settings.ENV_URL,
        sdk_settings.ENV_TOKEN,
        sdk_settings.ENV_QUEUES,
    }
    assert set(env) - UNIT_ONLY <= read_here
