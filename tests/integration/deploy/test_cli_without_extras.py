"""The distribution's commands as the base install has them (`pip install agentcall`, no
extra; `tests.support.without_extras` makes every extra's modules unimportable):

- the client commands, which only speak HTTP (`orbit tasks ...` and its alias `orbit task`,
  `orbit queue list`, `orbit worker list`), work against a real `orbit serve`;
- every command that needs an extra refuses with the same one line in all four programs,
  `<command>: the '<extra>' extra is not installed (No module named '<module>'):
  pip install 'agentcall[<extra>]'`, exit status 2, no traceback, nothing created;
- the blocked modules are exactly those of the extras in pyproject.toml.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from tests.support.orbit_server import running_server
from tests.support.without_extras import EXTRA_MODULES

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
ONE_LINE = re.compile(
    r"(?P<command>[a-z-]+(?: [a-z-]+)+): the '(?P<extra>[a-z]+)' extra is not installed "
    r"\(No module named '[\w.]+'\): pip install 'agentcall\[(?P=extra)\]'"
)
D_ENV = {
    "DISPATCHER_ID": "3f2b8c1e-5d4a-4b6f-9a7e-1c2d3e4f5a6b",
    "DISPATCHER_SECRET_KEY": "s",
    "DISPATCHER_SAAS_URL": "http://127.0.0.1:1",
    "DISPATCHER_AMQP_URL": "amqp://u:p@127.0.0.1:1/",
    "DISPATCHER_STATE_DB": "d.db",
    "DISPATCHER_CELL_URL": "http://127.0.0.1:2",
}


def base_install(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ORBIT_", "CELL_"))}
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    environ |= {"PYTHONPATH": path} | env
    return subprocess.run(
        [sys.executable, "-m", "tests.support.without_extras", *argv],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def test_the_blocked_modules_are_the_extras_modules() -> None:
    modules: dict[str, set[str]] = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            modules.setdefault(re.sub(r"[-_.]+", "-", dist).lower(), set()).add(module)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = {
        module
        for extra in ("orbit", "dispatcher", "cell", "mocksaas")
        for requirement in extras[extra]
        for module in modules[_name(requirement)]
        if not module.startswith("_")
    }
    assert wanted <= EXTRA_MODULES
    assert EXTRA_MODULES - wanted == {"botocore"}  # boto3's own dependency
    base = {_name(r) for r in project["dependencies"]}
    assert not any(m in EXTRA_MODULES for d in base for m in modules[d])


@pytest.mark.parametrize(
    ("argv", "command", "env"),
    [
        (["orbit", "serve"], "orbit serve", {}),
        (["orbit", "serve", "--help"], "orbit serve", {}),
        (["orbit", "migrate", "--database", "sqlite+aiosqlite:///o.db"], "orbit migrate", {}),
        (["orbit", "init", "--namespace", "n", "--queue", "q"], "orbit init", {}),
        (
            ["orbit", "queue", "create", "--namespace-id", "n", "--name", "q"],
            "orbit queue create",
            {},
        ),
        (["orbit", "token", "list"], "orbit token list", {}),
        (["orbit", "idempotency", "--help"], "orbit idempotency", {}),
        (["cell", "serve", "--data-dir", "data"], "cell serve", {}),
        (["cell", "serve", "--help"], "cell serve", {}),
        (["mocksaas", "serve", "--db", "m.db"], "mocksaas serve", {}),
        (["dispatcher", "run"], "dispatcher run", D_ENV),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_a_command_without_its_extra_says_so_in_one_line(
    tmp_path: Path, argv: list[str], command: str, env: dict[str, str]
) -> None:
    done = base_install(argv, tmp_path, **env)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, done.stderr
    match = ONE_LINE.fullmatch(line)
    assert match is not None, line
    assert match["command"] == command
    assert match["extra"] == argv[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("program", ["orbit", "dispatcher", "cell", "mocksaas"])
def test_every_program_lists_its_commands_without_its_extra(tmp_path: Path, program: str) -> None:
    done = base_install([program, "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: {program} [OPTIONS] COMMAND")


@pytest.fixture(scope="module")
def orbit_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A real `orbit serve` (full install) with a namespace, a queue and a token."""
    work = tmp_path_factory.mktemp("orbit-base-client")
    url = f"sqlite+aiosqlite:///{work / 'orbit.db'}"
    orbit = [sys.executable, "-m", "agentcall.orbit"]
    subprocess.run([*orbit, "migrate", "--database", url], check=True, capture_output=True)
    made = subprocess.run(
        [*orbit, "init", "--database", url, "--namespace", "base", "--queue", "jobs", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    tenant = json.loads(made.stdout)
    with running_server(url, work / "server.log", "--no-access-log") as base:
        yield {"ORBIT_URL": base, "ORBIT_TOKEN": tenant["token"], "queue": tenant["queue_id"]}


def test_the_client_commands_work_from_the_base_install(
    tmp_path: Path, orbit_api: dict[str, str]
) -> None:
    queue = orbit_api["queue"]
    env = {"ORBIT_URL": orbit_api["ORBIT_URL"], "ORBIT_TOKEN": orbit_api["ORBIT_TOKEN"]}

    def client(*argv: str, status: int = 0) -> str:
        done = base_install(["orbit", *argv], tmp_path, **env)
        assert done.returncode == status, f"{argv}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
        return done.stdout

    submitted = client(
        "tasks", "submit", "--queue-id", queue, "--handler", "demo.work", "--handler-version",
        "v1", "--payload-version", "v1", "--payload", '{"n": 1}', "--key", "base-1", "--json",
    )  # fmt: skip
    task = json.loads(submitted)["task"]
    assert task["state"] == "WAITING"
    shown = json.loads(client("task", "show", task["id"], "--json"))
    assert shown["id"] == task["id"] and shown["payload"] == {"n": 1}
    assert json.loads(client("tasks", "get", task["id"], "--json")) == shown
    listed = json.loads(client("task", "list", "--queue-id", queue, "--json"))
    assert [item["id"] for item in listed["items"]] == [task["id"]]
    waited = client("task", "wait", task["id"], "--timeout", "0", status=2)
    assert waited.startswith(f"task {task['id']} WAITING")
    queues = json.loads(client("queue", "list", "--json"))["items"]
    assert [(q["id"], q["name"], q["counts"].get("WAITING")) for q in queues] == [
        (queue, "jobs", 1)
    ]
    assert json.loads(client("worker", "list", "--json")) == {"items": []}
    cancelled = client(
        "tasks", "cancel", task["id"], "--expected-revision", task["revision"], "--reason",
        "base install check", "--key", "base-2",
    )  # fmt: skip
    assert f"task {task['id']} CANCELLED" in cancelled
    assert list(tmp_path.iterdir()) == []
