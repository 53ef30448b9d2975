"""The import direction of every service, one table per service, checked by the same tests.

The Dispatcher, top to bottom:

    cli → service (assembly) → status, web, console
        → features: calls → recording; admission, discovery, control
        → finalize (ends an execution, stores its one call.result)
        → edges: saas, mq, cell → store (every feature's SQL)
        → domain, contracts, settings → errors;  logs and telemetry (the port the
          components report to, and its Prometheus registry) beside them; readiness
          (pure, over the status snapshot) under status and web

  Features never import each other except calls → recording (the call supervisor runs the
  recording loop and applies its events); none imports the assembly. An edge never imports
  a feature.

The cell, each layer importing only the layers below it:

    cli
    → server                    HTTP/WebSocket API and its bounded edge
    → runtime                   the running cell: admission, live calls, uploads
    → sim, sip                  the call drivers (simulated, SIP)
    → media                     RTP, jitter buffer, the voice agent on a live call
    → calls                     the plan, the call record, the driver seam
    → agent                     agent config, providers, opt-out, the simulated conversation
    → recording                 WAV files and the recording store
    → state                     the originate log and the approved SIP configuration
    → domain, audio, telemetry  (the shared base: vocabulary, errors, events, field
                                readers; audio processing; metrics)

  `client` (the Dispatcher's client) depends on the wire only: of the cell, it imports the
  wire's vocabulary (`domain.model`: call states, answering-machine actions) and nothing else.

The Mock SaaS, each layer importing only the layers below it:

    cli
    → server, cli_admin        the process (uvicorn + runtime) and the admin command line
    → web                      HTTP routes: the contract GETs and the admin API
    → ops                      use cases of the admin API and the contract
    → runtime                  wires the store, the broker, the contracts and the loops
    → amqp                     broker connection, outbox relay, result consumers
    → store, settings, contracts, topology
    → domain                   pure rules: tasks, discovery, quota, faults, results
    → errors, metrics          (the shared base)

Orbit: `cli → api → usecases → execution → store → domain`, with `protocol` (the worker wire
format) beside `domain`, and the SDKs depending only on `protocol` and `domain`; `telemetry`
(OpenTelemetry tracing, off unless enabled) over `domain`, used by the server and the SDK.

No service has an import cycle between modules or between packages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit import layers

pytestmark = pytest.mark.unit

Table = dict[str, set[str]]


def stacked(stack: list[set[str]], **extra: set[str]) -> Table:
    """A table from layers listed top to bottom: a part may import the parts below its layer."""
    table: Table = dict(extra)
    for depth, layer in enumerate(stack):
        below = set().union(*stack[depth + 1 :])
        table.update({part: below for part in layer})
    return table


_D_BASE = {"domain", "errors", "logs", "telemetry"}
_D_EDGES = {"saas", "mq", "cell", "store"}
_D_FEATURES = {"admission", "discovery", "control", "calls", "recording"}

# part -> the parts its modules may import (besides itself).
DISPATCHER: Table = {
    "": set(),
    "errors": set(),
    "logs": set(),
    "telemetry": set(),
    "readiness": set(),
    "domain": {"errors"},
    "contracts": {"errors"},
    "settings": {"errors", "settings_http", "settings_values"},
    "settings_http": set(),
    "settings_values": set(),
    "store": {"domain", "errors"},
    "cell": {"domain", "errors"},
    "mq": {"store"} | _D_BASE,
    "saas": {"store", "contracts", "settings"} | _D_BASE,
    "finalize": {"store"} | _D_BASE,
    "recording": {"finalize", "cell", "mq", "store", "settings"} | _D_BASE,
    "calls": {"recording", "finalize", "cell", "store"} | _D_BASE,
    "admission": {"mq", "saas", "store", "contracts"} | _D_BASE,
    "discovery": {"saas", "store", "contracts"} | _D_BASE,
    "control": {"cell", "mq", "saas", "store", "contracts"} | _D_BASE,
    "web": {"domain", "readiness"},
    "console": {"domain", "store"},
    "status": _D_FEATURES | _D_EDGES | _D_BASE | {"readiness"},
    "service": {"status", "web", "console", "settings"}
    | _D_FEATURES
    | {"finalize"}
    | _D_EDGES
    | _D_BASE,
    "cli": {"service", "settings", "cell", "logs", "store"},
}

# top to bottom; a part may import the parts of the layers below its own.
CELL: Table = stacked(
    [
        {"cli"},
        {"server"},
        {"runtime"},
        {"sim", "sip"},
        {"media"},
        {"calls"},
        {"agent"},
        {"recording"},
        {"state"},
        {"", "domain", "audio", "telemetry"},
    ],
    client={"domain"},  # its vocabulary only (tests/unit/cell/test_client.py)
)

# top to bottom; a part may import the parts of the layers below its own.
MOCKSAAS: Table = stacked(
    [
        {"cli"},
        {"server", "cli_admin"},
        {"web"},
        {"ops"},
        {"runtime"},
        {"amqp"},
        {"store", "settings", "contracts", "topology"},
        {"domain"},
        {"", "errors", "metrics"},
    ]
)

# part -> the parts its modules may import (besides itself).
ORBIT: Table = {
    "": set(),
    "__main__": {"cli"},
    "domain": set(),
    "protocol": {"domain"},
    # OpenTelemetry tracing (off unless enabled): the server's spans and the SDK's handler span
    "telemetry": {"domain"},
    "store": {"domain"},
    "execution": {"store", "domain", "protocol", "telemetry"},
    # the operations the API, the console, the CLI and the worker socket call
    "usecases": {"execution", "store", "domain", "protocol", "telemetry"},
    # the HTTP and WebSocket edges: through the use cases and the engine, never the store
    "api": {"console", "usecases", "execution", "domain", "protocol", "telemetry"},
    # the console at /ui: an HTTP edge beside the API, reading through execution's
    # inspection and the use cases, acting through the use cases
    "console": {"usecases", "execution", "domain"},
    # the one place the server is built: settings -> store -> engine -> use cases -> app
    "assembly": {
        "api",
        "console",
        "usecases",
        "execution",
        "store",
        "domain",
        "settings",
        "telemetry",
    },
    "sdk": {"protocol", "domain", "telemetry"},
    # the server's ServerSettings: read from the environment where the server is assembled
    # (cli, assembly) and passed down as values, so only those two parts import it
    "settings": {"domain"},
    "cli": {
        "assembly",
        "api",
        "usecases",
        "execution",
        "store",
        "domain",
        "protocol",
        "sdk",
        "settings",
    },
}


@dataclass(frozen=True)
class Service:
    root: str
    table: Table


SERVICES = {
    "dispatcher": Service("agentcall.dispatcher", DISPATCHER),
    "cell": Service("agentcall.cell", CELL),
    "mocksaas": Service("agentcall.mocksaas", MOCKSAAS),
    "orbit": Service("agentcall.orbit", ORBIT),
}
each_service = pytest.mark.parametrize("service", list(SERVICES.values()), ids=list(SERVICES))


@each_service
def test_no_import_cycle_between_modules(service: Service) -> None:
    assert layers.cycles(layers.graph(service.root)) == []


@each_service
def test_no_import_cycle_between_packages(service: Service) -> None:
    edges = layers.graph(service.root)
    for depth in range(3, 6):
        assert layers.cycles(layers.collapse(edges, depth)) == [], depth


@each_service
def test_imports_follow_the_layers(service: Service) -> None:
    assert layers.layer_violations(layers.graph(service.root), service.root, service.table) == []


@each_service
def test_every_part_of_the_table_exists(service: Service) -> None:
    """A part renamed or removed must leave the table too (the table stays the layout)."""
    graph = layers.graph(service.root)
    parts = {name.split(".")[2] if name.count(".") >= 2 else "" for name in graph}
    assert set(service.table) == parts


def test_the_cell_package_is_reached_only_through_its_client() -> None:
    """The Dispatcher's one import of another package of ours: ``agentcall.cell.client``, in
    the adapter."""
    found = sorted(
        f"{path.relative_to(layers.SRC)}: {line.strip()}"
        for path in layers.modules("agentcall.dispatcher").values()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.lstrip().startswith(("from agentcall.cell", "import agentcall.cell"))
    )
    assert found == ["agentcall/dispatcher/cell/adapter.py: from agentcall.cell.client import ("]


def test_the_cell_table_is_strict() -> None:
    assert CELL["agent"] >= {"recording", "domain"}
    assert "media" not in CELL["agent"]
    assert "sip" not in CELL["media"]
    assert CELL["domain"] == set() and CELL["client"] == {"domain"}


@dataclass(frozen=True)
class Broken:
    """A small tree that breaks the rules: its files, the table it is checked against, and
    what the checks must find (cycles between modules, or between packages when ``depth``)."""

    root: str
    files: dict[str, str]
    table: Table
    cycles: list[list[str]]
    violations: list[str]
    depth: int | None = None


BROKEN = {
    # an edge importing a feature, and two features importing each other
    "dispatcher": Broken(
        "x.d",
        {
            "mq/a.py": "from x.d.calls import b\n",
            "calls/b.py": "from ..control import c\n",
            "control/c.py": "from x.d.calls import b\n",
        },
        DISPATCHER,
        [["x.d.calls.b", "x.d.control.c"]],
        [
            "x.d.calls.b imports x.d.control.c (calls -> control is against the layers)",
            "x.d.control.c imports x.d.calls.b (control -> calls is against the layers)",
            "x.d.mq.a imports x.d.calls.b (mq -> calls is against the layers)",
        ],
    ),
    "cell": Broken(
        "x.cell",
        {
            "media/rtp.py": "from x.cell.sip import errors\n",
            "sip/errors.py": "",
            "sip/ua.py": "from ..media import rtp\n",
        },
        {"": set(), "sip": {"media"}, "media": set()},
        [["x.cell.media", "x.cell.sip"]],
        ["x.cell.media.rtp imports x.cell.sip.errors (media -> sip is against the layers)"],
        depth=3,
    ),
    "mocksaas": Broken(
        "x.saas",
        {
            "domain/tasks.py": "from x.saas.store import rows\n",
            "store/rows.py": "from ..domain import tasks\n",
        },
        {"": set(), "domain": set(), "store": {"domain"}},
        [["x.saas.domain.tasks", "x.saas.store.rows"]],
        ["x.saas.domain.tasks imports x.saas.store.rows (domain -> store is against the layers)"],
    ),
    "orbit": Broken(
        "x.svc",
        {
            "domain/a.py": "from x.svc.store import b\n",
            "store/b.py": "from ..domain import a\n",
        },
        {"": set(), "domain": set(), "store": {"domain"}},
        [["x.svc.domain.a", "x.svc.store.b"]],
        ["x.svc.domain.a imports x.svc.store.b (domain -> store is against the layers)"],
    ),
}


@pytest.mark.parametrize("broken", list(BROKEN.values()), ids=list(BROKEN))
def test_the_checks_can_fail(broken: Broken, tmp_path: Path) -> None:
    pkg = tmp_path.joinpath(*broken.root.split("."))
    for name, text in broken.files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").write_text("")
        path.write_text(text)
    edges = layers.graph(broken.root, tmp_path)
    found = edges if broken.depth is None else layers.collapse(edges, broken.depth)
    assert layers.cycles(found) == broken.cycles
    assert layers.layer_violations(edges, broken.root, broken.table) == broken.violations
