"""Benchmark: what tracing costs while it is off, against the code from before tracing.

Runs the submit benchmark (bench/orbit_submit.py) and the commands benchmark
(bench/dispatcher_commands.py) of two trees, this one with ORBIT_TRACING and
DISPATCHER_TRACING unset and the tree of `--before` (default: the commit before Orbit
tracing, which is before the Dispatcher's too), interleaved (this, before, before, this, ...)
so that the machine's load moves both alike. Each run is the tree's own benchmark with its
own code (`PYTHONPATH=<tree>/src`, started from the tree). Prints each run's throughput and
server CPU per unit (Orbit: `orbit serve` per submit; Dispatcher: the D per command, user +
system from /proc, which depends less on the machine's load than throughput), then the
median of each side and the ratio this/before. Target: tracing off within 3 % (CPU ratio
<= 1.03).

    .venv/bin/python bench/tracing_overhead.py [--rounds 3] [--only orbit|dispatcher]
        [--before REV | --old PATH] [--orbit-n 5000] [--dispatcher-n 2000]

The tree of `--before` is extracted with `git archive` into a temporary directory (removed
at the end); `--old PATH` uses a checkout already there instead (`git worktree add PATH REV`).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BEFORE = "0692099^"  # the parent of the commit that brought tracing (Orbit's, then the D's)
TARGET = 1.03


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    count: str  # the option of the number of units
    rate: re.Pattern[str]  # units/s
    cpu: re.Pattern[str]  # server CPU ms per unit


BENCHES = {
    "orbit": Bench(
        "orbit",
        "bench/orbit_submit.py",
        "--n",
        re.compile(r"^orbit\s+\d+ submits in .*= +([\d.]+) submits/s", re.M),
        re.compile(r"CPU per submit: client [\d.]+ ms, server ([\d.]+) ms"),
    ),
    "dispatcher": Bench(
        "dispatcher",
        "bench/dispatcher_commands.py",
        "--n",
        re.compile(r"^dispatcher\s+([\d,]+) commands/s", re.M),
        re.compile(r"CPU per command, D run .*?\bdispatcher ([\d.]+)"),
    ),
}
TRACING_ENV = ("ORBIT_TRACING", "ORBIT_WORKER_TRACING", "DISPATCHER_TRACING")


@dataclass(frozen=True)
class Figures:
    rate: float
    cpu_ms: float


def run(bench: Bench, tree: Path, n: int) -> Figures:
    """One run of `bench` with the code of `tree`, tracing unset."""
    env = {k: v for k, v in os.environ.items() if k not in TRACING_ENV}
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(tree / "src")
    command = [sys.executable, str(tree / bench.script), bench.count, str(n)]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    rates, cpus = bench.rate.findall(done.stdout), bench.cpu.findall(done.stdout)
    if done.returncode != 0 or not rates or not cpus:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SystemExit(f"{bench.script} in {tree} failed ({done.returncode}):\n{tail}")
    return Figures(float(rates[-1].replace(",", "")), float(cpus[-1]))  # the last: the server's


@contextmanager
def before_tree(rev: str, old: Path | None) -> Iterator[Path]:
    """The checkout of `rev` (or `old` when given)."""
    if old is not None:
        yield old
        return
    with tempfile.TemporaryDirectory(prefix="tracing-before-") as tmp:
        archive = Path(tmp) / "tree.tar"
        subprocess.run(
            ["git", "archive", "--format=tar", "-o", str(archive), rev], cwd=HERE, check=True
        )
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "tree", filter="data")
        yield Path(tmp) / "tree"


def compare(bench: Bench, old: Path, rounds: int, n: int) -> float:
    """Interleaved runs of both trees; prints them and the medians; the CPU ratio."""
    figures: dict[str, list[Figures]] = {"this": [], "before": []}
    trees = {"this": HERE, "before": old}
    for number in range(rounds):
        order = ("this", "before") if number % 2 == 0 else ("before", "this")
        for side in order:
            got = run(bench, trees[side], n)
            figures[side].append(got)
            print(
                f"{bench.name:10} round {number + 1} {side:6} {got.rate:9,.1f}/s  "
                f"server CPU {got.cpu_ms:.3f} ms per unit",
                flush=True,
            )
    rate = {side: statistics.median(f.rate for f in runs) for side, runs in figures.items()}
    cpu = {side: statistics.median(f.cpu_ms for f in runs) for side, runs in figures.items()}
    cpu_ratio = cpu["this"] / cpu["before"]
    print(
        f"{bench.name:10} median   this {rate['this']:,.1f}/s, {cpu['this']:.3f} ms; "
        f"before {rate['before']:,.1f}/s, {cpu['before']:.3f} ms"
    )
    print(
        f"ratio      {bench.name} tracing off / before tracing: throughput "
        f"{rate['this'] / rate['before']:.3f}, server CPU per unit {cpu_ratio:.3f}"
    )
    return cpu_ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tree")
    parser.add_argument("--only", choices=sorted(BENCHES), action="append")
    parser.add_argument("--before", default=BEFORE, help="the revision before tracing")
    parser.add_argument("--old", type=Path, help="a checkout of it already there")
    parser.add_argument("--orbit-n", type=int, default=5000, help="submits per run")
    parser.add_argument("--dispatcher-n", type=int, default=2000, help="commands per run")
    args = parser.parse_args()
    sizes = {"orbit": args.orbit_n, "dispatcher": args.dispatcher_n}
    print(f"cpus={os.cpu_count()} load average at start {os.getloadavg()}", flush=True)
    ratios = {}
    with before_tree(args.before, args.old) as old:
        for name in args.only or sorted(BENCHES):
            ratios[name] = compare(BENCHES[name], old, args.rounds, sizes[name])
    worst = max(ratios.values())
    verdict = "met" if worst <= TARGET else "NOT met"
    print(f"target    tracing off within 3 % of before (CPU ratio <= {TARGET}): {verdict}")


if __name__ == "__main__":
    main()
