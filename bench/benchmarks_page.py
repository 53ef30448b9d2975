"""docs/benchmarks.md, written by `make bench` (bench/run_all.py): pure, results → markdown.

A run is the outputs of the benchmarks it ran, with the date, the machine's cores and load
average at the start, and the command. The page keeps one table row per benchmark per run,
newest first: the rows of earlier runs are read back from the page being replaced, so the
page is the history of the figures. Below the table, the figures of the latest run as the
benchmarks printed them.

What a row takes from a benchmark's output: its ratio lines (a line that names "ratio",
"before/after" or "with/without": each benchmark measures its own baseline in the same run)
and its target lines (a line that starts with "target"). The figures section keeps every line
the benchmark printed at the left margin (indented lines are progress).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

BEGIN = "<!-- runs: one row per benchmark per run, newest first; bench/run_all.py adds them -->"
END = "<!-- /runs -->"
HEADER = (
    "| date (UTC) | cores | load at start | benchmark | exit | seconds "
    "| ratio vs baseline | target | command |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)
RATIO = re.compile(r"\bratio\b|before/after|with/without", re.IGNORECASE)
TARGET = re.compile(r"^target\b", re.IGNORECASE)
MAX_FIGURE_LINES = 40

INTRO = """\
# Benchmarks

This page is written by `make bench` (`bench/run_all.py`); do not edit it by hand. Every
benchmark measures a baseline in the same run on the same machine (a bare driver loop, a bare
relay, one call, the same server without the console, …) and prints the ratio to it: the
ratio is the figure to compare between runs, since absolute rates on a shared machine move
with its load (recorded at the start of each run). What each benchmark measures, its
baseline and its target are in its module's docstring (`bench/<name>.py`).

Reproduce: `make bench` runs every benchmark with its defaults against the local services
(tens of minutes; run it alone on the machine). One benchmark:
`eval "$(scripts/services env)" && .venv/bin/python bench/run_all.py --only orbit_submit`
(the row is added here too); a benchmark's own options: `.venv/bin/python bench/<name>.py --help`.
"""


@dataclass(frozen=True)
class BenchOutput:
    """One benchmark of a run: its name (the module's stem), exit code, wall time, output."""

    name: str
    exit_code: int
    seconds: float
    output: str


@dataclass(frozen=True)
class Run:
    """One `make bench` run: when (UTC, `YYYY-MM-DD HH:MM`), where, how, and its outputs."""

    date: str
    cores: int
    load: tuple[float, float, float]
    command: str
    outputs: Sequence[BenchOutput]


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


def rows(run: Run) -> list[str]:
    """The table rows of a run, one per benchmark, in the order they ran."""
    load = " ".join(f"{x:.2f}" for x in run.load)
    return [
        f"| {run.date} | {run.cores} | {load} | {out.name} | {out.exit_code} "
        f"| {out.seconds:.0f} | {_cell(ratio_lines(out.output))} "
        f"| {_cell(target_lines(out.output))} | `{run.command}` |"
        for out in run.outputs
    ]


def previous_rows(page: str) -> list[str]:
    """The rows of the runs a page already holds (between its markers), in its order."""
    if BEGIN not in page or END not in page.split(BEGIN, 1)[1]:
        return []
    table = page.split(BEGIN, 1)[1].split(END, 1)[0]
    header = set(HEADER.splitlines())
    return [
        line
        for line in (raw.strip() for raw in table.splitlines())
        if line.startswith("|") and line not in header
    ]


def _figures(run: Run) -> list[str]:
    load = " ".join(f"{x:.2f}" for x in run.load)
    parts = [
        f"## Figures of the latest run, {run.date} UTC",
        "",
        f"`{run.command}` on {run.cores} cores, load average at the start {load}.",
    ]
    for out in run.outputs:
        state = "" if out.exit_code == 0 else f" (failed: exit code {out.exit_code})"
        body = "\n".join(figure_lines(out.output)) or "(no output)"
        parts += ["", f"### {out.name}{state}", "", "```text", body, "```"]
    return parts


def render(run: Run, page: str = "") -> str:
    """The page after `run`: its rows first, then the rows `page` held, then its figures."""
    table = [BEGIN, HEADER, *rows(run), *previous_rows(page), END]
    return "\n".join([INTRO, *table, "", *_figures(run)]) + "\n"
