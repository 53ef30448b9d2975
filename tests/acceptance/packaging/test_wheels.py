"""The built wheel runs the services outside the checkout.

The wheel is built from a copy of what a release holds (pyproject.toml, README.md, src/ and the
contracts/ that src/agentcall/contracts links to), then installed into two fresh virtual
environments in a temporary directory: one with the `orbit` extra only, where the telephony
stack must not be importable, and one with `all`. Dependencies come from the package index
(`pip --python`, so the environments need no pip of their own); nothing else is downloaded.
Then, from the installed commands, with the checkout out of sight (working directory and
module path elsewhere):

- Orbit: `orbit migrate`, `orbit init`, `orbit serve`, a worker serving a module written here,
  a task submitted with `orbit tasks submit` that the worker completes;
- the Dispatcher: `dispatcher check-config` (the AMQP password masked), and `dispatcher run`
  with a simulated `cell` against `mocksaas` on the local RabbitMQ: calls are placed and their
  `call.result` arrive at the mock SaaS (the contract schemas come from the wheel).

Marked `packaging`: it builds and installs, which takes minutes, so it runs on its own
(`make packaging`, which CI runs after `make test`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.ports import free_port
from tests.support.processes import Processes
from tests.support.services import amqp_url
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.packaging,
    pytest.mark.rabbitmq,
    pytest.mark.timeout(420),
]

ROOT = Path(__file__).resolve().parents[3]
TELEPHONY = ("pocketsphinx", "numpy", "boto3", "aio_pika")
WORKER_APP = """
from agentcall.orbit.sdk.worker import Context, Registry

registry = Registry()


@registry.handler("hello", "v1")
async def hello(ctx: Context, payload: dict) -> dict:
    return {"greeting": "hello " + payload["name"]}
"""


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done


def outside_env(**extra: str) -> dict[str, str]:
    """This environment without anything that would find the checkout's modules."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return env | {"PYTHONNOUSERSITE": "1"} | extra


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(ROOT / "src", source / "src", symlinks=True, ignore=skip)
    shutil.copytree(ROOT / "contracts", source / "contracts", ignore=skip)
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist")]
    if int(version("setuptools").split(".")[0]) >= 77:  # the venv's setuptools can build it
        argv.append("--no-build-isolation")
    run([*argv, str(source)], env=outside_env())
    (built,) = (work / "dist").glob("agentcall-*.whl")
    return built


def install(wheel: Path, extra: str, target: Path) -> Path:
    """A fresh virtual environment with `wheel[extra]`; its bin directory."""
    run([sys.executable, "-m", "venv", "--without-pip", str(target)])
    python = target / "bin" / "python"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-compile",
            "-c",
            str(ROOT / "constraints.txt"),
            f"{wheel}[{extra}]",
        ],
        env=outside_env(),
    )
    return target / "bin"


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    group = Processes(tmp_path / "logs")
    try:
        yield group
    finally:
        group.stop_all()


def test_the_wheel_carries_the_contract_schemas_and_no_examples(wheel: Path) -> None:
    listing = run([sys.executable, "-m", "zipfile", "-l", str(wheel)]).stdout
    assert "agentcall/contracts/dispatcher/command-next.call_execute.schema.json" in listing
    assert "agentcall/contracts/dispatcher/mq-topology.json" in listing
    assert "agentcall/orbit/api/openapi.json" in listing
    assert "agentcall/orbit/store/queries.sql" in listing
    for asset in (
        "templates/console.html",
        "templates/calls.html",
        "static/console.js",
        "static/console.css",
    ):
        assert f"agentcall/dispatcher/console/{asset}" in listing
    assert "examples" not in listing


