"""`make demo`: run the demo of each service against the local real services.

Each part is a standalone script that starts its own processes (servers, workers, cells),
drives them from outside, prints progress and ends with a summary table.

The demo ends with what still runs (the local services, and how to stop them), the consoles
there are to look at, and where to read next.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PARTS: list[tuple[str, Path]] = [
    ("Dispatcher: mock SaaS + D + simulated cell + S3", ROOT / "examples" / "dispatcher_demo.py"),
    ("Orbit: task service on SQLite with workers", ROOT / "examples" / "orbit_demo.py"),
]
READ_NEXT = [
    ("README.md", "Orbit in five minutes; the Dispatcher with the mock SaaS (step by step)"),
    ("docs/architecture.md", "the services, their packages and the direction of imports"),
    ("docs/orbit/README.md", "Orbit: the Task API, settings, workers, performance"),
    ("docs/dispatcher.md", "the Dispatcher: settings, console, status, readiness, metrics"),
    ("docs/contracts/", "the wire contracts, rule by rule"),
    ("docs/deploy.md", "installing on hosts: systemd units, TLS, backups, upgrades"),
]


def main() -> int:
    failures = 0
    for title, script in PARTS:
        print(f"\n=== {title} ===", flush=True)
        started = time.monotonic()
        code = subprocess.call([sys.executable, str(script)], cwd=ROOT)
        print(f"--- {title}: exit {code} in {time.monotonic() - started:.1f} s", flush=True)
        failures += code != 0
    epilogue()
    return 1 if failures else 0


def epilogue() -> None:
    print("\n=== What still runs ===", flush=True)
    subprocess.call([str(ROOT / "scripts" / "services"), "status"], cwd=ROOT)
    print("The demo's own processes have stopped. Stop the local services with: make services-stop")
    print("\n=== Consoles ===")
    print(
        "Orbit console: start Orbit (README.md, 'Orbit in five minutes'), then open "
        "http://127.0.0.1:7470/ui"
    )
    print("Orbit: http://127.0.0.1:7470/openapi.json and /metrics of a running `orbit serve`")
    print(
        "Dispatcher console: http://127.0.0.1:9470/ui of a running `dispatcher run` (README.md, "
        "'The Dispatcher with the mock SaaS'); `.venv/bin/dispatcher status`, /readyz and "
        "/metrics beside it"
    )
    print("\n=== Read next ===")
    for path, what in READ_NEXT:
        print(f"{path:<22} {what}")


if __name__ == "__main__":
    sys.exit(main())
