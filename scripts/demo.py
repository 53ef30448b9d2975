"""`make demo`: run the demo of each service against the local real services.

Each part is a standalone script that starts its own processes (servers, workers, cells),
drives them from outside, prints progress and ends with a summary table. A part whose
script is not present yet is reported as such instead of failing the demo.
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


def main() -> int:
    failures = 0
    for title, script in PARTS:
        print(f"\n=== {title} ===", flush=True)
        if not script.exists():
            print(f"(not available yet: {script.relative_to(ROOT)})")
            continue
        started = time.monotonic()
        code = subprocess.call([sys.executable, str(script)], cwd=ROOT)
        print(f"--- {title}: exit {code} in {time.monotonic() - started:.1f} s", flush=True)
        failures += code != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
