"""The command session of docs/orbit/schedules.md runs as written (docs as tests), the way
the README's sessions run (`tests.acceptance.docs.test_readme_sessions`): with bash from a
scratch directory linking `.venv` and `examples`, on a free port, and prints what the page's
comments promise: the schedule created with the CLI fired, the cron's next slots in UTC, the
SDK example's trigger and pause, the backfill preview."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.acceptance.docs.test_readme_sessions import _stop_group, localized, scratch, sessions

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "orbit" / "schedules.md"
OPENAPI = ROOT / "src" / "agentcall" / "orbit" / "api" / "openapi.json"
SERVED = '"/v1/schedules"' in OPENAPI.read_text(encoding="utf-8")
pytestmark = [pytest.mark.acceptance, pytest.mark.docs, pytest.mark.timeout(240)]
PROMISED = [
    "active revision 1: every 2 s",
    "fired",
    "T01:30:00Z",  # 02:30 in Berlin in winter
    "triggered task",
    "paused revision",
    "3 slots would fire (preview; nothing fired)",
]


def test_the_page_marks_its_session() -> None:
    assert list(sessions(PAGE.read_text(encoding="utf-8"))) == ["schedules-session"]


@pytest.mark.skipif(not SERVED, reason="this server has no /v1/schedules routes (OpenAPI)")
def test_the_schedules_session_runs_as_written(tmp_path: Path) -> None:
    script = localized(sessions(PAGE.read_text(encoding="utf-8"))["schedules-session"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORBIT_")}
    work = scratch(tmp_path)
    out = tmp_path / "output.txt"
    with out.open("wb") as sink:
        process = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=work,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        code = process.wait(timeout=180)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        _stop_group(process.pid)
    output = out.read_text(errors="replace")
    logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in work.glob("var/*/*.log"))
    assert code == 0, f"the session failed ({code}):\n{output}\n{logs}"
    at = 0
    for promised in PROMISED:
        found = output.find(promised, at)
        assert found >= 0, f"{promised!r} not in the output (in order):\n{output}"
        at = found
