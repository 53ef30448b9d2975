"""`make demo`, the README's first command, runs as a newcomer runs it: from the checkout,
against the local services, and ends with both parts' summaries and the epilogue (what still
runs, the consoles, where to read next). About 30 seconds.

The Makefile's `demo` target depends on `install` (a stamp in the virtual environment, already
made by `make test`) and `services` (already running: `scripts/services start` says so and
changes nothing), so this runs exactly the README's command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.docs,
    pytest.mark.rabbitmq,
    pytest.mark.timeout(240),
]

ROOT = Path(__file__).resolve().parents[3]
# what the demo promises a newcomer, in the order it prints it
PROMISED = [
    "=== Dispatcher: mock SaaS + D + simulated cell + S3 ===",
    "call.results 60/60",
    "calls by outcome (call.result)",
    "--- Dispatcher: mock SaaS + D + simulated cell + S3: exit 0",
    "=== Orbit: task service on SQLite with workers ===",
    "payment: NEEDS_REVIEW, never re-run blindly",
    "--- Orbit: task service on SQLite with workers: exit 0",
    "=== What still runs ===",
    "make services-stop",
    "=== Consoles ===",
    "/ui",
    "=== Read next ===",
    "docs/architecture.md",
]


def test_make_demo_runs_both_parts_and_ends_with_what_still_runs(tmp_path: Path) -> None:
    make = shutil.which("make")
    assert make, "make is a README prerequisite (Debian: apt-get install make)"
    run = subprocess.run(
        [make, "--no-print-directory", "demo"],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=220,
    )
    (tmp_path / "demo.log").write_text(run.stdout + run.stderr, encoding="utf-8")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    at = 0
    for line in PROMISED:
        found = run.stdout.find(line, at)
        assert found >= 0, f"the demo no longer prints {line!r} after position {at}"
        at = found + len(line)
    assert "Traceback" not in run.stdout + run.stderr
