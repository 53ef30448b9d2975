"""The command session of docs/orbit/schedules.md runs as written (docs as tests), the way
the README's sessions run (`tests.acceptance.docs.test_readme_sessions`): with bash from a
scratch directory linking `.venv` and `examples`, on a free port, and prints what the page's
comments promise: the schedule created with the CLI triggered, the cron's next slots in UTC, the
SDK example's trigger and pause, the backfill preview."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance.docs.test_readme_sessions import run_session, sessions

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "orbit" / "schedules.md"
pytestmark = [pytest.mark.acceptance, pytest.mark.docs, pytest.mark.timeout(240)]
PROMISED = [
    "active revision 1: every 2 s",
    "triggered task",
    "T01:30:00Z",  # 02:30 in Berlin in winter
    "triggered task",
    "paused revision",
    "3 slots would fire (preview; nothing fired)",
]


def test_the_page_marks_its_session() -> None:
    assert list(sessions(PAGE.read_text(encoding="utf-8"))) == ["schedules-session"]


def test_the_schedules_session_runs_as_written(tmp_path: Path) -> None:
    output = run_session("schedules-session", tmp_path, PAGE)
    at = 0
    for promised in PROMISED:
        found = output.find(promised, at)
        assert found >= 0, f"{promised!r} not in the output (in order):\n{output}"
        at = found
