"""`make demo`: run the demo of each service against the local real services.

Each part is a standalone script that starts its own processes (servers, workers, cells),
drives them from outside, prints progress and ends with a summary table. A part whose
script is not present yet is reported as such instead of failing the demo.

The demo ends with what still runs (the local services, and how to stop them), the consoles
there are to look at, and where to read next.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

PARTS: list[tuple[str, Path]] = [
    ("Dispatcher: mock SaaS + D + simulated cell + S3", ROOT / "examples" / "dispatcher_demo.py"),
    ("Orbit: task service on SQLite with workers", ROOT / "examples" / "orbit_demo.py"),
]
READ_NEXT = [
    ("README.md", "Orbit in five minutes; the Dispatcher with the mock SaaS (step by step)"),
    ("docs/architecture.md", "the services, their packages and the direction of imports"),
    ("docs/orbit/README.md", "Orbit: the Task API, settings, workers, performance"),
    ("docs/dispatcher.md", "the Dispatcher: settings, status, metrics"),
    ("docs/contracts/", "the wire contracts, rule by rule"),
    ("docs/deploy.md", "installing on hosts: systemd units, TLS, backups, upgrades"),
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
    epilogue()
    return 1 if failures else 0


def epilogue() -> None:
    print("\n=== What still runs ===", flush=True)
    subprocess.call([str(ROOT / "scripts" / "services"), "status"], cwd=ROOT)
    print("The demo's own processes have stopped. Stop the local services with: "
          "make services-stop")  # fmt: skip
    print("\n=== Consoles ===")
    if orbit_has_console():
        print("Orbit console: start Orbit (README.md, 'Orbit in five minutes'), then open "
              "http://127.0.0.1:7470/ui")  # fmt: skip
    print("Orbit: http://127.0.0.1:7470/openapi.json and /metrics of a running `orbit serve`")
    print("Dispatcher: `.venv/bin/dispatcher status` (and http://127.0.0.1:9470/status, "
          "/metrics) of a running `dispatcher run`")  # fmt: skip
    print("\n=== Read next ===")
    for path, what in READ_NEXT:
        print(f"{path:<22} {what}")


def orbit_has_console() -> bool:
    """Whether this Orbit answers GET /ui: asked of a short-lived server on a scratch
    database (about two seconds)."""
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, ORBIT_DATABASE_URL=f"sqlite+aiosqlite:///{work}/probe.db",
                   ORBIT_LOG_FORMAT="json")  # fmt: skip
        orbit = str(BIN / "orbit")
        if subprocess.call([orbit, "migrate"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) != 0:  # fmt: skip
            return False
        port = _free_port()
        with _running([orbit, "serve", "--port", str(port)], env) as server:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and server.poll() is None:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).is_success:
                        ui = httpx.get(f"http://127.0.0.1:{port}/ui", timeout=5)
                        return ui.status_code < 400  # the sign-in page or a redirect to it
                time.sleep(0.2)
    return False


@contextlib.contextmanager
def _running(argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    sys.exit(main())
