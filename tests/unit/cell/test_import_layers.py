"""The cell's import direction, each layer importing only the layers below it:

    cli
    → server                    HTTP/WebSocket API
    → service                   the cell: admission, calls, events, recordings
    → live, uploads, sim, sip   the call drivers (simulated, SIP) and recording uploads
    → media                     RTP, jitter buffer, the voice agent on a live call
    → driver → calls → plan     the driver interface, the call table, the call plan
    → agent                     agent config, providers, opt-out, the simulated conversation
    → recording                 WAV files and the recording store
    → fields, approved, originate_log   field readers; the approved SIP configuration the
                                cell carries; the record of dialled calls
    → errors, model, events, audio, metrics   (the shared base)

`client` (the Dispatcher's client) depends on the wire only, on nothing else of the cell.
No import cycle between modules or between packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit import layers

ROOT = "agentcall.cell"

# top to bottom; a part may import the parts of the layers below its own.
LAYERS: list[set[str]] = [
    {"cli"},
    {"server"},
    {"service"},
    {"live", "uploads", "sim", "sip"},
    {"media"},
    {"driver"},
    {"calls"},
    {"plan"},
    {"agent"},
    {"recording"},
    {"fields", "approved", "originate_log"},
    {"", "errors", "model", "events", "audio", "metrics"},
]


def _allowed() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {"client": set()}
    for depth, layer in enumerate(LAYERS):
        below = set().union(*LAYERS[depth + 1 :])
        table.update({part: below for part in layer})
    return table


ALLOWED = _allowed()

pytestmark = pytest.mark.unit


def test_no_import_cycle_between_modules() -> None:
    assert layers.cycles(layers.graph(ROOT)) == []


def test_no_import_cycle_between_packages() -> None:
    edges = layers.graph(ROOT)
    for depth in range(3, 6):
        assert layers.cycles(layers.collapse(edges, depth)) == [], depth


def test_imports_follow_the_layers() -> None:
    assert layers.layer_violations(layers.graph(ROOT), ROOT, ALLOWED) == []


def test_the_table_is_strict() -> None:
    assert ALLOWED["agent"] >= {"recording", "errors"}
    assert "media" not in ALLOWED["agent"]
    assert "sip" not in ALLOWED["media"]
    assert ALLOWED["errors"] == set() and ALLOWED["client"] == set()


def test_the_checks_can_fail(tmp_path: Path) -> None:
    pkg = tmp_path / "x" / "cell"
    for part in ("media", "sip"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "media" / "rtp.py").write_text("from x.cell.sip import errors\n")
    (pkg / "sip" / "errors.py").write_text("")
    (pkg / "sip" / "ua.py").write_text("from ..media import rtp\n")
    edges = layers.graph("x.cell", tmp_path)
    assert layers.cycles(layers.collapse(edges, 3)) == [["x.cell.media", "x.cell.sip"]]
    table = {"": set(), "sip": {"media"}, "media": set()}
    assert layers.layer_violations(edges, "x.cell", table) == [
        "x.cell.media.rtp imports x.cell.sip.errors (media -> sip is against the layers)"
    ]
