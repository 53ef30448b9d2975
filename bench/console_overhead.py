"""What an open console costs: `orbit_submit.py` and `orbit_workers.py` run with the console
open and refreshing (`--console`) and without, interleaved (without, with, with, without, ...)
so that both see the same machine, then the figures side by side: throughput and the server's
CPU per submit or task (the steadier figure when other work loads the machine). Each run takes
the machine-wide bench lock.

    .venv/bin/python bench/console_overhead.py --rounds 2
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
LOCK = "/tmp/agentcall-bench.lock"
RATE = re.compile(r"^orbit\s+\d+ (?:submits|tasks) in\s+[\d.]+ s =\s+([\d.]+)", re.MULTILINE)
CPU = re.compile(r"^\s+(?:orbit )?CPU per (?:submit|task): (?:client [\d.]+ ms, )?"
                 r"server ([\d.]+) ms", re.MULTILINE)  # fmt: skip


def run_once(script: str, n: int, console: bool) -> tuple[float, float]:
    command = ["flock", LOCK, sys.executable, str(BENCH / script), "--n", str(n),
               *(["--console"] if console else [])]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rate, cpu = RATE.search(out), CPU.findall(out)
    if rate is None or not cpu:
        raise SystemExit(f"{script}: no orbit figures in\n{out}")
    refreshes = re.search(r"console .*: (\d+) page refreshes", out)
    seen = f", {refreshes.group(1)} console refreshes" if refreshes else ""
    print(f"  {script} {'with' if console else 'without'} console: {rate.group(1)}/s, server "
          f"CPU {cpu[-1]} ms each{seen}", flush=True)  # fmt: skip
    return float(rate.group(1)), float(cpu[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--submit-n", type=int, default=5000)
    parser.add_argument("--workers-n", type=int, default=3000)
    parser.add_argument("--only", choices=["orbit_submit.py", "orbit_workers.py"])
    args = parser.parse_args()
    for script, n in (("orbit_submit.py", args.submit_n), ("orbit_workers.py", args.workers_n)):
        if args.only not in (None, script):
            continue
        runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for round_ in range(args.rounds):
            order = (False, True) if round_ % 2 == 0 else (True, False)
            for console in order:
                runs[console].append(run_once(script, n, console))
        for index, what in ((0, "throughput /s"), (1, "server CPU ms each")):
            without = statistics.mean(r[index] for r in runs[False])
            with_ = statistics.mean(r[index] for r in runs[True])
            verdict = "within" if abs(with_ / without - 1) <= 0.1 else "NOT within"
            print(f"{script} {what}: without console {without:.2f}, with console {with_:.2f}, "
                  f"ratio {with_ / without:.3f} ({verdict} 10 %)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
