"""Old against new in one session: a benchmark run on two (or more) trees, interleaved.

Each round runs the benchmark once per tree, in an order reversed every other round (A B,
then B A, ...) so that a load change on the machine during the session falls on both sides.
One tree's bench script (the harness, by default the new tree's) runs every time with
``PYTHONPATH=<tree>/src``: the product under test is the only thing that differs, and every
process the bench starts (``orbit serve``, workers, the Dispatcher) inherits it. Prints each
run's figures, then per figure the ratio new/old of every round and their median, min and
max: the throughput ratio above 1 and the CPU ratio below 1 mean new is better. CPU per
unit of work is read from /proc by the benches and moves less with the machine's load than
throughput does.

    .venv/bin/python bench/compare.py --old dbfd905 [--old 799fdc7 ...] [--new REV]
        [--bench orbit_submit|orbit_workers|orbit_fairness|dispatcher_commands] [--rounds 3]
        [--harness new|own] [--together] [-- bench arguments, e.g. --n 10000]

With ``--together`` the sides of a round run at the same time, each on its own database: the
machine's speed (a virtual machine's CPU share moves by a factor of two within minutes) then
changes for all of them alike, and their ratio is steadier; they share the cores and MariaDB,
so each side's absolute figures are lower than when it runs alone.

An old revision is exported once (``git archive``) to ``$TMPDIR/orbit-bench-trees/<commit>``;
without ``--new`` the new side is this working tree as it is, uncommitted changes included.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREES = Path(tempfile.gettempdir()) / "orbit-bench-trees"


@dataclass(frozen=True)
class Measure:
    """One figure read from a bench's output: the first group of `pattern` on a line."""

    name: str
    pattern: str
    higher_is_better: bool

    def read(self, output: str) -> float | None:
        found = re.search(self.pattern, output, re.MULTILINE)
        return float(found.group(1).replace(",", "")) if found else None


