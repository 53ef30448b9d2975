"""What an open console costs: `orbit_submit.py` and `orbit_workers.py` run with the console
open and refreshing (`--console`) and without, interleaved (without, with, with, without, ...)
so that both see the same machine, then the figures side by side and their ratio.

    flock /tmp/agentcall-bench.lock .venv/bin/python bench/console_overhead.py --rounds 2
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RATE = re.compile(r"^orbit\s+\d+ (?:submits|tasks) in\s+[\d.]+ s =\s+([\d.]+)", re.MULTILINE)


def run_once(script: str, n: int, console: bool) -> float:
    command = [sys.executable, str(BENCH / script), "--n", str(n), *(["--console"] if console
                                                                       else [])]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = RATE.search(out)
    if found is None:
        raise SystemExit(f"{script}: no orbit line in\n{out}")
    refreshes = re.search(r"console .*: (\d+) page refreshes", out)
    seen = f", {refreshes.group(1)} console refreshes" if refreshes else ""
    print(f"  {script} {'with' if console else 'without'} console: {found.group(1)}/s{seen}",
          flush=True)  # fmt: skip
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--submit-n", type=int, default=5000)
    parser.add_argument("--workers-n", type=int, default=3000)
    args = parser.parse_args()
    for script, n in (("orbit_submit.py", args.submit_n), ("orbit_workers.py", args.workers_n)):
        rates: dict[bool, list[float]] = {False: [], True: []}
        for round_ in range(args.rounds):
            order = (False, True) if round_ % 2 == 0 else (True, False)
            for console in order:
                rates[console].append(run_once(script, n, console))
        without, with_ = statistics.mean(rates[False]), statistics.mean(rates[True])
        verdict = "within" if abs(with_ / without - 1) <= 0.1 else "NOT within"
        print(f"{script}: without console {without:.1f}/s, with console {with_:.1f}/s, "
              f"ratio {with_ / without:.3f} ({verdict} 10 %)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
