"""`make bench`: run every benchmark with its defaults, one after the other, and add the run to
docs/benchmarks.md.

Each benchmark prints its own figures and the ratio against a baseline measured in the
same run; this runner sequences them (every module of bench/ that runs as a script), echoes
their output, reports which failed, and then writes docs/benchmarks.md (bench/benchmarks_page.py):
one dated row per benchmark — the machine's cores and load average at the start, exit code,
time, ratio and target lines, the command — above the rows of earlier runs, and the figures
of this run.

    .venv/bin/python bench/run_all.py [--only NAME ...] [--page PATH] [--no-page]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.benchmarks_page import BenchOutput, Run, render  # noqa: E402

PAGE = HERE.parent / "docs" / "benchmarks.md"


def benchmarks(only: list[str]) -> list[Path]:
    """The modules of bench/ that run as scripts, this one aside; `only` names (stems) pick."""
    scripts = [
        path
        for path in sorted(HERE.glob("*.py"))
        if path.name != Path(__file__).name and 'if __name__ == "__main__":' in path.read_text()
    ]
    unknown = set(only) - {path.stem for path in scripts}
    if unknown:
        names = ", ".join(path.stem for path in scripts)
        raise SystemExit(f"no benchmark named {', '.join(sorted(unknown))} (there are: {names})")
    return [path for path in scripts if not only or path.stem in only]


def run_one(script: Path) -> BenchOutput:
    """Run one benchmark, echoing its output as it comes, and keep that output."""
    began = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, str(script)],
        cwd=HERE.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    return BenchOutput(script.stem, process.returncode, time.monotonic() - began, "".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="e.g. orbit_submit")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to write")
    parser.add_argument("--no-page", action="store_true", help="print only, write no page")
    args = parser.parse_args()
    scripts = benchmarks(args.only)
    load = os.getloadavg()
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    outputs = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        outputs.append(run_one(script))
    failed = [out.name for out in outputs if out.exit_code != 0]
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    if not args.no_page:
        command = (
            "make bench" if not args.only else f"bench/run_all.py --only {' '.join(args.only)}"
        )
        run = Run(date, os.cpu_count() or 0, (load[0], load[1], load[2]), command, outputs)
        previous = args.page.read_text(encoding="utf-8") if args.page.exists() else ""
        args.page.write_text(render(run, previous), encoding="utf-8")
        print(f"\nwritten: {args.page}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
