"""The results of a `make bench` run as markdown and JSON, and docs/benchmarks.md from them.

bench/run_all.py writes ``var/bench/results.json`` (:func:`results_json`) and
``var/bench/results.md`` (:func:`results_md`) after every run. The page of the repository,
docs/benchmarks.md, is the latest quiet run's table with the command that produced it; it is
written from a results file, never by hand:

    .venv/bin/python bench/benchmarks_page.py --write docs/benchmarks.md [--results PATH]

A run is the outputs of the benchmarks it ran (exit code, time, load average at the start of
each, what it printed) and the figures they recorded (bench/figures.py: value, baseline,
ratio, CPU per unit, target, load), with the date, the machine's cores, the load average at
the start of the run and the command. The figures table holds every recorded figure; the
benchmarks table holds, per benchmark, its ratio lines (a line that names "ratio",
"before/after" or "with/without") and target lines (a line that starts with "target"), so
that a benchmark that records no figure still shows its ratio. Below, the lines each
benchmark printed at the left margin (indented lines are progress).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.figures import Figure  # noqa: E402

RESULTS_JSON = HERE.parent / "var" / "bench" / "results.json"
FIGURES_HEADER = (
    "| benchmark | figure | value | baseline | ratio | CPU per unit | target | load at start |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
)
BENCHMARKS_HEADER = (
    "| benchmark | exit | seconds | load at start | ratio vs baseline | target |\n"
    "| --- | --- | --- | --- | --- | --- |"
)
RATIO = re.compile(r"\bratio\b|before/after|with/without", re.IGNORECASE)
TARGET = re.compile(r"^target\b", re.IGNORECASE)
MAX_FIGURE_LINES = 40

INTRO = """\
# Benchmarks

This page is the latest run of the benchmarks on a quiet machine, written by
`bench/benchmarks_page.py` from the results that run wrote (`var/bench/results.json`); do not
edit it by hand. Every benchmark measures a baseline in the same run on the same machine (a
bare driver loop, a bare relay, one call, the same server without the console, a peer such
as Celery, …) and prints the ratio to it: the ratio is the figure to compare between
machines and runs, since absolute rates on a shared machine move with its load (recorded at
the start of the run, of each benchmark and of each figure). What each benchmark measures,
its baseline and its target are in its module's docstring (`bench/<name>.py`).

Reproduce: `make bench` runs every benchmark with its defaults against the local services
(tens of minutes; run it alone on the machine) and writes `var/bench/results.md` and
`var/bench/results.json`; `make bench-anchors` runs the drains of Orbit, Celery and
Procrastinate side by side (`bench/anchors/`). One benchmark:
`eval "$(scripts/services env)" && .venv/bin/python bench/run_all.py --only orbit_submit`;
a benchmark's own options: `.venv/bin/python bench/<name>.py --help`. This page from a run:
`.venv/bin/python bench/benchmarks_page.py --write docs/benchmarks.md`.
"""


@dataclass(frozen=True)
class BenchOutput:
    """One benchmark of a run: its name (the module's stem), exit code, wall time, output."""

    name: str
    exit_code: int
    seconds: float
    output: str
    load: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class Run:
    """One run: when (UTC, `YYYY-MM-DD HH:MM`), where, how, its outputs and figures."""

    date: str
    cores: int
    load: tuple[float, float, float]
    command: str
    outputs: Sequence[BenchOutput]
    figures: Sequence[Figure] = field(default_factory=tuple)


def ratio_lines(output: str) -> list[str]:
    """The lines that give a ratio, a target line aside."""
    lines = (line.strip() for line in output.splitlines())
    return [line for line in lines if RATIO.search(line) and not TARGET.search(line)]


def target_lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if TARGET.search(line.strip())]


def figure_lines(output: str) -> list[str]:
    """The lines printed at the left margin (the last `MAX_FIGURE_LINES` of them)."""
    lines = [line.rstrip() for line in output.splitlines() if line[:1] not in ("", " ", "\t")]
    return lines[-MAX_FIGURE_LINES:]


def _cell(lines: Sequence[str]) -> str:
    text = "; ".join(" ".join(line.split()) for line in lines) or "—"
    return text.replace("|", "\\|")


def _load(load: Sequence[float] | None) -> str:
    return " ".join(f"{x:.2f}" for x in load) if load else "—"