NUMBER = r"([\d,]+(?:\.\d+)?)"
MEASURES: dict[str, list[Measure]] = {
    "orbit_submit": [
        Measure("submits/s", rf"^orbit\s+\d+ submits in .*= *{NUMBER} submits/s", True),
        Measure(
            "server CPU ms/submit",
            rf"^orbit\s+\d+ submits.*\n.*CPU per submit: .*server {NUMBER} ms",
            False,
        ),
        Measure("p99 ms", rf"^orbit\s+\d+ submits.*p99 +{NUMBER} ms", False),
        Measure("baseline submits/s", rf"^baseline\s+\d+ submits in .*= *{NUMBER}", True),
    ],
    "orbit_workers": [
        Measure("drain tasks/s", rf"^drain\s+\d+ tasks in .*= *{NUMBER} tasks/s", True),
        Measure("drain server CPU ms/task", rf"drain CPU per task: server {NUMBER} ms", False),
        Measure("orbit tasks/s", rf"^orbit\s+\d+ tasks in .*= *{NUMBER} tasks/s", True),
        Measure("orbit server CPU ms/task", rf"orbit CPU per task: server {NUMBER} ms", False),
        Measure("idle dispatch p50 ms", rf"^idle\s+\d+ tasks.*dispatch p50 +{NUMBER}", False),
    ],
    "orbit_fairness": [
        Measure(
            "B..E p95 pickup fair/quiet", rf"^ratio\s+B\.\.E p95 pickup fair/quiet {NUMBER}", False
        ),
        Measure("throughput fair/fifo", rf"^ratio\s+throughput fair/fifo {NUMBER}", True),
        Measure("fair tasks/s", rf"^fair\s+\d+ tasks in .*= *{NUMBER} tasks/s", True),
        Measure("fifo tasks/s", rf"^fifo\s+\d+ tasks in .*= *{NUMBER} tasks/s", True),
    ],
    "dispatcher_commands": [
        Measure("commands/s", rf"^dispatcher\s+{NUMBER} commands/s", True),
        Measure("D CPU ms/command", rf"^CPU per command, D run.*?\bdispatcher\S* {NUMBER}", False),
        Measure("baseline commands/s", rf"^baseline \(bare relay\)\s+{NUMBER}", True),
        Measure("ratio D/baseline", rf"^ratio D/baseline\s+{NUMBER}", True),
        Measure("full-load commit p99 ms", rf"^delivery->decision commit.*p99={NUMBER}", False),
        Measure("paced p50 ms", rf"^latency under load .*p50={NUMBER}", False),
        Measure("paced p99 ms", rf"^latency under load .*p99={NUMBER}", False),
    ],
}


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def export(revision: str) -> Path:
    """The tree of `revision`, exported once under TREES (reused by later sessions)."""
    commit = git("rev-parse", "--verify", f"{revision}^{{commit}}")
    tree = TREES / commit
    if not (tree / "src").is_dir():
        partial = TREES / f".{commit}.partial"
        partial.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(
            ["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE
        )
        subprocess.run(["tar", "-x", "-C", str(partial)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"git archive {commit} failed")
        partial.rename(tree)
    return tree


@dataclass(frozen=True)
class Side:
    label: str
    tree: Path


@dataclass
class Run:
    """One bench run under way: `finish()` waits for it and returns its output and duration
    (a failed run prints its output and reads as no figures: the other runs still count)."""

    side: Side
    bench: str
    process: subprocess.Popen[str]
    began: float

    def finish(self) -> tuple[str, float]:
        output, _ = self.process.communicate()
        took = time.monotonic() - self.began
        if self.process.returncode != 0:
            tail = "\n".join(output.splitlines()[-20:])
            label = self.side.label
            print(f"{self.bench} on {label} exited {self.process.returncode}; last lines:\n{tail}")
            return "", took
        return output, took


def start_run(side: Side, harness: Path, bench: str, extra: list[str]) -> Run:
    """The bench with `side`'s product on its import path, started."""
    script = harness / "bench" / f"{bench}.py"
    env = {**os.environ, "PYTHONPATH": str(side.tree / "src")}
    process = subprocess.Popen(
        [sys.executable, str(script), *extra],
        cwd=harness,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    return Run(side, bench, process, time.monotonic())


def spread(ratios: list[float]) -> str:
    return f"median {statistics.median(ratios):.3f}  min {min(ratios):.3f}  max {max(ratios):.3f}"


def summary(
    measures: list[Measure],
    new: str,
    olds: list[str],
    runs: list[dict[str, dict[str, float | None]]],
) -> list[str]:
    """Per figure and old side: every round's ratio new/old, and their median, min, max."""
    lines = []
    for measure in measures:
        better = "higher" if measure.higher_is_better else "lower"
        lines.append(f"{measure.name} (new/old, {better} is better)")
        for old in olds:
            ratios = []
            for run in runs:
                mine, theirs = (
                    run.get(new, {}).get(measure.name),
                    run.get(old, {}).get(measure.name),
                )
                if mine is not None and theirs:
                    ratios.append(mine / theirs)
            if ratios:
                shown = " ".join(f"{ratio:.3f}" for ratio in ratios)
                lines.append(f"  vs {old:12} rounds {shown}  {spread(ratios)}")
    return lines


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", action="append", required=True, help="a revision (repeatable)")
    parser.add_argument("--new", help="a revision (default: this working tree as it is)")
    parser.add_argument("--bench", choices=sorted(MEASURES), default="orbit_submit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--harness",
        choices=("new", "own"),
        default="new",
        help="whose bench script runs: the new tree's for every side, or each side's own",
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="run every side at once in each round (each on its own database): a change "
        "of the machine's speed during a round then falls on all sides alike",
    )
    parser.add_argument("extra", nargs="*", help="arguments for the bench, after --")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    new = Side(args.new or "new", export(args.new) if args.new else REPO)
    sides = [new, *(Side(old, export(old)) for old in args.old)]
    measures = MEASURES[args.bench]
    print(f"{args.bench}: {args.rounds} rounds of {', '.join(s.label for s in sides)}", flush=True)
    runs: list[dict[str, dict[str, float | None]]] = []
    for number in range(args.rounds):
        order = sides if number % 2 == 0 else sides[::-1]
        figures: dict[str, dict[str, float | None]] = {}
        harness = {side.label: new.tree if args.harness == "new" else side.tree for side in order}
        if args.together:
            runs_now = [start_run(s, harness[s.label], args.bench, args.extra) for s in order]
            done = [run.finish() for run in runs_now]
        else:
            done = [start_run(s, harness[s.label], args.bench, args.extra).finish() for s in order]
        for side, (output, took) in zip(order, done, strict=True):
            figures[side.label] = {m.name: m.read(output) for m in measures}
            shown = "  ".join(f"{name} {value}" for name, value in figures[side.label].items())
            load = os.getloadavg()[0]
            print(f"round {number + 1} {side.label:12} {shown}  ({took:.0f} s, load {load:.1f})")
            sys.stdout.flush()
        runs.append(figures)
    print("\n".join(summary(measures, new.label, [s.label for s in sides[1:]], runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
