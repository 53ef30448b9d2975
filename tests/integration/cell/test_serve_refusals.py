"""``cell serve`` with deploy/systemd/cell.env.example as shipped (``CELL_MODE=sip``,
``CELL_ID=CHANGE-ME``) refuses to start in one line naming CELL_ID; with a real id but no
espeak-ng on PATH it refuses naming espeak-ng and how to install it. Nothing is created in
the data directory either way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "systemd" / "cell.env.example"
CELL = Path(sys.executable).with_name("cell")


def example_env() -> dict[str, str]:
    """The active KEY=VALUE lines of the shipped example."""
    values = {}
    for line in EXAMPLE.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    return values


def serve(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CELL_")}
    env = base | example_env() | {"CELL_DATA_DIR": str(tmp_path / "data")} | extra
    return subprocess.run(
        [str(CELL), "serve", "--http-port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_shipped_example_is_refused_for_its_placeholder_id(tmp_path: Path) -> None:
    assert example_env()["CELL_MODE"] == "sip" and example_env()["CELL_ID"] == "CHANGE-ME"
    done = serve(tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("cell: error: --cell-id / CELL_ID is the placeholder 'CHANGE-ME'")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists()


def test_sip_mode_without_espeak_ng_is_refused_naming_the_fix(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = serve(tmp_path, CELL_ID="cell-eu-1", PATH=str(empty))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "cell: error: sip mode needs the TTS program espeak-ng, not found on PATH: "
        "apt-get install espeak-ng (or run --mode sim)"
    )
    assert not (tmp_path / "data").exists()