def _number(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def figure_row(f: Figure) -> str:
    """One figure: value and unit, baseline (and what it is), ratio, CPU, target, load."""
    base = "—" if f.baseline is None else f"{_number(f.baseline)} {f.unit}"
    if f.baseline_name and f.baseline is not None:
        base += f" ({f.baseline_name})"
    ratio = "—" if f.ratio is None else f"{f.ratio:.2f}×"
    cpu = "—" if f.cpu_ms_per_unit is None else f"{f.cpu_ms_per_unit:.3g} ms per {f.per or 'unit'}"
    target = "—" if f.target is None else f.target
    if f.target is not None and f.met is not None:
        target += ": met" if f.met else ": not met"
    cells = [f.benchmark, f.name, f"{_number(f.value)} {f.unit}", base, ratio, cpu, target]
    return "| " + " | ".join(_cell([c]) for c in cells) + f" | {_load(f.load)} |"


def benchmark_row(out: BenchOutput) -> str:
    return (
        f"| {out.name} | {out.exit_code} | {out.seconds:.0f} | {_load(out.load)} "
        f"| {_cell(ratio_lines(out.output))} | {_cell(target_lines(out.output))} |"
    )


def _outputs(run: Run, heading: str) -> list[str]:
    parts: list[str] = []
    for out in run.outputs:
        state = "" if out.exit_code == 0 else f" (failed: exit code {out.exit_code})"
        body = "\n".join(figure_lines(out.output)) or "(no output)"
        parts += ["", f"{heading} {out.name}{state}", "", "```text", body, "```"]
    return parts


def results_md(run: Run, title: str = "Benchmark results", level: int = 1) -> str:
    """The run as markdown: how it ran, its figures, its benchmarks, what they printed."""
    h = "#" * (level + 1)
    parts = [
        f"{'#' * level} {title}",
        "",
        f"Run {run.date} UTC with `{run.command}` on {run.cores} cores, "
        f"load average at the start {_load(run.load)}.",
        "",
        f"{h} Figures",
        "",
        FIGURES_HEADER,
        *(figure_row(f) for f in run.figures),
        "",
        f"{h} Benchmarks",
        "",
        BENCHMARKS_HEADER,
        *(benchmark_row(out) for out in run.outputs),
        "",
        f"{h} Output",
        *_outputs(run, h + "#"),
    ]
    return "\n".join(parts) + "\n"


def page(run: Run) -> str:
    """docs/benchmarks.md for `run`: what the page is and how to reproduce it, then the run."""
    return INTRO + "\n" + results_md(run, "The latest run", level=2)


def results_json(run: Run) -> dict[str, Any]:
    return {
        "date": run.date,
        "cores": run.cores,
        "load": list(run.load),
        "command": run.command,
        "benchmarks": [
            {
                "name": o.name,
                "exit_code": o.exit_code,
                "seconds": round(o.seconds, 1),
                "load": list(o.load) if o.load else None,
                "ratio_lines": ratio_lines(o.output),
                "target_lines": target_lines(o.output),
                "output": o.output,
            }
            for o in run.outputs
        ],
        "figures": [f.to_json() for f in run.figures],
    }


def run_from_json(obj: dict[str, Any]) -> Run:
    outputs = [
        BenchOutput(
            b["name"],
            b["exit_code"],
            b["seconds"],
            b.get("output", ""),
            tuple(b["load"]) if b.get("load") else None,  # type: ignore[arg-type]
        )
        for b in obj["benchmarks"]
    ]
    figures = [Figure.from_json(f) for f in obj.get("figures", [])]
    load = (obj["load"][0], obj["load"][1], obj["load"][2])
    return Run(obj["date"], obj["cores"], load, obj["command"], outputs, figures)


def problems(text: str) -> list[str]:
    """What makes a page (or results.md) ill-formed: its run line, a table's shape."""
    found = []
    if not re.search(r"^Run \d{4}-\d\d-\d\d \d\d:\d\d UTC with `[^`]+` on \d+ cores", text, re.M):
        found.append("no line naming the run's date, command and cores")
    for header in (FIGURES_HEADER, BENCHMARKS_HEADER):
        if header not in text:
            found.append(f"no table headed {header.splitlines()[0]}")
            continue
        width = header.splitlines()[0].count(" | ")
        for line in text.split(header, 1)[1].lstrip("\n").splitlines():
            if not line.startswith("|"):
                break
            if len(line.split(" | ")) - 1 != width:
                found.append(f"a row of the wrong width: {line}")
    if text.count("```") % 2:
        found.append("an unclosed code block")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description="Write docs/benchmarks.md from a run's results")
    parser.add_argument("--write", type=Path, required=True, help="the page, docs/benchmarks.md")
    parser.add_argument("--results", type=Path, default=RESULTS_JSON, help="results.json")
    args = parser.parse_args()
    if not args.results.exists():
        raise SystemExit(f"no results at {args.results}: run `make bench` first")
    run = run_from_json(json.loads(args.results.read_text(encoding="utf-8")))
    text = page(run)
    if found := problems(text):
        raise SystemExit("the page would be ill-formed: " + "; ".join(found))
    args.write.write_text(text, encoding="utf-8")
    print(f"written: {args.write} (the run of {run.date} UTC, `{run.command}`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