def test_orbit_alone_serves_a_task(wheel: Path, tmp_path: Path, processes: Processes) -> None:
    bin_dir = install(wheel, "orbit", tmp_path / "venv")
    site = tmp_path / "site"
    site.mkdir()
    probe = (
        "import importlib.util as u, agentcall.orbit as o; print(o.__file__); "
        f"print([m for m in {TELEPHONY!r} if u.find_spec(m)])"
    )
    where, importable = run(
        [str(bin_dir / "python"), "-c", probe], cwd=site, env=outside_env()
    ).stdout.splitlines()
    assert where.startswith(str(tmp_path / "venv")) and importable == "[]"

    env = outside_env(ORBIT_DATABASE_URL="sqlite+aiosqlite:///orbit.db", ORBIT_LOG_FORMAT="json")
    orbit = [str(bin_dir / "orbit")]
    migrated = run([*orbit, "migrate"], cwd=site, env=env).stdout
    assert "SQLite file orbit.db (a relative path" in migrated
    made = json.loads(
        run(
            [*orbit, "init", "--namespace", "wheel", "--queue", "jobs", "--json"], cwd=site, env=env
        ).stdout
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = processes.start("orbit-serve", [*orbit, "serve", "--port", str(port)], site, env)
    wait_for(lambda: server.alive() and _ok(f"{url}/healthz"), 60, "orbit serve")
    (site / "quick.py").write_text(WORKER_APP, encoding="utf-8")
    client = env | {
        "ORBIT_URL": url,
        "ORBIT_TOKEN": made["token"],
        "ORBIT_WORKER_QUEUES": made["queue_id"],
        "ORBIT_WORKER_APP": "quick:registry",
    }
    processes.start("orbit-worker", [*orbit, "worker"], site, client)
    submitted = json.loads(
        run(
            [
                *orbit,
                "tasks",
                "submit",
                "--queue-id",
                made["queue_id"],
                "--handler",
                "hello",
                "--handler-version",
                "v1",
                "--payload-version",
                "v1",
                "--payload",
                '{"name":"wheel"}',
                "--json",
            ],
            cwd=site,
            env=client,
        ).stdout
    )
    task_id = submitted["task"]["id"]

    def finished() -> dict[str, Any] | None:
        got = json.loads(
            run([*orbit, "tasks", "get", task_id, "--json"], cwd=site, env=client).stdout
        )
        return got if got["state"] == "SUCCEEDED" else None

    task = wait_for(finished, 60, "the task to succeed")
    assert task["result"] == {"greeting": "hello wheel"}

    # the Dispatcher's command is there too, and says which extra it needs
    d_env = outside_env(
        DISPATCHER_ID="00000000-0000-4000-8000-000000000000",
        DISPATCHER_SECRET_KEY="s",
        DISPATCHER_SAAS_URL="http://127.0.0.1:1",
        DISPATCHER_AMQP_URL="amqp://u:p@127.0.0.1:1/",
        DISPATCHER_STATE_DB="d.db",
        DISPATCHER_CELL_URL="http://127.0.0.1:2",
    )
    refused = subprocess.run(
        [str(bin_dir / "dispatcher"), "run"],
        cwd=site,
        env=d_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2, refused.stderr
    assert "pip install 'agentcall[dispatcher]'" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_dispatcher_places_calls_from_the_wheel(
    wheel: Path, tmp_path: Path, processes: Processes
) -> None:
    bin_dir = install(wheel, "all", tmp_path / "venv")
    site = tmp_path / "site"
    site.mkdir()
    env = outside_env()
    saas_port, cell_port, d_port = free_port(), free_port(), free_port()
    saas = f"http://127.0.0.1:{saas_port}"
    mock = processes.start(
        "mocksaas",
        [
            str(bin_dir / "mocksaas"),
            "serve",
            "--http-port",
            str(saas_port),
            "--db",
            "mocksaas.db",
            "--amqp-url",
            amqp_url(),
        ],
        site,
        env,
    )
    wait_for(lambda: mock.alive() and _ok(f"{saas}/healthz"), 60, "mocksaas")
    admin = _admin(bin_dir, site, env | {"MOCKSAAS_URL": saas})
    dispatcher_id = admin("dispatcher", "create", "--secret", "wheel-secret", "--id-only").strip()
    try:
        callees = ["15000000000", "15000000001"]
        snapshot = admin("sip", "set", dispatcher_id, *(f"--allowed-target={c}" for c in callees))
        admin("task", "put", dispatcher_id, "task-1", "--tenant-id", "t1", "--tenant-key", "t1")
        admin("quota", "set", dispatcher_id, "t1", "--max", "5")
        cell = processes.start(
            "cell",
            [
                str(bin_dir / "cell"),
                "serve",
                "--mode",
                "sim",
                "--cell-id",
                "cell-mock",
                "--http-port",
                str(cell_port),
                "--data-dir",
                "cell",
                "--time-scale",
                "0.01",
            ],
            site,
            env,
        )
        wait_for(
            lambda: cell.alive() and _ok(f"http://127.0.0.1:{cell_port}/healthz"), 60, "the cell"
        )
        httpx.put(
            f"http://127.0.0.1:{cell_port}/v1/config",
            content=snapshot,
            headers={"Content-Type": "application/json"},
            timeout=10,
        ).raise_for_status()
        d_env = env | {
            "DISPATCHER_ID": dispatcher_id,
            "DISPATCHER_SECRET_KEY": "wheel-secret",
            "DISPATCHER_SAAS_URL": saas,
            "DISPATCHER_AMQP_URL": amqp_url(),
            "DISPATCHER_STATE_DB": "dispatcher.db",
            "DISPATCHER_CELL_URL": f"http://127.0.0.1:{cell_port}",
            "DISPATCHER_HTTP_PORT": str(d_port),
            "DISPATCHER_DISCOVERY_INTERVAL_S": "1",
        }
        checked = run([str(bin_dir / "dispatcher"), "check-config"], cwd=site, env=d_env).stdout
        assert dispatcher_id in checked and "wheel-secret" not in checked
        run([str(bin_dir / "dispatcher"), "init-state"], cwd=site, env=d_env)
        d = processes.start("dispatcher", [str(bin_dir / "dispatcher"), "run"], site, d_env)
        status = f"http://127.0.0.1:{d_port}/status"
        wait_for(lambda: d.alive() and _admission_open(status), 60, "admission to open")
        admin("call", dispatcher_id, "task-1", *(f"--callee={c}" for c in callees))

        def results() -> list[dict[str, Any]] | None:
            found = json.loads(
                admin("results", "list", dispatcher_id, "--event-type", "call.result")
            )
            items = found["results"] if isinstance(found, dict) else found
            return items if len(items) == len(callees) else None

        received = wait_for(results, 90, "two call.result at the mock SaaS")
        assert all(item["valid"] for item in received), received
        console = httpx.get(f"http://127.0.0.1:{d_port}/ui", timeout=10)  # assets from the wheel
        assert console.status_code == 200 and console.text.count("<tr data-call=") == 2
        assert _ok(f"http://127.0.0.1:{d_port}/ui/static/console.js")
    finally:
        admin("dispatcher", "delete", dispatcher_id)  # its queues go with it


def _admin(bin_dir: Path, cwd: Path, env: dict[str, str]) -> Callable[..., str]:
    def admin(*args: str) -> str:
        return run([str(bin_dir / "mocksaas"), "admin", *args], cwd=cwd, env=env).stdout

    return admin


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _admission_open(url: str) -> bool:
    try:
        return bool(httpx.get(url, timeout=2).json()["admission"]["open"])
    except (httpx.HTTPError, ValueError, KeyError):
        return False
