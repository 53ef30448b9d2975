"""`make bench`: run every benchmark with its defaults, one after the other, and write the
run's results to var/bench/results.md and var/bench/results.json.

Each benchmark prints its own figures and the ratio against a baseline measured in the
same run, and records them (bench/figures.py: value, baseline, ratio, CPU per unit, target,
load); this runner sequences them (every module of bench/ that runs as a script, the page
writer aside), echoes their output, reports which failed, and writes the results
(bench/benchmarks_page.py): the machine's cores and load average at the start, per benchmark
its exit code, time, load at its start, ratio and target lines, and every recorded figure.
docs/benchmarks.md is written from those results by
`bench/benchmarks_page.py --write docs/benchmarks.md` (after a quiet run).

    .venv/bin/python bench/run_all.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import figures  # noqa: E402
from bench.benchmarks_page import BenchOutput, Run, problems, results_json, results_md  # noqa: E402

OUT = HERE.parent / "var" / "bench"
ANCHORS = HERE / "anchors" / "run.py"
# bench/compare.py runs benchmarks old against new; it is none itself
NOT_BENCHMARKS = {Path(__file__).name, "benchmarks_page.py", "compare.py"}


def benchmarks(only: list[str]) -> list[Path]:
    """The modules of bench/ that run as scripts, this one aside; `only` names (stems) pick.
    ``anchors`` (bench/anchors/run.py, which needs the anchors' virtual environment) runs
    only when named."""
    scripts = [
        path
        for path in sorted(HERE.glob("*.py"))
        if path.name not in NOT_BENCHMARKS and 'if __name__ == "__main__":' in path.read_text()
    ]
    named = {path.stem: path for path in scripts} | {"anchors": ANCHORS}
    unknown = set(only) - set(named)
    if unknown:
        names = ", ".join(named)
        raise SystemExit(f"no benchmark named {', '.join(sorted(unknown))} (there are: {names})")
    return [named[name] for name in only] if only else scripts


def run_one(script: Path, figures_file: Path) -> BenchOutput:
    """Run one benchmark, echoing its output as it comes, and keep that output; the figures
    it records go to `figures_file`."""
    load = os.getloadavg()
    began = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, str(script)],
        cwd=HERE.parent,
        env={**os.environ, figures.ENV: str(figures_file), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    seconds = time.monotonic() - began
    rounded = (round(load[0], 2), round(load[1], 2), round(load[2], 2))
    name = "anchors" if script == ANCHORS else script.stem
    return BenchOutput(name, process.returncode, seconds, "".join(lines), rounded)


def write_results(run: Run, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results_json(run), indent=1) + "\n")
    text = results_md(run)
    assert not problems(text), problems(text)
    (out / "results.md").write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="e.g. orbit_submit")
    parser.add_argument("--out", type=Path, default=OUT, help="where results.md/.json go")
    args = parser.parse_args()
    scripts = benchmarks(args.only)
    load = os.getloadavg()
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    args.out.mkdir(parents=True, exist_ok=True)
    figures_file = args.out / "figures.jsonl"
    figures_file.write_text("")
    outputs = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        outputs.append(run_one(script, figures_file))
    failed = [out.name for out in outputs if out.exit_code != 0]
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    command = "make bench" if not args.only else f"bench/run_all.py --only {' '.join(args.only)}"
    rounded = (round(load[0], 2), round(load[1], 2), round(load[2], 2))
    found = figures.read(figures_file)
    write_results(Run(date, os.cpu_count() or 0, rounded, command, outputs, found), args.out)
    print(
        f"\nwritten: {args.out / 'results.md'}, {args.out / 'results.json'} ({len(found)} figures)"
    )
    print(
        "the page from this run: "
        ".venv/bin/python bench/benchmarks_page.py --write docs/benchmarks.md"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
